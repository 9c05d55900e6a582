import type { Metadata, ServerInterceptingCall } from '@grpc/grpc-js';

/** A status as a server sends it (grpc-js' `PartialStatusObject`). */
export type PartialStatusObject = Parameters<ServerInterceptingCall['sendStatus']>[0];

import type { Limiter, Outcome, PartitionedLimiter } from 'limits-core';
import { checkFunction, checkKeys, checkString, formatValue } from 'limits-core/internal';

/** Options of {@link loadShedGrpc}. */
export interface LoadShedGrpcOptions {
  /**
   * Where a call takes its permit: one `Limiter` for every method; a `PartitionedLimiter`, one
   * partition per call chosen by `partition`; or a function of the method's path
   * (`/package.Service/Method`) and the call's metadata, whose `undefined` lets the call through
   * unlimited (e.g. to shed one service only). A function is called for every call: return the same
   * limiter for the same method.
   */
  limiter:
    | Limiter
    | PartitionedLimiter
    | ((method: string, metadata: Metadata) => Limiter | undefined);
  /**
   * With a `PartitionedLimiter`: the partition of a call from its method's path and metadata. A name
   * that is not a partition of the limiter (or anything but a string) goes to `fallbackPartition`.
   * @default the method's path: `/package.Service/Method`
   */
  partition?: (method: string, metadata: Metadata) => string | undefined;
  /**
   * With a `PartitionedLimiter`: the partition of calls whose name is unknown; must be one of its
   * partitions.
   * @default 'default'
   */
  fallbackPartition?: string;
  /**
   * The metadata key carrying the call's criticality (read with limits-core's `parseCriticality`:
   * `critical_plus`, `critical`, `sheddable_plus`, `sheddable`; anything else is the default,
   * `critical`), for a limiter with `shedding`; `false` turns it off. A lowercase key.
   * @default 'x-criticality'
   */
  criticalityKey?: string | false;
  /**
   * How a call whose handler sent `status` counts; `undefined` (or a throw, or anything but an
   * outcome) falls back to `classifyStatus`. A call the client cancelled is `ignore`, and one whose
   * deadline passed before its status was sent is `dropped`: neither is asked about.
   * @default classifyStatus (by status code)
   */
  classify?: (status: PartialStatusObject, method: string) => Outcome | undefined;
}

/** @internal {@link LoadShedGrpcOptions}, checked. */
export interface ServerConfig {
  readonly limiter: Limiter | undefined;
  readonly limiterOf: ((method: string, metadata: Metadata) => Limiter | undefined) | undefined;
  readonly partitioned: PartitionedLimiter | undefined;
  readonly partition: LoadShedGrpcOptions['partition'];
  readonly fallbackPartition: string;
  readonly criticalityKey: string | undefined;
  readonly classify: LoadShedGrpcOptions['classify'];
}

const KEYS = ['limiter', 'partition', 'fallbackPartition', 'criticalityKey', 'classify'] as const;

function isLimiter(value: object): value is Limiter {
  return typeof (value as Limiter).acquireWith === 'function';
}

function isPartitioned(value: object): value is PartitionedLimiter {
  const p = value as PartitionedLimiter;
  return typeof p.partition === 'function' && typeof p.ledger === 'function';
}

const METADATA_KEY = /^[0-9a-z_.-]{1,64}$/;

/**
 * @internal Checks every option of {@link loadShedGrpc} before anything is built.
 * @throws TypeError/RangeError naming the option.
 */
export function resolveServerOptions(options: LoadShedGrpcOptions): ServerConfig {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      `limits: loadShedGrpc options must be an object with "limiter", got ${formatValue(options)}`,
    );
  }
  checkKeys('loadShedGrpc', options, KEYS);
  const source = options.limiter as unknown;
  const isFunction = typeof source === 'function';
  if (
    !isFunction &&
    (source === null || typeof source !== 'object' || !(isLimiter(source) || isPartitioned(source)))
  ) {
    throw new TypeError(
      `limits: option "limiter" must be a Limiter, a PartitionedLimiter or a function (method, metadata) => Limiter | undefined, got ${formatValue(source)}`,
    );
  }
  const partitioned =
    isFunction || isLimiter(source as object) ? undefined : (source as PartitionedLimiter);
  const partition = checkFunction<LoadShedGrpcOptions['partition']>('partition', options.partition);
  const fallback = checkString('fallbackPartition', options.fallbackPartition);
  if (partitioned === undefined && (partition !== undefined || fallback !== undefined)) {
    throw new TypeError(
      `limits: option "${partition === undefined ? 'fallbackPartition' : 'partition'}" needs a PartitionedLimiter as "limiter"`,
    );
  }
  const fallbackPartition = fallback ?? 'default';
  if (partitioned !== undefined) {
    const names = Object.keys(partitioned.ledger().partitions);
    if (!names.includes(fallbackPartition)) {
      throw new RangeError(
        `limits: option "fallbackPartition" must name a partition of "limiter" (${names.join(', ')}), got ${formatValue(fallbackPartition)}${fallback === undefined ? ' (the default)' : ''}`,
      );
    }
  }
  const key = options.criticalityKey as unknown;
  let criticalityKey: string | undefined = 'x-criticality';
  if (key === false) criticalityKey = undefined;
  else if (key !== undefined) {
    if (typeof key !== 'string' || !METADATA_KEY.test(key) || key.endsWith('-bin')) {
      throw new RangeError(
        `limits: option "criticalityKey" must be false or a lowercase metadata key (0-9 a-z _ . -, 1 to 64 characters, not "-bin"), got ${formatValue(key)}`,
      );
    }
    criticalityKey = key;
  }
  return {
    limiter: !isFunction && partitioned === undefined ? (source as Limiter) : undefined,
    limiterOf: isFunction ? (source as ServerConfig['limiterOf']) : undefined,
    partitioned,
    partition,
    fallbackPartition,
    criticalityKey,
    classify: checkFunction<LoadShedGrpcOptions['classify']>('classify', options.classify),
  };
}
