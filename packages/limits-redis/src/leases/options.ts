import { type Clock, systemClock } from 'limits-core';
import {
  checkClock,
  checkKeys,
  checkNumber,
  checkOneOf,
  checkSignal,
  checkString,
  formatValue,
} from 'limits-core/internal';
import type { RedisClient } from './RedisClient.js';

/**
 * What a pool does when Redis fails, is not connected or does not answer within `timeoutMs`:
 * `'open'` lets the call through, `'closed'` refuses it (the same words as `RedisQuotaStore`).
 */
export type FailurePolicy = 'open' | 'closed';

/**
 * Options of {@link RedisLeasePool}. Every option is checked at construction: an unknown
 * key is a TypeError naming the nearest valid one, a wrong type a TypeError, a value out of range a
 * RangeError. Every instance sharing a pool `name` should use the same `limit` and `leaseTtlMs`.
 */
export interface RedisLeasePoolOptions {
  /** The pool's name: every instance using the same name shares one cap. A non-empty string. Required. */
  name: string;
  /** Units that may be in flight across the fleet, an integer ≥ 1. Required. */
  limit: number;
  /**
   * When Redis fails, is not connected or does not answer within `timeoutMs`: `'open'` lets the call
   * through with an unbacked lease (only the local limits protect the downstream), `'closed'` rejects
   * it with {@link RedisUnavailableError}. Required: neither is a safe default for every service.
   */
  onFailure: FailurePolicy;
  /**
   * How long a lease lives without renewal, in ms (Redis time), an integer ≥ 10. A holder that
   * crashes frees its leases after this long; a live holder renews its leases automatically.
   * @default 10000
   */
  leaseTtlMs?: number;
  /**
   * How often held leases are renewed (one script call for all of this instance's leases), in ms,
   * > 0 and < `leaseTtlMs`.
   * @default leaseTtlMs / 3
   */
  renewEveryMs?: number;
  /** Longest time one Redis call may take before `onFailure` applies, in ms, > 0. @default 200 */
  timeoutMs?: number;
  /**
   * Default time an `acquire` waits for a lease when the pool is full, in ms, ≥ 0 or `Infinity`;
   * 0 refuses at once (reason `at_limit`).
   * @default 0
   */
  maxWaitMs?: number;
  /**
   * While callers wait, they are woken by a pub/sub message on each release; in case one is lost,
   * the first waiter also retries every `pollMs` ms, > 0.
   * @default 1000
   */
  pollMs?: number;
  /**
   * Prefix of the pool's Redis keys and channel (`<prefix>:{<name>}:leases`), non-empty, no `{` or
   * `}` (the name is the hash tag).
   * @default 'limits:pool'
   */
  prefix?: string;
  /** Time source and timers for timeouts, waits and renewals. @default the system clock */
  clock?: Clock;
}

/** Options of {@link RedisLeasePool.acquire} and `run`. */
export interface LeaseAcquireOptions {
  /** Aborts the wait (and the Redis call): the acquire rejects at once with reason `aborted`. */
  signal?: AbortSignal | undefined;
  /** Units the lease takes, an integer ≥ 1 (≤ `limit`, else reason `too_large`). @default 1 */
  cost?: number | undefined;
  /** How long to wait for a lease when the pool is full, in ms, ≥ 0 or `Infinity`. @default the pool's `maxWaitMs` */
  maxWaitMs?: number | undefined;
  /** Longest time each Redis call of this acquire may take, in ms, > 0. @default the pool's `timeoutMs` */
  timeoutMs?: number | undefined;
}

const OPTION_KEYS = [
  'name',
  'limit',
  'onFailure',
  'leaseTtlMs',
  'renewEveryMs',
  'timeoutMs',
  'maxWaitMs',
  'pollMs',
  'prefix',
  'clock',
];
const ACQUIRE_KEYS = ['signal', 'cost', 'maxWaitMs', 'timeoutMs'];
const POLICIES: readonly FailurePolicy[] = ['open', 'closed'];

/** @internal Options after checks and defaults. */
export interface ResolvedLeasePoolOptions {
  redis: RedisClient;
  name: string;
  limit: number;
  onFailure: FailurePolicy;
  leaseTtlMs: number;
  renewEveryMs: number;
  timeoutMs: number;
  maxWaitMs: number;
  pollMs: number;
  prefix: string;
  clock: Clock;
}

const WHERE = 'RedisLeasePool';

/** @internal Checks every option (before anything is built). */
export function resolveLeasePoolOptions(
  redis: unknown,
  options: unknown,
): ResolvedLeasePoolOptions {
  if (
    redis === null ||
    typeof redis !== 'object' ||
    typeof (redis as RedisClient).evalsha !== 'function' ||
    typeof (redis as RedisClient).eval !== 'function' ||
    typeof (redis as RedisClient).duplicate !== 'function'
  ) {
    throw new TypeError(
      `limits: ${WHERE} needs an ioredis client (with evalsha, eval and duplicate), got ${formatValue(redis)}`,
    );
  }
  if (options === undefined) {
    throw new TypeError(`limits: ${WHERE} needs options { name, limit, onFailure }`);
  }
  checkKeys(WHERE, options, OPTION_KEYS);
  const o = options as Partial<RedisLeasePoolOptions>;
  const name = checkString('name', o.name);
  if (name === undefined || name === '') {
    throw new (name === undefined ? TypeError : RangeError)(
      `limits: option "name" must be a non-empty string, got ${formatValue(o.name)}`,
    );
  }
  try {
    encodeURIComponent(name); // the key encoding refuses a lone surrogate
  } catch {
    throw new TypeError(
      `limits: option "name" must be a well-formed string (no lone surrogate), got ${formatValue(name)}`,
    );
  }
  if (o.limit === undefined) {
    throw new TypeError('limits: option "limit" is required: an integer ≥ 1, the fleet-wide cap');
  }
  const limit = checkNumber('limit', o.limit, 0, { min: 1, integer: true });
  if (o.onFailure === undefined) {
    throw new TypeError(
      'limits: option "onFailure" is required: "open" (calls pass while Redis is unreachable, held by local limits only) or "closed" (they are refused)',
    );
  }
  const onFailure = checkOneOf('onFailure', o.onFailure, 'closed', POLICIES);
  const leaseTtlMs = checkNumber('leaseTtlMs', o.leaseTtlMs, 10_000, { min: 10, integer: true });
  const renewEveryMs = checkNumber('renewEveryMs', o.renewEveryMs, leaseTtlMs / 3, {
    min: 0,
    minExclusive: true,
  });
  if (renewEveryMs >= leaseTtlMs) {
    throw new RangeError(
      `limits: option "renewEveryMs" must be < "leaseTtlMs" (${leaseTtlMs}), got ${renewEveryMs}`,
    );
  }
  const timeoutMs = checkNumber('timeoutMs', o.timeoutMs, 200, { min: 0, minExclusive: true });
  const maxWaitMs = checkNumber('maxWaitMs', o.maxWaitMs, 0, { min: 0, allowInfinity: true });
  const pollMs = checkNumber('pollMs', o.pollMs, 1000, { min: 0, minExclusive: true });
  const prefix = checkString('prefix', o.prefix) ?? 'limits:pool';
  if (prefix === '' || /[{}]/.test(prefix)) {
    throw new RangeError(
      `limits: option "prefix" must be a non-empty string without "{" or "}", got ${formatValue(prefix)}`,
    );
  }
  const clock = checkClock('clock', o.clock) ?? systemClock;
  return {
    redis: redis as RedisClient,
    name,
    limit,
    onFailure,
    leaseTtlMs,
    renewEveryMs,
    timeoutMs,
    maxWaitMs,
    pollMs,
    prefix,
    clock,
  };
}

/** @internal One acquire's options after checks. */
export interface ResolvedAcquire {
  signal: AbortSignal | undefined;
  cost: number;
  maxWaitMs: number;
  timeoutMs: number;
}

/** @internal Checks an acquire's options; throws before anything changes. */
export function resolveAcquire(
  options: LeaseAcquireOptions | undefined,
  defaults: ResolvedLeasePoolOptions,
): ResolvedAcquire {
  if (options === undefined) {
    return {
      signal: undefined,
      cost: 1,
      maxWaitMs: defaults.maxWaitMs,
      timeoutMs: defaults.timeoutMs,
    };
  }
  checkKeys('acquire', options, ACQUIRE_KEYS);
  return {
    signal: checkSignal('signal', options.signal),
    cost: checkNumber('cost', options.cost, 1, { min: 1, integer: true }),
    maxWaitMs: checkNumber('maxWaitMs', options.maxWaitMs, defaults.maxWaitMs, {
      min: 0,
      allowInfinity: true,
    }),
    timeoutMs: checkNumber('timeoutMs', options.timeoutMs, defaults.timeoutMs, {
      min: 0,
      minExclusive: true,
    }),
  };
}
