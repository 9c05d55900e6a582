import type { StatusObject } from '@grpc/grpc-js';
import { CRITICALITIES, type Criticality, type Limiter, type Outcome } from 'limits-core';
import { checkFunction, checkKeys, checkOneOf, formatValue } from 'limits-core/internal';
import { type GrpcGuard, isGrpcGuard } from './grpcGuard.js';

/** Options of {@link limitGrpcClient}: exactly one of `limiter` and `guard`. */
export interface LimitGrpcClientOptions {
  /**
   * The limiter every call takes its permit from, or one chosen per call from the method's path
   * (`/package.Service/Method`), e.g. `(method) => partitioned.partition(serviceOf(method))`;
   * `undefined` lets the call through unlimited. Called for every call: return the same limiter for
   * the same method.
   */
  limiter?: Limiter | ((method: string) => Limiter | undefined);
  /**
   * A limits-breaker circuit breaker over a limiter, built by {@link grpcGuard}: the guard admits
   * the call (an open circuit answers `UNAVAILABLE`) and counts its outcome.
   */
  guard?: GrpcGuard;
  /**
   * How a call that ended with `status` counts; `undefined` (or a throw, or anything but an
   * outcome) falls back to {@link classifyStatus}. A call the caller cancelled is `ignore` and is
   * not asked about.
   * @default classifyStatus (by status code)
   */
  classify?: (status: StatusObject, method: string) => Outcome | undefined;
  /**
   * How much the call matters to a limiter with `shedding`: one level for every call, or a
   * function of the method's path (`undefined`: the limiter's default, `critical`).
   * @default 'critical'
   */
  criticality?: Criticality | ((method: string) => Criticality | undefined);
}

/** @internal {@link LimitGrpcClientOptions}, checked. */
export interface ClientConfig {
  readonly limiter: Limiter | ((method: string) => Limiter | undefined) | undefined;
  readonly guard: GrpcGuard | undefined;
  readonly classify: LimitGrpcClientOptions['classify'];
  readonly criticality: ((method: string) => Criticality | undefined) | undefined;
}

const KEYS = ['limiter', 'guard', 'classify', 'criticality'] as const;

/**
 * @internal Checks every option of {@link limitGrpcClient} before anything is built.
 * @throws TypeError/RangeError naming the option.
 */
export function resolveClientOptions(options: LimitGrpcClientOptions): ClientConfig {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      `limits: limitGrpcClient options must be an object with "limiter" or "guard", got ${formatValue(options)}`,
    );
  }
  checkKeys('limitGrpcClient', options, KEYS);
  const { limiter, guard } = options as { limiter?: unknown; guard?: unknown };
  if ((limiter === undefined) === (guard === undefined)) {
    throw new TypeError(
      'limits: limitGrpcClient needs exactly one of options "limiter" and "guard"',
    );
  }
  if (
    limiter !== undefined &&
    typeof limiter !== 'function' &&
    (limiter === null ||
      typeof limiter !== 'object' ||
      typeof (limiter as Limiter).acquireWith !== 'function')
  ) {
    throw new TypeError(
      `limits: option "limiter" must be a Limiter or a function (method) => Limiter | undefined, got ${formatValue(limiter)}`,
    );
  }
  if (guard !== undefined && !isGrpcGuard(guard)) {
    throw new TypeError(
      `limits: option "guard" must be a guard built by grpcGuard(guard, options), got ${formatValue(guard)}`,
    );
  }
  const classify = checkFunction<LimitGrpcClientOptions['classify']>('classify', options.classify);
  const given = options.criticality as unknown;
  let criticality: ClientConfig['criticality'];
  if (typeof given === 'function') {
    criticality = given as (method: string) => Criticality | undefined;
  } else if (given !== undefined) {
    const level = checkOneOf<Criticality>('criticality', given, 'critical', CRITICALITIES);
    criticality = () => level;
  }
  return {
    limiter: limiter as ClientConfig['limiter'],
    guard: guard as GrpcGuard | undefined,
    classify,
    criticality,
  };
}
