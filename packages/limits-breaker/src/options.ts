/**
 * The checks of `guard()`'s options and arguments. Every option check of limits' message shape comes
 * from limits-core's validators, imported here and nowhere else in this package.
 */
import {
  type AcquireOptions,
  type Classify,
  type Clock,
  Limiter,
  type LimiterOptions,
  OUTCOMES,
  type Outcome,
  VegasLimit,
} from 'limits-core';
import {
  acquireOptionNames,
  checkAcquireOptions,
  checkBoolean,
  checkClock,
  checkFunction,
  checkKeys,
  checkNumber,
  checkObject,
  checkOneOf,
  checkString,
  formatValue,
} from 'limits-core/internal';
import type { FallbackFunction } from './Fallback.js';
import type { OpossumConstructor } from './opossum.js';

/** Every option of `guard()` (GuardOptions and the OpossumOptions it extends). */
const GUARD_KEYS = [
  'limiter',
  'probeSlots',
  'timeoutMs',
  'fallback',
  'classify',
  'acquire',
  'latencyWindowMs',
  'latencyBuckets',
  'clock',
  'CircuitBreaker',
  'errorThresholdPercentage',
  'resetTimeout',
  'rollingCountTimeout',
  'rollingCountBuckets',
  'volumeThreshold',
  'allowWarmUp',
  'name',
] as const;

/** The names of the `acquire` option's keys in messages (`acquire.timeoutMs`). */
const ACQUIRE_NAMES = acquireOptionNames('acquire.');

/**
 * Options of `guard()` that were renamed, with their new name (refused with a message naming it;
 * opossum's own `timeout` is the guard's `timeoutMs`).
 */
const RENAMED: Record<string, string> = {
  limit:
    'limiter" (a Limiter to share, or the options of the guard\'s own limiter, e.g. { limiter: { algorithm: new GradientLimit() } })',
  timeout:
    'timeoutMs" (a time limit in ms counted from fire(): the wait for a permit and the action, e.g. { timeoutMs: 2000 }, or false)',
};

/** opossum options the guard does not take, with what to use instead. */
const OPOSSUM_ONLY: Record<string, string> = {
  capacity:
    'the limiter bounds concurrency: use "limiter" (a Limiter, or its options, e.g. { limiter: { limit: 10 } })',
  errorFilter: 'use "classify" (return "ignore" for an error that says nothing about health)',
  abortController: "each call has its own signal: the action's ctx.signal",
  autoRenewAbortController: "each call has its own signal: the action's ctx.signal",
  rollingPercentilesEnabled: 'the guard keeps latency percentiles itself: stats().latency',
  enableSnapshots: 'read stats() when you need counts',
  rotateBucketController: 'not supported by guard()',
  cache: 'not supported by guard()',
  cacheTTL: 'not supported by guard()',
  cacheGetKey: 'not supported by guard()',
  cacheTransport: 'not supported by guard()',
  coalesce: 'not supported by guard()',
  coalesceTTL: 'not supported by guard()',
  coalesceResetOn: 'not supported by guard()',
  coalesceSize: 'not supported by guard()',
  errorThresholdPercentageThreshold: 'use "errorThresholdPercentage"',
};

/** Largest delay Node's timers take (opossum arms `setTimeout(resetTimeout)` and a bucket interval). */
const MAX_TIMER_MS = 2_147_483_647;
/** Most latency histograms (about 14 KB each) a guard may keep. */
const MAX_LATENCY_BUCKETS = 1_000;

/** The guard's options, checked, with defaults applied (what the constructor needs). */
export interface CheckedOptions {
  probeSlots: number;
  timeoutMs: number | false;
  fallback: FallbackFunction | undefined;
  classify: Classify | undefined;
  acquire: AcquireOptions | ((...args: never[]) => AcquireOptions | undefined) | undefined;
  latencyWindowMs: number;
  latencyBuckets: number;
  clock: Clock | undefined;
  /** A limiter to share, or `undefined` for the guard's own. */
  limiter: Limiter | undefined;
  /** The options of the guard's own limiter. */
  ownLimiter: LimiterOptions | undefined;
  CircuitBreaker: OpossumConstructor | undefined;
  errorThresholdPercentage: number;
  resetTimeout: number;
  rollingCountTimeout: number;
  rollingCountBuckets: number;
  volumeThreshold: number;
  allowWarmUp: boolean;
  name: string | undefined;
}

/**
 * Checks every option of `guard()` before anything is built: unknown keys are refused with
 * the nearest valid name, a wrong type is a TypeError, a value out of range a RangeError, each with
 * limits' one message shape.
 */
export function checkGuardOptions(options: unknown): CheckedOptions {
  if (options !== null && typeof options === 'object' && !Array.isArray(options)) {
    for (const key in options) {
      const renamed = RENAMED[key];
      if (renamed !== undefined) {
        throw new TypeError(`limits: option "${key}" of guard() was renamed "${renamed}`);
      }
      const hint = OPOSSUM_ONLY[key];
      if (hint !== undefined && !(GUARD_KEYS as readonly string[]).includes(key)) {
        throw new TypeError(`limits: option "${key}" of opossum is not taken by guard(); ${hint}`);
      }
    }
  }
  checkKeys('guard', options, GUARD_KEYS);
  const o = (options ?? {}) as Record<string, unknown>;
  const probeSlots = checkNumber('probeSlots', o.probeSlots, 1, { min: 1, integer: true });
  const timeoutMs = checkTimeoutMs(o.timeoutMs);
  const fallback = checkFunction<CheckedOptions['fallback']>('fallback', o.fallback);
  const classify = checkFunction<CheckedOptions['classify']>('classify', o.classify);
  const acquire = checkAcquire(o.acquire);
  const latencyWindowMs = checkNumber('latencyWindowMs', o.latencyWindowMs, 60_000, {
    min: 0,
    minExclusive: true,
  });
  const latencyBuckets = checkNumber('latencyBuckets', o.latencyBuckets, 6, {
    min: 1,
    max: MAX_LATENCY_BUCKETS,
    integer: true,
  });
  const clock = checkClock('clock', o.clock);
  const limiter = o.limiter;
  if (
    limiter !== undefined &&
    (limiter === null || typeof limiter !== 'object' || Array.isArray(limiter))
  ) {
    throw new TypeError(
      `limits: option "limiter" must be a Limiter (from limits-core) to share, or the options of the guard's own limiter, got ${formatValue(limiter)}`,
    );
  }
  const shared = isLimiter(limiter) ? limiter : undefined;
  const ownLimiter = shared === undefined ? (limiter as LimiterOptions | undefined) : undefined;
  const CircuitBreaker = checkConstructor(o.CircuitBreaker);
  const errorThresholdPercentage = checkNumber(
    'errorThresholdPercentage',
    o.errorThresholdPercentage,
    50,
    { min: 0, max: 100 },
  );
  const resetTimeout = checkNumber('resetTimeout', o.resetTimeout, 30_000, {
    min: 0,
    minExclusive: true,
    max: MAX_TIMER_MS,
  });
  const rollingCountTimeout = checkNumber('rollingCountTimeout', o.rollingCountTimeout, 10_000, {
    min: 0,
    minExclusive: true,
    max: MAX_TIMER_MS,
  });
  const rollingCountBuckets = checkNumber('rollingCountBuckets', o.rollingCountBuckets, 10, {
    min: 1,
    integer: true,
  });
  if (rollingCountTimeout / rollingCountBuckets < 1) {
    throw new RangeError(
      `limits: option "rollingCountBuckets" must be at most "rollingCountTimeout" (${rollingCountTimeout}) so that each bucket spans ≥ 1 ms, got ${rollingCountBuckets}`,
    );
  }
  const volumeThreshold = checkNumber('volumeThreshold', o.volumeThreshold, 0, {
    min: 0,
    integer: true,
  });
  const allowWarmUp = checkBoolean('allowWarmUp', o.allowWarmUp, false);
  const name = checkString('name', o.name);
  return {
    probeSlots,
    timeoutMs,
    fallback,
    classify,
    acquire,
    latencyWindowMs,
    latencyBuckets,
    clock,
    limiter: shared,
    ownLimiter,
    CircuitBreaker,
    errorThresholdPercentage,
    resetTimeout,
    rollingCountTimeout,
    rollingCountBuckets,
    volumeThreshold,
    allowWarmUp,
    name,
  };
}

function checkTimeoutMs(value: unknown): number | false {
  if (value === undefined) return 10_000;
  if (value === false) return false;
  const allowed = 'a number in (0, Infinity) or false';
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new TypeError(`limits: option "timeoutMs" must be ${allowed}, got ${formatValue(value)}`);
  }
  if (!(value > 0 && Number.isFinite(value))) {
    throw new RangeError(
      `limits: option "timeoutMs" must be ${allowed}, got ${formatValue(value)}`,
    );
  }
  return value;
}

function checkAcquire(
  value: unknown,
): AcquireOptions | ((...args: never[]) => AcquireOptions | undefined) | undefined {
  if (typeof value === 'function') return value as (...args: never[]) => AcquireOptions | undefined;
  const acquire = checkObject<Record<string, unknown>>('acquire', value);
  if (acquire === undefined) return undefined;
  checkAcquireOptions('guard', acquire as AcquireOptions, ACQUIRE_NAMES);
  return acquire as AcquireOptions;
}

/**
 * The acquire options of one call, from a per-call `acquire` function.
 * @throws what the function throws, or a TypeError/RangeError for a bad option, naming it.
 */
export function callAcquireOptions(
  acquire: (...args: never[]) => AcquireOptions | undefined,
  args: unknown[],
): AcquireOptions | undefined {
  const options = (acquire as (...args: unknown[]) => unknown)(...args);
  if (options === undefined) return undefined;
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      `limits: the guard's "acquire" function must return acquire options or undefined, got ${formatValue(options)}`,
    );
  }
  checkAcquireOptions('guard', options as AcquireOptions, ACQUIRE_NAMES);
  return options as AcquireOptions;
}

/** What the guard calls on a limiter (a `Limiter`, or an object that quacks like one). */
const LIMITER_METHODS = [
  'acquireWith',
  'cancelRequests',
  'snapshot',
  'close',
  'on',
  'off',
] as const;

/** Whether `value` is a Limiter (shared) rather than the options of the guard's own. */
function isLimiter(value: unknown): value is Limiter {
  return (
    value !== null &&
    typeof value === 'object' &&
    LIMITER_METHODS.every((m) => typeof (value as Record<string, unknown>)[m] === 'function')
  );
}

function checkConstructor(value: unknown): OpossumConstructor | undefined {
  const fn = checkFunction<OpossumConstructor>('CircuitBreaker', value);
  if (fn === undefined) return undefined;
  try {
    // Throws when `fn` cannot be called with `new`, without calling it.
    Reflect.construct(Object, [], fn);
  } catch {
    throw new TypeError(
      `limits: option "CircuitBreaker" must be a constructor (opossum's CircuitBreaker class), got ${formatValue(value)}`,
    );
  }
  return fn;
}

/**
 * The guard's own limiter (when no `limiter` is given); it checks its options itself and starts no
 * timer until used: Vegas unless its options give a `limit` or an `algorithm` (a Vegas is built only
 * then). Its clock is the guard's `clock` option, unless `limiter.clock` gives one.
 */
export function ownLimiter(o: CheckedOptions): Limiter {
  const clock = o.clock;
  const given: LimiterOptions = { ...o.ownLimiter };
  // (An `algorithm` key, even one set to `undefined`, is the user's: it goes to the Limiter as given.)
  const vegas = o.ownLimiter?.limit === undefined && !('algorithm' in given);
  return new Limiter({
    ...(vegas ? { algorithm: new VegasLimit() } : {}),
    probeSlots: o.probeSlots,
    // The guard completes every permit it takes (no user code holds one), so its own limiter needs
    // no leak tracking; `limiter: { trackLeaks }` still overrides it.
    trackLeaks: 'off',
    ...(clock === undefined ? {} : { clock }),
    ...given,
  });
}

/** @throws TypeError when the guarded action is not a function. */
export function checkAction(action: unknown): void {
  if (typeof action !== 'function') {
    throw new TypeError(`limits: guard(action) needs a function, got ${formatValue(action)}`);
  }
}

/** @throws TypeError/RangeError for an outcome that is not one of limits-core's `OUTCOMES`. */
export function checkOutcome(outcome: Outcome): void {
  checkOneOf('outcome', outcome, 'success', OUTCOMES);
}
