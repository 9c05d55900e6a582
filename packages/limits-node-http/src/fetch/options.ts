import type { Clock, Limiter, Outcome, RetryPolicy } from 'limits-core';
import { checkKeys, formatValue } from 'limits-core/internal';
import {
  type PropagateOption,
  type PropagateOptions,
  Propagation,
} from '../context/Propagation.js';
import { type CallConfig, resolveCallOptions } from '../shared/callOptions.js';
import type { LimitFetchGuard } from '../shared/httpGuard.js';

/** What a `limitFetch` call is about, for `limiter` functions, `classify` and `retryable`. */
export interface LimitFetchRequest {
  /** The request's method, upper case (e.g. `"GET"`). */
  readonly method: string;
  /** The request's absolute URL, as given. */
  readonly url: string;
}

/**
 * What {@link LimitFetchOptions.classify} is asked about: a request that ended with a `response`
 * (its headers arrived) or with an `error` (no response).
 */
export type LimitFetchResult = LimitFetchRequest &
  (
    | { readonly response: Response; readonly error?: undefined }
    | { readonly response?: undefined; readonly error: unknown }
  );

/**
 * A `limitFetch` call's `init` with the per-call opt-out of propagation: `propagate: false` sends
 * the call as if there were no request context. `limitFetch` keeps `fetch`'s type, so give the
 * field through a variable of this type (`const init: LimitFetchInit = { propagate: false }`).
 */
export type LimitFetchInit = RequestInit & PropagateOption;

/** Options of {@link limitFetch}: `limiter` or `guard` (exactly one). */
export interface LimitFetchOptions {
  /**
   * The limits-core `Limiter` every request needs a permit from, or a function
   * `(origin, request) => Limiter | undefined` choosing one per request (`undefined`: not limited),
   * e.g. `(origin) => partitioned.partition(origin)` or a `Map` of per-origin limiters. It is called
   * for every request: return the same limiter for the same origin.
   */
  limiter?: Limiter | ((origin: string, request: LimitFetchRequest) => Limiter | undefined);
  /**
   * A limits-breaker guard made by {@link fetchGuard} (a circuit breaker over a limiter): each
   * request is one `guard.fire()`. An OPEN circuit rejects with `CircuitOpenError`, never sent.
   */
  guard?: LimitFetchGuard;
  /**
   * Decides a request's outcome (`success | dropped | failure | ignore`); return `undefined` for
   * the default: a response by `classifyStatus` (429, 502, 503, 504 `dropped`; other 5xx
   * `failure`; the rest `success`), an error by `classifyError` (network errors and timeouts
   * `dropped`, others `failure`). The caller's own abort is always `ignore` and not asked about. A
   * `classify` that throws, or answers something else, gets the default.
   */
  classify?: (result: LimitFetchResult) => Outcome | undefined;
  /**
   * End-to-end time limit per call in ms, a number > 0 (`Infinity`: none), retries included. The
   * limiter refuses at admission a call that cannot start in time and bounds its wait in the queue
   * (a `LimitExceededError`); at the deadline the request is aborted, headers or body still coming,
   * with a `TimeoutError` (`DOMException`), classified `dropped`. Merged with the caller's
   * `init.signal` (or the `Request`'s): either aborts; a caller's abort rejects with the caller's
   * reason and is classified `ignore`. With `release: 'headers'` the time limit ends at the headers.
   * @default Infinity
   */
  timeoutMs?: number;
  /**
   * When the permit goes back: `'body'` — when the response body has been read to its end,
   * cancelled or errored (a body that streams is work in flight); `'headers'` — as soon as the
   * response headers arrive. A response without a body (`HEAD`, 204, 304) releases at once.
   * @default 'body'
   */
  release?: 'body' | 'headers';
  /**
   * With `release: 'body'`: the longest time from the headers to the body's end, in ms, a number
   * > 0 (`Infinity`: no limit). Then the request is aborted (a reader gets a `TimeoutError`) and the
   * permit released as `dropped` when a read was waiting for the downstream, or `ignore` when
   * nobody was reading. Without it, a body nobody reads holds its permit until the response is
   * garbage-collected (then released as `ignore`), the caller's signal aborts, or `timeoutMs` ends.
   * @default Infinity
   */
  bodyTimeoutMs?: number;
  /**
   * Retries under a limits-core `RetryPolicy` (opt-in): each attempt takes its own permit; a
   * refusal (limiter, open circuit) is never retried; responses classified `dropped` or `failure`
   * (429, 5xx) and errors classified `dropped` (network errors) are retried, after at least their
   * `Retry-After` when it is valid (one longer than the policy's `maxDelayMs`, or than a day, ends
   * the retries: the response is returned); the caller's abort and our own timeout end the call. A
   * response thrown away for a retry has its body cancelled. Only requests `retryable` says yes to.
   * @default no retries
   */
  retry?: RetryPolicy;
  /**
   * Which requests `retry` may repeat. A body that is a stream is sent once, and its request never
   * retried (no copy of the upload is kept): a `ReadableStream` or an async iterable in `init.body`,
   * and the body of a `Request`, which fetch reads as a stream whatever it was made from. To retry
   * a request with a body, pass the URL and the body in `init` (a string, bytes, a `Blob`, …).
   * @default idempotent methods only: GET, HEAD, OPTIONS, PUT, DELETE, TRACE
   */
  retryable?: (request: LimitFetchRequest) => boolean;
  /**
   * The clock that times `timeoutMs` and `bodyTimeoutMs`; give it the limiter's clock in tests.
   * @default limits-core's `systemClock` (timers that do not keep the process alive)
   */
  clock?: Clock;
  /**
   * Whether a call made inside a request context (a `loadShed`ed request, `runWithContext`) carries
   * it on: the time limit is the smaller of `timeoutMs` and the request's remaining budget minus
   * `marginMs` (a call with no more than the margin left is refused with a `LimitExceededError`,
   * reason `deadline`, and never sent); the request's criticality and cohort and the attempt's
   * number go to the limiter; the call aborts when the request's client disconnects (merged with
   * the caller's signal, classified `ignore`); and each attempt sends `x-request-timeout-ms` (what
   * is left of its time limit), `x-request-criticality` and `x-request-attempt` (1, then 2, 3… for
   * retries), never replacing a header the caller set. `false` turns it off; an object sets the
   * margin and the header names (see {@link PropagateOptions}). One call opts out with
   * `propagate: false` in its `init` (see {@link PropagateOption}). Without a context nothing
   * changes. With `guard`, the guard's limiter gets no criticality (its acquire options are fixed).
   * @default true (margin 10 ms, the header names above)
   */
  propagate?: boolean | PropagateOptions;
}

/** The options, checked, with defaults applied: one object shared by every call. */
export interface LimitFetchConfig extends CallConfig<LimitFetchResult, LimitFetchRequest> {
  readonly limiter: LimitFetchOptions['limiter'];
  /** The `propagate` option, checked; `undefined` when off. */
  readonly propagation: Propagation | undefined;
}

const KEYS = [
  'limiter',
  'guard',
  'classify',
  'timeoutMs',
  'release',
  'bodyTimeoutMs',
  'retry',
  'retryable',
  'clock',
  'propagate',
] as const;

/**
 * Checks every option before anything is built: the keys and `limiter` here, the options shared with
 * `limitInterceptor` by {@link resolveCallOptions}.
 * @throws TypeError for a wrong type, an unknown key, or neither/both of `limiter` and `guard`;
 *   RangeError for a value out of range.
 */
export function resolveLimitFetchOptions(fetch: unknown, options: unknown): LimitFetchConfig {
  if (typeof fetch !== 'function') {
    throw new TypeError(`limits: limitFetch(fetch) needs a function, got ${formatValue(fetch)}`);
  }
  if (options === undefined || options === null || typeof options !== 'object') {
    throw new TypeError(
      `limits: limitFetch options must be an object with "limiter" or "guard", got ${formatValue(options)}`,
    );
  }
  checkKeys('limitFetch', options, KEYS);
  const o = options as LimitFetchOptions;
  if ((o.limiter === undefined) === (o.guard === undefined)) {
    throw new TypeError(
      'limits: limitFetch options need exactly one of "limiter" (a Limiter or a function) and "guard" (from fetchGuard)',
    );
  }
  if (
    o.limiter !== undefined &&
    typeof o.limiter !== 'function' &&
    (typeof o.limiter !== 'object' ||
      o.limiter === null ||
      typeof (o.limiter as Limiter).acquire !== 'function')
  ) {
    throw new TypeError(
      `limits: option "limiter" must be a Limiter or a function (origin, request) => Limiter | undefined, got ${formatValue(o.limiter)}`,
    );
  }
  return {
    limiter: o.limiter,
    ...resolveCallOptions<LimitFetchResult, LimitFetchRequest>(o),
    propagation: Propagation.resolve(o.propagate),
  };
}
