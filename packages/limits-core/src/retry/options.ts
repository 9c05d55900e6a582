import { checkClock } from '../internal/checkClock.js';
import type { Clock } from '../internal/clock.js';
import type { Random } from '../internal/random.js';
import {
  checkFunction,
  checkKeys,
  checkNumber,
  checkSignal,
  formatValue,
} from '../internal/validate.js';
import type { RetryBudget } from './RetryBudget.js';
import { retryClock } from './retryClock.js';

/** The result of one attempt, as `retryIf` sees it. */
export type AttemptResult<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Options of {@link RetryPolicy}. */
export interface RetryOptions {
  /**
   * Attempts per call, the first included (`1`: never retry), an integer in `[1, 100]`.
   * @default 3
   */
  maxAttempts?: number;
  /**
   * The backoff's base, in ms, in `[0, 3_600_000]`: the delay before retry `n` (1 for the first
   * retry) is uniform in `[0, min(maxDelayMs, baseDelayMs × 2^(n − 1))]` (full jitter).
   * @default 100 (or `maxDelayMs`, when that is given and smaller)
   */
  baseDelayMs?: number;
  /**
   * The longest wait between two attempts, in ms, in `[0, 3_600_000]`: it caps the backoff, and a
   * `Retry-After` (a number from `retryIf`) above it means "do not retry".
   * @default 10_000 (or `baseDelayMs`, when that is given and larger)
   */
  maxDelayMs?: number;
  /**
   * A retry budget, shared by every call (and every policy) that should share one: each call
   * records a request, each retry must be paid for by the budget. Without it only `maxAttempts`
   * bounds retries.
   * @default none
   */
  budget?: RetryBudget;
  /** The source of time and of the wait timers. @default the system clock, with ref'd timers */
  clock?: Clock;
  /** Uniform numbers in `[0, 1)` for the jitter. @default Math.random */
  random?: Random;
}

/** Options of one {@link RetryPolicy.run} call. */
export interface RetryRunOptions<T> {
  /**
   * The caller's signal: passed to every attempt, and it ends the wait between two attempts at
   * once (the call rejects with `signal.reason`, the timer is cleared). An already-aborted signal
   * rejects with `signal.reason` without calling the task; once it has aborted, no further attempt
   * is made (the last attempt's result is returned or thrown as is).
   */
  signal?: AbortSignal;
  /**
   * Decides after each attempt: `false` = done (its result is the call's result); `true` = retry
   * after the backoff delay; a number ≥ 0 = retry no sooner than that many ms (a `Retry-After`):
   * the wait is `max(that, the backoff delay)`, and a number over `maxDelayMs` means do not retry.
   * Any other return value rejects the call with a TypeError; a `retryIf` that throws rejects the
   * call with its error. Never called for a refusal ({@link isRefusal}), which is never retried.
   * @default retry any error that is not a refusal; never retry a value
   */
  retryIf?: (result: AttemptResult<T>, attempt: number) => boolean | number;
  /**
   * Called with each value thrown away because it is retried (e.g. cancel a `Response` body), or
   * because `retryIf` rejected the call. A `discard` that throws is reported on the `error` event.
   */
  discard?: (value: T) => void;
}

/** Counters of a {@link RetryPolicy}, since it was made. */
export interface RetryStats {
  /** Calls that made their first attempt. */
  calls: number;
  /** Attempts made, first ones included. */
  attempts: number;
  /** Retries made (each paid for by the budget, when there is one). */
  retries: number;
  /** Retries refused by the budget (each emitted as `budget_exhausted`). */
  refusedByBudget: number;
  /** Calls that ended on a result `retryIf` would have retried, because `maxAttempts` was reached. */
  exhausted: number;
}

/** @internal {@link RetryOptions} checked, with defaults. */
export interface ResolvedRetryOptions {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  budget: RetryBudget | undefined;
  clock: Clock;
  random: Random;
}

const KEYS = ['maxAttempts', 'baseDelayMs', 'maxDelayMs', 'budget', 'clock', 'random'] as const;
const RUN_KEYS = ['signal', 'retryIf', 'discard'] as const;
const MAX_DELAY = 3_600_000;

/**
 * @internal Checks every option before anything is built.
 * @throws TypeError (unknown key with the nearest valid name, wrong type); RangeError (out of range,
 *   or `baseDelayMs` > `maxDelayMs` when both are given).
 */
export function resolveRetryOptions(options: RetryOptions): ResolvedRetryOptions {
  checkKeys('RetryPolicy', options, KEYS);
  const maxAttempts = checkNumber('maxAttempts', options.maxAttempts, 3, {
    min: 1,
    max: 100,
    integer: true,
  });
  const range = { min: 0, max: MAX_DELAY };
  const base = checkNumber('baseDelayMs', options.baseDelayMs, Number.NaN, range);
  const max = checkNumber('maxDelayMs', options.maxDelayMs, Number.NaN, range);
  if (base > max) {
    throw new RangeError(`limits: option "baseDelayMs" (${base}) must be ≤ "maxDelayMs" (${max})`);
  }
  const budget = options.budget;
  if (
    budget !== undefined &&
    (budget === null ||
      typeof budget !== 'object' ||
      typeof budget.recordRequest !== 'function' ||
      typeof budget.tryRetry !== 'function')
  ) {
    throw new TypeError(
      `limits: option "budget" must be a RetryBudget (an object with recordRequest and tryRetry functions), got ${formatValue(budget)}`,
    );
  }
  return {
    maxAttempts,
    baseDelayMs: Number.isNaN(base) ? Math.min(100, Number.isNaN(max) ? 100 : max) : base,
    maxDelayMs: Number.isNaN(max) ? Math.max(10_000, Number.isNaN(base) ? 0 : base) : max,
    budget,
    clock: checkClock('clock', options.clock) ?? retryClock,
    random: checkFunction<Random>('random', options.random) ?? Math.random,
  };
}

/** @internal One run's arguments, checked. */
export interface RunArguments<T> {
  signal: AbortSignal | undefined;
  retryIf: RetryRunOptions<T>['retryIf'];
  discard: RetryRunOptions<T>['discard'];
}

/** @internal An options-free run's arguments (shared, never mutated). */
const NO_OPTIONS: RunArguments<never> = {
  signal: undefined,
  retryIf: undefined,
  discard: undefined,
};

/**
 * @internal Checks `run(task, options)`'s arguments.
 * @throws TypeError naming the argument or option.
 */
export function checkRun<T>(
  task: unknown,
  options: RetryRunOptions<T> | undefined,
): RunArguments<T> {
  if (typeof task !== 'function') {
    throw new TypeError(
      `limits: argument "task" of run() must be a function, got ${formatValue(task)}`,
    );
  }
  if (options === undefined) return NO_OPTIONS as RunArguments<T>;
  checkKeys('RetryPolicy.run', options, RUN_KEYS);
  return {
    signal: checkSignal('signal', options.signal),
    retryIf: checkFunction('retryIf', options.retryIf),
    discard: checkFunction('discard', options.discard),
  };
}
