import type { AcquireOptions, Clock, Limiter, Outcome, RetryPolicy } from 'limits-core';
import { checkFunction, checkKeys, checkNumber, formatValue } from 'limits-core/internal';
import { type PropagateOptions, Propagation } from '../context/Propagation.js';
import { type CallConfig, resolveCallOptions } from '../shared/callOptions.js';
import type { LimitFetchGuard } from '../shared/httpGuard.js';
import type { InterceptorHeaders } from './dispatcher.js';

/**
 * Where `limitInterceptor` gets its limiter: one {@link Limiter} for every request, or a function of
 * the request's origin (`"https://api.example.com"`) that returns the origin's limiter, or
 * `undefined` to let that origin's requests through unlimited. The function is called once per
 * origin and its answer kept (see `maxOrigins`).
 */
export type LimiterSource = Limiter | ((origin: string) => Limiter | undefined);

/**
 * What {@link LimitInterceptorOptions.classify} is asked about: one request, ended by a response
 * (`statusCode` ≥ 200 and `headers`, no `error`) or by an error (`error`, with `statusCode` and
 * `headers` too when the error came while the body streamed).
 */
export interface InterceptedCall {
  /** The request's origin, e.g. `"http://127.0.0.1:8080"`. */
  readonly origin: string;
  /** The request's method, e.g. `"GET"`. */
  readonly method: string;
  /** The final response's status, once its headers arrived. */
  readonly statusCode?: number | undefined;
  /** The final response's headers, once they arrived. */
  readonly headers?: InterceptorHeaders | undefined;
  /** Why the request failed; absent when it ended with a response. */
  readonly error?: unknown;
}

/** What {@link LimitInterceptorOptions.retryable} is asked about: one request, before it is sent. */
export interface InterceptedRequest {
  /** The request's method, e.g. `"GET"`. */
  readonly method: string;
  /** The request's absolute URL (origin and path). */
  readonly url: string;
}

/** A downstream's `Retry-After` on a 429 or 503, parsed (see {@link LimitInterceptorOptions.onRetryAfter}). */
export interface RetryAfterEvent {
  /** The request's origin. */
  readonly origin: string;
  /** The request's method. */
  readonly method: string;
  /** `429` or `503`. */
  readonly statusCode: number;
  /** How long the downstream asked callers to wait, in ms (an integer ≥ 0, at most one day). */
  readonly retryAfterMs: number;
}

/** Options of {@link limitInterceptor}: `limiter` or `guard` (exactly one). */
export interface LimitInterceptorOptions {
  /**
   * The limiter every request needs a permit from, or a function `(origin) => Limiter | undefined`
   * giving each origin its own (`undefined`: that origin is not limited). Required without `guard`.
   */
  limiter?: LimiterSource;
  /**
   * A limits-breaker guard made by `fetchGuard(guard, options)` (a circuit breaker over a limiter;
   * the same one `limitFetch` takes, and one guard may serve both): each request is one
   * `guard.fire()`. An OPEN circuit (or a HALF_OPEN one without a free trial slot) answers with
   * limits-breaker's `CircuitOpenError` through `onResponseError`, never sent; the breaker is judged
   * when the headers arrive (`dropped` and `failure` outcomes are breaker failures); the permit is
   * held (`ctx.hold()`) until the body ends. A guard `fallback` answers the request instead of the
   * error: it must return a `Response` (as for `limitFetch`) or `{ statusCode, headers?, body? }`
   * (`body` a string, bytes or nothing), delivered through the handler's `onResponseStart`,
   * `onResponseData` and `onResponseEnd` (never classified, never retried). The guard's queue does
   * not know the caller's abort: the caller is answered at once, and the request, when its turn
   * comes, is not sent (`ignore`). Not together with `maxOrigins`.
   */
  guard?: LimitFetchGuard;
  /**
   * With a function `limiter`: how many origins' answers are kept, an integer in [1, 10000]. When
   * a new origin arrives with the table full, the least recently used origin whose limiter is idle
   * (nothing in flight or queued) is forgotten; if every limiter is busy, the request is refused
   * with a `LimitExceededError` (reason `at_limit`) and never sent.
   * @default 100
   */
  maxOrigins?: number;
  /**
   * Decides a request's outcome (`success | dropped | failure | ignore`); return `undefined` for the
   * default: statuses by `classifyStatus` (429, 502, 503, 504 `dropped`; other 5xx `failure`; the
   * rest `success`) and errors by `classifyError` (network errors and timeouts `dropped`). A
   * caller's own abort is `ignore` (or the status's outcome when that was not `success`) and is not
   * asked about. A `classify` that throws, or returns something else, gets the default.
   */
  classify?: (call: InterceptedCall) => Outcome | undefined;
  /**
   * End-to-end time limit per request in ms, a number > 0 (`Infinity`: none): refused at
   * admission when it cannot be met, bounded while queued (the limiter's `timeoutMs`), and at the
   * deadline the request is aborted (headers or body still coming) with a `TimeoutError`
   * (`DOMException`) and released as `dropped`. With `guard` it is the one time limit too (`fetchGuard`
   * turns the guard's own `timeoutMs` off): it runs from the dispatch, the wait for the guard's
   * permit included (a request still waiting is answered at once and never sent); before the
   * headers it is a breaker failure.
   * @default Infinity
   */
  timeoutMs?: number;
  /**
   * Longest time in ms, a number > 0 (`Infinity`: none), from the response headers to the end of
   * the body; then the request is aborted with a `TimeoutError`, and its permit goes back — as
   * `ignore` when the caller had stopped reading (undici paused the body for it: a body nobody
   * reads no longer holds a permit), else `dropped` (the downstream streams too slowly). Unused
   * with `release: 'headers'`.
   * @default Infinity
   */
  bodyTimeoutMs?: number;
  /**
   * When the permit goes back: `'body'` — when the response body has been read to its end,
   * errored or been aborted (a body that streams is work in flight); `'headers'` — as soon as the
   * response headers arrive.
   * @default 'body'
   */
  release?: 'body' | 'headers';
  /**
   * Called with the parsed `Retry-After` of a 429 or 503 response (a valid one: garbage, negative
   * and absurd values are refused by `parseRetryAfter` and not reported), before the response is
   * passed on. A hook that throws fails the request with its error.
   */
  onRetryAfter?: (event: RetryAfterEvent) => void;
  /**
   * Opt-in retries under a limits-core `RetryPolicy` (its `maxAttempts`, full-jitter back-off and
   * `RetryBudget`, which caps retries to a share of recent requests), as `limitFetch` does: each
   * attempt takes its own permit; a response classified `dropped` or `failure` (429, 5xx) and an
   * error classified `dropped` (a network error) are retried, after at least their `Retry-After`
   * when it is valid (one longer than the policy's `maxDelayMs`, or than a day, ends the retries:
   * the response is passed on); a refusal by the limiter, the caller's abort and a `TimeoutError`
   * end the call; `timeoutMs` is the time limit of the whole call. Only requests that `retryable`
   * accepts and whose body can be sent again (none, a string or bytes; not a stream) are retried.
   * The caller sees the final attempt only.
   * @default no retries
   */
  retry?: RetryPolicy;
  /**
   * With `retry`: which requests may be repeated.
   * @default idempotent methods only: GET, HEAD, OPTIONS, PUT, DELETE, TRACE (RFC 9110 §9.2.2)
   */
  retryable?: (request: InterceptedRequest) => boolean;
  /**
   * The clock that times `timeoutMs` once a request has its permit; give it the limiter's clock.
   * @default limits-core's `systemClock`
   */
  clock?: Clock;
  /**
   * Whether a request dispatched inside a request context (a `loadShed`ed request,
   * `runWithContext`) carries it on, as `limitFetch` does: the time limit is the smaller of
   * `timeoutMs` and the request's remaining budget minus `marginMs` (with no more than the margin
   * left, the request fails with a `LimitExceededError`, reason `deadline`, and is never sent); the
   * request's criticality and cohort and the attempt's number go to the limiter; the request is
   * aborted when the inbound client disconnects; and each attempt sends `x-request-timeout-ms`,
   * `x-request-criticality` and `x-request-attempt` (1, then 2, 3… for retries), never replacing a
   * header the caller set. `false` turns it off; an object sets the margin and the header names.
   * One request opts out with the dispatch option `propagate: false` (see `PropagateOption`). A
   * request to an origin the `limiter` function leaves unlimited is passed through untouched.
   * @default true (margin 10 ms)
   */
  propagate?: boolean | PropagateOptions;
}

/** The options, checked, with defaults applied: one object shared by every request. */
export interface InterceptorConfig extends CallConfig<InterceptedCall, InterceptedRequest> {
  /** The limiter source; `undefined` with a `guard`. */
  readonly limiter: LimiterSource | undefined;
  readonly maxOrigins: number;
  /** `{ timeoutMs }` for the limiter, or `undefined` (the acquire fast path) without a time limit. */
  readonly acquireOptions: AcquireOptions | undefined;
  readonly onRetryAfter: ((event: RetryAfterEvent) => void) | undefined;
  /** The `propagate` option, checked; `undefined` when off. */
  readonly propagation: Propagation | undefined;
}

const KEYS = [
  'limiter',
  'guard',
  'maxOrigins',
  'classify',
  'timeoutMs',
  'bodyTimeoutMs',
  'release',
  'onRetryAfter',
  'retry',
  'retryable',
  'clock',
  'propagate',
] as const;

/**
 * Checks every option before anything is built: the keys, `limiter`, `maxOrigins` and `onRetryAfter`
 * here, the options shared with `limitFetch` by {@link resolveCallOptions}.
 * @throws TypeError for a wrong type, a missing `limiter` (without `guard`), or both `limiter` and
 *   `guard`; RangeError for a value out of range.
 */
export function resolveInterceptorOptions(options: LimitInterceptorOptions): InterceptorConfig {
  if (options === undefined)
    throw new TypeError('limits: limitInterceptor options must be an object, got undefined');
  checkKeys('limitInterceptor', options, KEYS);
  const guarded = options.guard !== undefined;
  if (guarded && (options.limiter !== undefined || options.maxOrigins !== undefined)) {
    throw new TypeError(
      'limits: limitInterceptor options need exactly one of "limiter" (with "maxOrigins") and "guard" (from fetchGuard; its limiter is the guard\'s)',
    );
  }
  const limiter = guarded ? undefined : checkLimiterSource(options.limiter);
  const maxOrigins = checkNumber('maxOrigins', options.maxOrigins, 100, {
    min: 1,
    max: 10_000,
    integer: true,
  });
  const shared = resolveCallOptions<InterceptedCall, InterceptedRequest>(options);
  const onRetryAfter = checkFunction<InterceptorConfig['onRetryAfter']>(
    'onRetryAfter',
    options.onRetryAfter,
  );
  const timeoutMs = shared.timeoutMs;
  return {
    ...shared,
    limiter,
    maxOrigins,
    acquireOptions: timeoutMs === Infinity ? undefined : { timeoutMs },
    onRetryAfter,
    propagation: Propagation.resolve(options.propagate),
  };
}

function checkLimiterSource(value: unknown): LimiterSource {
  if (
    typeof value === 'function' ||
    (typeof value === 'object' &&
      value !== null &&
      typeof (value as Limiter).acquireWith === 'function')
  )
    return value as LimiterSource;
  throw new TypeError(
    `limits: option "limiter" must be a Limiter or a function (origin) => Limiter | undefined, got ${formatValue(value)}`,
  );
}
