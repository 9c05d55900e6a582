import type {
  AcquireOptions,
  Classify,
  Clock,
  LimitEvent,
  LimitExceededError,
  Limiter,
  LimiterOptions,
  LimiterSnapshot,
  RejectEvent,
  ReleaseEvent,
} from 'limits-core';
import type { CallContext } from './CallContext.js';
import type { CallTimeoutError, CircuitOpenError } from './errors.js';
import type { LatencySummary } from './LatencyWindow.js';
import type { OpossumConstructor, OpossumOptions } from './opossum.js';

/** Circuit states. */
export type CircuitState = 'CLOSED' | 'OPEN' | 'HALF_OPEN';

/** Why a call went to the fallback. */
export type FallbackReason = 'open' | 'limiter' | 'timeout' | 'error';

/**
 * Why a call went to the fallback, and the error the caller would have got without one: the first
 * argument of `fallback` and the payload of the `fallback` event.
 * - `open`: a `CircuitOpenError` (the circuit was OPEN, HALF_OPEN with every trial slot taken, or
 *   opened while the call waited for a permit);
 * - `limiter`: the limiter's `LimitExceededError` (its `reason` says why: queue full, expired, …);
 * - `timeout`: a `CallTimeoutError`;
 * - `error`: what the action threw or rejected with.
 */
export type FallbackCause =
  | { readonly reason: 'open'; readonly error: CircuitOpenError }
  | { readonly reason: 'limiter'; readonly error: LimitExceededError }
  | { readonly reason: 'timeout'; readonly error: CallTimeoutError }
  | { readonly reason: 'error'; readonly error: unknown };

/** A guarded action: `ctx.signal` aborts on timeout and shutdown. */
export type GuardedAction<A extends unknown[], R> = (
  ctx: CallContext,
  ...args: A
) => R | PromiseLike<R>;

/** Options of {@link guard}. */
export interface GuardOptions<A extends unknown[], R> extends OpossumOptions {
  /**
   * The limiter in front of the action: a `Limiter` to share (the guard does not close it on
   * shutdown), or the options of the guard's own limiter (closed by `shutdown()`).
   * @default the guard's own: { algorithm: new VegasLimit(), probeSlots }
   */
  limiter?: Limiter | LimiterOptions;
  /**
   * Trial calls let through concurrently while HALF_OPEN (opossum alone lets one), and the own
   * limiter's probe slots.
   * @default 1
   */
  probeSlots?: number;
  /**
   * Each call's time limit in ms, end to end, or `false`: counted from `fire()`, it covers the wait
   * for a permit in the limiter's queue and the action. When it runs out the caller is answered at once (fallback reason `timeout`, or a
   * `CallTimeoutError`) in every phase:
   * - still waiting for a permit: the call leaves the limiter's queue; it never reached the
   *   downstream, so it is neither a breaker failure nor a limiter sample (a HALF_OPEN trial frees
   *   its slot);
   * - running: `ctx.signal` aborts, the breaker counts a failure, and the call keeps its permit until
   *   the action really ends (then released as `dropped`).
   *
   * The limiter itself does not know the time limit (no per-call cost): to also have it refuse at
   * admission a call whose time limit cannot be met, pass `acquire: { timeoutMs }` too. It takes the place
   * of opossum's `timeout` (which counts from the start of the action); the key `timeout` is refused.
   * @default 10000 (opossum's default)
   */
  timeoutMs?: number | false;
  /**
   * Answers a call that did not succeed: `fallback({ reason, error }, ...args)`, with the call's
   * arguments; `error` is what the caller would get without a fallback (see {@link FallbackCause}).
   * Without it the caller gets that error. Counted in `stats().breaker.fallbacks` when it returns.
   */
  fallback?: (cause: FallbackCause, ...args: A) => R | PromiseLike<R>;
  /**
   * Outcome of a call (limits-core's `Outcome`, the same set in every limits package): `success` (a
   * latency sample, a breaker success), `dropped` (congestion: a dropped sample, a breaker failure),
   * `failure` (a breaker failure, no sample: e.g. a 500 that says nothing about load), `ignore`
   * (neither: e.g. a 404). Return `undefined` for the default: limits-core's `defaultClassify`
   * (resolved → success, timeout/abort → dropped, other errors → failure).
   */
  classify?: Classify;
  /**
   * Acquire options for every call (checked once, passed to the limiter with each call). E.g.
   * `{ timeoutMs: 200 }` makes the limiter refuse (fallback reason `limiter`) a call whose wait cannot fit in
   * 200 ms, at admission (from its estimated service time) or while queued. Costs every call an
   * options check and a clock read in the limiter.
   *
   * Or a function of the call's arguments that returns them per call (checked on each call; a throw
   * or a bad option rejects that call before it reaches the breaker or the limiter), e.g.
   * `(order) => ({ criticality: order.paid ? 'critical' : 'sheddable', cohort: order.userId })` for a
   * limiter with `shedding`.
   */
  acquire?: AcquireOptions | ((...args: A) => AcquireOptions | undefined);
  /** Rolling window of the latency percentiles in ms. @default 60000 */
  latencyWindowMs?: number;
  /** Histograms in the latency window (memory is bounded by their number). @default 6 */
  latencyBuckets?: number;
  /**
   * Time source and timers (for `timeoutMs` and latency). It need not be monotonic: the guard
   * absorbs a backward jump (its time goes on from where it was), as limits-core's limiter does.
   * @default the system clock
   */
  clock?: Clock;
  /** The opossum CircuitBreaker class to use. @default the installed `opossum` peer dependency */
  CircuitBreaker?: OpossumConstructor;
}

/** Events of a {@link Guard}. */
export interface GuardEvents {
  /** The circuit changed state. */
  state: (event: { from: CircuitState; to: CircuitState }) => void;
  /**
   * A call went to the fallback (or was rejected with a typed error, when there is none): the same
   * `{ reason, error }` object the fallback receives.
   */
  fallback: (event: FallbackCause) => void;
  /** The limiter's limit changed (re-emitted). */
  limit: (event: LimitEvent) => void;
  /** The limiter refused a request (re-emitted). */
  reject: (event: RejectEvent) => void;
  /** A permit came back (re-emitted). */
  release: (event: ReleaseEvent) => void;
  /**
   * A listener of the guard's events (or of opossum's events, when the guard calls into opossum)
   * threw. The guard catches it and carries on: its state stays consistent and every caller is still
   * answered. Without an `error` listener here, the error goes to the limiter's `error` event; without
   * one there either, it is rethrown on a microtask (an uncaught exception, as the limiter does).
   */
  error: (error: unknown) => void;
}

/**
 * The circuit's counts over its rolling window (`rollingCountTimeout` ms, in `rollingCountBuckets`
 * buckets), as opossum judges the error percentage from them. Only what the guard feeds opossum:
 * opossum's own timeouts, capacity, cache and latency percentiles are off inside a guard, so its
 * `stats` fields for them (`timeouts`, `rejects`, `semaphoreRejections`, the cache counters,
 * `percentiles`, `latencyMean`, `latencyTimes`) say nothing and are not repeated here; latency is in
 * {@link GuardStats.latency}. HALF_OPEN trial calls are not counted: their outcome closes or re-opens
 * the circuit directly.
 */
export interface BreakerStats {
  /** Calls whose outcome counted in the window (its successes and failures). */
  fires: number;
  /** Calls that succeeded. */
  successes: number;
  /**
   * Calls that failed: outcome `failure` or `dropped` (an error the classifier calls so, or a call
   * past its `timeoutMs`).
   */
  failures: number;
  /** Calls answered by the `fallback` option (a fallback that returned, not one that threw). */
  fallbacks: number;
}

/** What {@link Guard.stats} returns. */
export interface GuardStats {
  state: CircuitState;
  /** The circuit's rolling counts (see {@link BreakerStats}). */
  breaker: BreakerStats;
  /** The limiter's counters. */
  limiter: LimiterSnapshot;
  /** Latency of completed calls over the rolling window, in ms (HDR histogram). */
  latency: LatencySummary;
  /** Trial calls of the current HALF_OPEN episode in flight (0 in any other state). */
  trials: number;
}
