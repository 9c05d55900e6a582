/**
 * The options of an HTTP call that `limitFetch` and `limitInterceptor` share — `guard`, `classify`,
 * `timeoutMs`, `bodyTimeoutMs`, `release`, `retry`, `retryable`, `clock` — checked in one place,
 * with their defaults. Each entry point checks its own keys and options (its `limiter`, and for the
 * interceptor `maxOrigins` and `onRetryAfter`) and documents every option in its own options type.
 */
import { type Clock, type Outcome, type RetryPolicy, systemClock } from 'limits-core';
import {
  checkClock,
  checkFunction,
  checkNumber,
  checkOneOf,
  formatValue,
} from 'limits-core/internal';
import { isHttpGuard, type LimitFetchGuard } from './httpGuard.js';
import { checkRetryPolicy, isIdempotent } from './retry.js';

/** The shared options as given (each entry point's options type documents them). */
export interface CallOptions {
  readonly guard?: unknown;
  readonly classify?: unknown;
  readonly timeoutMs?: unknown;
  readonly bodyTimeoutMs?: unknown;
  readonly release?: unknown;
  readonly retry?: unknown;
  readonly retryable?: unknown;
  readonly clock?: unknown;
}

/**
 * The shared options, checked, with defaults applied.
 * @typeParam Subject - what the entry point's `classify` is asked about.
 * @typeParam Request - what the entry point's `retryable` is asked about.
 */
export interface CallConfig<Subject, Request extends { readonly method: string }> {
  /** A guard made by `fetchGuard`, or `undefined` (the entry point's `limiter` then). */
  readonly guard: LimitFetchGuard | undefined;
  readonly classify: ((subject: Subject) => Outcome | undefined) | undefined;
  /** The whole call's time limit in ms (`Infinity`: none). */
  readonly timeoutMs: number;
  /** The longest time in ms from the headers to the body's end (`Infinity`: none). */
  readonly bodyTimeoutMs: number;
  /** `release: 'headers'`: the permit goes back when the headers arrive. */
  readonly releaseAtHeaders: boolean;
  readonly retry: RetryPolicy | undefined;
  /** The `retryable` option, or idempotent methods only. */
  readonly retryable: (request: Request) => boolean;
  /** The `clock` option, or limits-core's `systemClock`. */
  readonly clock: Clock;
}

/** `timeoutMs` and `bodyTimeoutMs`: a number > 0, or `Infinity`. */
const TIME_LIMIT = { min: 0, minExclusive: true, allowInfinity: true };

/**
 * Checks the shared options (`guard` first), each under its own name.
 * @throws TypeError for a wrong type (a `guard` not made by `fetchGuard`); RangeError for a value
 *   out of range.
 */
export function resolveCallOptions<Subject, Request extends { readonly method: string }>(
  o: CallOptions,
): CallConfig<Subject, Request> {
  const guard = checkGuard(o.guard);
  const classify = checkFunction<CallConfig<Subject, Request>['classify']>('classify', o.classify);
  const timeoutMs = checkNumber('timeoutMs', o.timeoutMs, Infinity, TIME_LIMIT);
  const bodyTimeoutMs = checkNumber('bodyTimeoutMs', o.bodyTimeoutMs, Infinity, TIME_LIMIT);
  const release = checkOneOf('release', o.release, 'body', ['body', 'headers']);
  const retry = checkRetryPolicy(o.retry);
  const retryable = checkFunction<(request: Request) => boolean>('retryable', o.retryable);
  return {
    guard,
    classify,
    timeoutMs,
    bodyTimeoutMs,
    releaseAtHeaders: release === 'headers',
    retry,
    retryable: retryable ?? isIdempotent,
    clock: checkClock('clock', o.clock) ?? systemClock,
  };
}

/** The `guard` option: a guard made by `fetchGuard`, or none. */
function checkGuard(value: unknown): LimitFetchGuard | undefined {
  if (value === undefined || isHttpGuard(value)) return value;
  throw new TypeError(
    `limits: option "guard" must be a guard made by fetchGuard(guard, options), got ${formatValue(value)}`,
  );
}
