import { createRequire } from 'node:module';
import { EventEmitter } from 'eventemitter3';
import {
  type AcquireOptions,
  type Clock,
  defaultClassify,
  type LimitEvent,
  LimitExceededError,
  Limiter,
  type LimiterOptions,
  type LimiterSnapshot,
  LimitsError,
  type Permit,
  type RejectEvent,
  type ReleaseEvent,
  systemClock,
  VegasLimit,
} from 'limits-core';
import { CallContext } from './CallContext.js';
import { CallTimeoutError, CircuitOpenError } from './errors.js';
import { type LatencySummary, LatencyWindow } from './LatencyWindow.js';
import type {
  OpossumBreaker,
  OpossumConstructor,
  OpossumOptions,
  OpossumStats,
} from './opossum.js';
import { type Timed, TimeoutList } from './TimeoutList.js';

/** Circuit states. */
export type CircuitState = 'CLOSED' | 'OPEN' | 'HALF_OPEN';

/** Why a call went to the fallback. */
export type FallbackReason = 'open' | 'limit' | 'timeout' | 'error';

/**
 * How a finished call counts:
 * - `success`: a latency sample for the limiter, a success for the breaker;
 * - `dropped`: congestion — a dropped sample for the limiter, a failure for the breaker;
 * - `failure`: a failure for the breaker, no sample for the limiter (e.g. a 500 that says nothing about load);
 * - `ignore`: neither (e.g. a 404 or a validation error).
 */
export type GuardOutcome = 'success' | 'dropped' | 'failure' | 'ignore';

/** Decides a call's outcome; `error` is `undefined` when the action resolved. Return `undefined` for the default. */
export type GuardClassify = (error: unknown, result?: unknown) => GuardOutcome | undefined;

/** A guarded action: `ctx.signal` aborts on timeout and shutdown. */
export type GuardedAction<A extends unknown[], R> = (
  ctx: CallContext,
  ...args: A
) => R | PromiseLike<R>;

/** Options of {@link guard}. */
export interface GuardOptions<A extends unknown[], R> extends OpossumOptions {
  /** A limiter to share (the guard does not close it on shutdown). Default: a limiter of its own. */
  limiter?: Limiter;
  /** Options of the guard's own limiter. @default { limit: new VegasLimit(), probeSlots } */
  limit?: LimiterOptions;
  /**
   * Trial calls let through concurrently while HALF_OPEN (opossum alone lets one), and the own
   * limiter's probe slots.
   * @default 1
   */
  probeSlots?: number;
  /**
   * Per-call timeout in ms, or `false`. The caller is answered at the timeout (fallback `timeout` or
   * `CallTimeoutError`); the call is aborted and keeps its permit until it really ends.
   * @default 10000 (opossum's default)
   */
  timeout?: number | false;
  /** Answers a call that did not succeed: `fallback(reason, ...args)`. Without it the caller gets a typed error. */
  fallback?: (reason: FallbackReason, ...args: A) => R | PromiseLike<R>;
  /** Outcome of a call; see {@link GuardOutcome}. Default: resolved → success, timeout/abort → dropped, other errors → failure. */
  classify?: GuardClassify;
  /** Acquire options for every call (e.g. `{ timeout: 200 }` to bound the wait for a permit). */
  acquire?: AcquireOptions;
  /** Rolling window of the latency percentiles in ms. @default 60000 */
  latencyWindowMs?: number;
  /** Histograms in the latency window (memory is bounded by their number). @default 6 */
  latencyBuckets?: number;
  /** Time source and timers (for per-call timeouts and latency). @default the system clock */
  clock?: Clock;
  /** The opossum CircuitBreaker class to use. @default the installed `opossum` peer dependency */
  CircuitBreaker?: OpossumConstructor;
}

/** Events of a {@link Guard}. */
export interface GuardEvents {
  /** The circuit changed state. */
  state: (event: { from: CircuitState; to: CircuitState }) => void;
  /** A call went to the fallback (or was rejected with a typed error, when there is none). */
  fallback: (event: { reason: FallbackReason }) => void;
  /** The limiter's limit changed (re-emitted). */
  limit: (event: LimitEvent) => void;
  /** The limiter refused a request (re-emitted). */
  reject: (event: RejectEvent) => void;
  /** A permit came back (re-emitted). */
  release: (event: ReleaseEvent) => void;
}

/** What {@link Guard.stats} returns. */
export interface GuardStats {
  state: CircuitState;
  /** opossum's rolling counts. */
  breaker: OpossumStats;
  /** The limiter's counters. */
  limiter: LimiterSnapshot;
  /** Latency of completed calls over the rolling window, in ms (HDR histogram). */
  latency: LatencySummary;
  /** Trial calls in flight while HALF_OPEN. */
  trials: number;
}

const EMPTY_ARGS: unknown[] = [];
const noop = () => {};
const passThrough = (outcome: unknown) => outcome;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** limits-core's classification, with every error that is not congestion counted as a failure. */
function defaultOutcome(error: unknown): GuardOutcome {
  const outcome = defaultClassify(error);
  return outcome === 'ignore' ? 'failure' : outcome;
}

let installedOpossum: OpossumConstructor | undefined;
function loadOpossum(): OpossumConstructor {
  installedOpossum ??= createRequire(import.meta.url)('opossum') as OpossumConstructor;
  return installedOpossum;
}

/** @internal One call in flight. */
class Call implements Timed {
  due = 0;
  prev: Timed | undefined = undefined;
  next: Timed | undefined = undefined;
  listed = false;
  /** Links in the guard's list of calls in flight. */
  cprev: Call | undefined = undefined;
  cnext: Call | undefined = undefined;
  /** Still in flight for the guard (not settled, not shut down). */
  live = true;
  /** The caller was answered (by the result, the timeout, or shutdown). */
  answered = false;
  timedOut = false;
  constructor(
    readonly guard: Guard<never, unknown>,
    readonly permit: Permit,
    readonly trial: boolean,
    readonly args: unknown[],
    readonly ctx: CallContext,
    readonly start: number,
    readonly resolve: (value: unknown) => void,
    readonly reject: (error: unknown) => void,
  ) {}
  expire(): void {
    this.guard._timeout(this);
  }
}

/**
 * A circuit breaker (opossum) layered over a limiter. Per call: OPEN → fail fast without touching the
 * limiter (reason `open`); otherwise take a permit (a refusal goes to the fallback with reason
 * `limit` and never counts as a breaker failure); then run the action with its own abort signal.
 * Create one with {@link guard}.
 */
export class Guard<A extends unknown[], R> extends EventEmitter<GuardEvents> {
  /** The limiter in front of the action. */
  readonly limiter: Limiter;
  /** The opossum instance (its state machine, rolling window, volume threshold, reset timeout). */
  readonly breaker: OpossumBreaker;
  readonly #action: GuardedAction<A, R>;
  readonly #fallback: GuardOptions<A, R>['fallback'];
  readonly #classify: GuardClassify | undefined;
  readonly #acquire: AcquireOptions | undefined;
  readonly #timeoutMs: number | false;
  readonly #probeSlots: number;
  readonly #clock: Clock;
  readonly #timeouts: TimeoutList;
  readonly #latency: LatencyWindow;
  readonly #ownsLimiter: boolean;
  /** Calls in flight (an intrusive list: no hashing per call, unlike a Set). */
  #callsHead: Call | undefined = undefined;
  readonly #unsubscribe: Array<() => void> = [];
  readonly #forwarding = new Set<string>();
  #state: CircuitState = 'CLOSED';
  #trials = 0;
  #shut = false;

  /** @internal Use {@link guard}. */
  constructor(action: GuardedAction<A, R>, options: GuardOptions<A, R> = {}) {
    super();
    if (typeof action !== 'function') throw new TypeError('limits: guard(action) needs a function');
    this.#action = action;
    this.#fallback = options.fallback;
    this.#classify = options.classify;
    this.#acquire = options.acquire;
    this.#clock = options.clock ?? systemClock;
    const probeSlots = options.probeSlots ?? 1;
    if (!Number.isInteger(probeSlots) || probeSlots < 1) {
      throw new RangeError(
        `limits: option "probeSlots" must be an integer in [1, Infinity), got ${probeSlots}`,
      );
    }
    this.#probeSlots = probeSlots;
    const timeout = options.timeout ?? 10_000;
    if (
      timeout !== false &&
      !(typeof timeout === 'number' && timeout > 0 && Number.isFinite(timeout))
    ) {
      throw new RangeError(
        `limits: option "timeout" must be a number in (0, Infinity) or false, got ${String(timeout)}`,
      );
    }
    this.#timeoutMs = timeout;
    this.#ownsLimiter = options.limiter === undefined;
    this.limiter =
      options.limiter ??
      new Limiter({
        limit: new VegasLimit(),
        probeSlots,
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        ...options.limit,
      });
    const windowMs = options.latencyWindowMs ?? 60_000;
    const buckets = options.latencyBuckets ?? 6;
    if (!(windowMs > 0) || !Number.isInteger(buckets) || buckets < 1) {
      throw new RangeError(
        'limits: options "latencyWindowMs" (> 0) and "latencyBuckets" (integer ≥ 1) are out of range',
      );
    }
    this.#latency = new LatencyWindow(windowMs, buckets, () => this.#clock.now());
    this.#timeouts = new TimeoutList(this.#clock);
    const Opossum = options.CircuitBreaker ?? loadOpossum();
    // opossum sees only outcomes: the action is run by the guard, opossum's own timeout, capacity,
    // percentiles and AbortController are off (see the README for why).
    this.breaker = new Opossum(passThrough, {
      timeout: false,
      errorThresholdPercentage: options.errorThresholdPercentage ?? 50,
      resetTimeout: options.resetTimeout ?? 30_000,
      rollingCountTimeout: options.rollingCountTimeout ?? 10_000,
      rollingCountBuckets: options.rollingCountBuckets ?? 10,
      volumeThreshold: options.volumeThreshold ?? 0,
      allowWarmUp: options.allowWarmUp ?? false,
      rollingPercentilesEnabled: false,
      enableSnapshots: false,
      ...(options.name === undefined ? {} : { name: options.name }),
    });
    const onOpen = () => this.#transition('OPEN');
    const onHalfOpen = () => this.#transition('HALF_OPEN');
    const onClose = () => this.#transition('CLOSED');
    this.breaker.on('open', onOpen);
    this.breaker.on('halfOpen', onHalfOpen);
    this.breaker.on('close', onClose);
    this.#unsubscribe.push(() => {
      this.breaker.removeListener('open', onOpen);
      this.breaker.removeListener('halfOpen', onHalfOpen);
      this.breaker.removeListener('close', onClose);
    });
  }

  /**
   * Subscribes like eventemitter3's `on`; the limiter's `limit`, `reject` and `release` events are
   * forwarded only once someone listens to them here (a `release` listener makes the limiter time
   * every call, which a guard nobody charts should not pay for).
   */
  override on<T extends EventEmitter.EventNames<GuardEvents>>(
    event: T,
    fn: EventEmitter.EventListener<GuardEvents, T>,
    context?: unknown,
  ): this {
    this.#forward(event);
    return super.on(event, fn, context);
  }

  /** Like {@link Guard.on}, once. */
  override once<T extends EventEmitter.EventNames<GuardEvents>>(
    event: T,
    fn: EventEmitter.EventListener<GuardEvents, T>,
    context?: unknown,
  ): this {
    this.#forward(event);
    return super.once(event, fn, context);
  }

  #forward(event: string): void {
    if (
      (event !== 'limit' && event !== 'reject' && event !== 'release') ||
      this.#forwarding.has(event)
    ) {
      return;
    }
    this.#forwarding.add(event);
    const source = this.limiter as unknown as {
      on(e: string, f: (p: unknown) => void): unknown;
      off(e: string, f: (p: unknown) => void): unknown;
    };
    const forward = (payload: unknown) => {
      (this.emit as (e: string, p: unknown) => boolean)(event, payload);
    };
    source.on(event, forward);
    this.#unsubscribe.push(() => source.off(event, forward));
  }

  /** The circuit state. */
  get state(): CircuitState {
    return this.#state;
  }

  /**
   * Calls the action through the breaker and the limiter.
   * @returns the action's result, or the fallback's.
   * @throws (rejects) `CircuitOpenError`, `LimitExceededError`, `CallTimeoutError` or the action's
   *   error when there is no fallback; whatever the fallback throws when there is one.
   */
  fire(...args: A): Promise<R> {
    if (this.#shut) return Promise.reject(new LimitsError('SHUTDOWN', 'limits: guard shut down'));
    let trial = false;
    if (this.#state !== 'CLOSED') {
      if (this.#state === 'HALF_OPEN' && this.#trials < this.#probeSlots) {
        trial = true;
        this.#trials++;
      } else {
        return this.#fail('open', args, new CircuitOpenError(this.#state));
      }
    }
    const permit = this.limiter.tryAcquire(this.#acquire);
    if (permit !== undefined) return this.#start(permit, args, trial);
    return this.limiter.acquire(this.#acquire).then(
      (p) => this.#start(p, args, trial),
      (error: unknown) => {
        if (trial) this.#trials--;
        return this.#fail('limit', args, error);
      },
    );
  }

  /** Counts, limiter snapshot and latency percentiles. */
  stats(): GuardStats {
    return {
      state: this.#state,
      breaker: this.breaker.stats,
      limiter: this.limiter.snapshot(),
      latency: this.#latency.summary(),
      trials: this.#trials,
    };
  }

  /**
   * Shuts the guard down: no new calls; every call in flight is aborted (its signal fires) and its
   * permit released; with a `timeout` its caller is rejected at once (code `SHUTDOWN`), without one the
   * caller's promise follows the action (derived from it), which the aborted signal should end. opossum
   * is shut down; the timeout timer and every listener the guard added are removed; an own limiter is
   * closed. An action that ignores its signal keeps running, but holds nothing of the guard's any more.
   */
  async shutdown(): Promise<void> {
    if (this.#shut) return;
    this.#shut = true;
    this.#timeouts.clear();
    const error = new LimitsError('SHUTDOWN', 'limits: guard shut down');
    for (let call = this.#callsHead; call !== undefined; call = call.cnext) {
      call.live = false;
      call.ctx._abort(error);
      if (!call.answered) {
        call.answered = true;
        call.reject(error);
      }
      call.permit.ignore();
    }
    this.#callsHead = undefined;
    for (const off of this.#unsubscribe) off();
    this.breaker.shutdown();
    if (this.#ownsLimiter) await this.limiter.close();
  }

  #start(permit: Permit, args: A, trial: boolean): Promise<R> {
    const ctx = new CallContext();
    let result: R | PromiseLike<R>;
    try {
      result = this.#action(ctx, ...args);
    } catch (error) {
      // Threw before starting anything: the permit goes back at once, the breaker does not count it.
      permit.ignore();
      if (trial) this.#trials--;
      return this.#fail('error', args, error);
    }
    if (!isThenable(result)) {
      const call = this.#track(permit, trial, args, ctx, noop, noop);
      call.answered = true;
      this.#settled(call, undefined, result);
      return Promise.resolve(result);
    }
    if (this.#timeoutMs === false) {
      // Without a timeout the caller is answered exactly when the action settles: derive its promise
      // from the action's instead of making a second one.
      const call = this.#track(permit, trial, args, ctx, noop, noop);
      call.answered = true;
      return Promise.resolve(result).then(
        (value) => {
          this.#settled(call, undefined, value);
          return value;
        },
        (error: unknown) => {
          this.#settled(call, error ?? new Error('action rejected with undefined'), undefined);
          return this.#fail('error', args, error);
        },
      );
    }
    return new Promise<R>((resolve, reject) => {
      const call = this.#track(permit, trial, args, ctx, resolve as (v: unknown) => void, reject);
      result.then(
        (value) => this.#settled(call, undefined, value),
        (error: unknown) =>
          this.#settled(call, error ?? new Error('action rejected with undefined'), undefined),
      );
    });
  }

  #track(
    permit: Permit,
    trial: boolean,
    args: unknown[],
    ctx: CallContext,
    resolve: (v: unknown) => void,
    reject: (e: unknown) => void,
  ): Call {
    const call = new Call(
      this as never,
      permit,
      trial,
      args,
      ctx,
      this.#clock.now(),
      resolve,
      reject,
    );
    const head = this.#callsHead;
    call.cnext = head;
    if (head !== undefined) head.cprev = call;
    this.#callsHead = call;
    if (this.#timeoutMs !== false) {
      call.due = call.start + this.#timeoutMs;
      this.#timeouts.add(call);
    }
    return call;
  }

  /** The action settled (possibly long after its caller timed out). */
  #settled(call: Call, error: unknown, value: unknown): void {
    if (!call.live) return; // shut down meanwhile: already released
    call.live = false;
    if (call.cprev === undefined) this.#callsHead = call.cnext;
    else call.cprev.cnext = call.cnext;
    if (call.cnext !== undefined) call.cnext.cprev = call.cprev;
    this.#timeouts.remove(call);
    const now = this.#clock.now();
    this.#latency.record(now - call.start, now);
    if (call.timedOut) {
      // Counted as a breaker failure when it timed out; now the permit can go back, as congestion.
      call.permit.dropped();
      return;
    }
    let outcome: GuardOutcome | undefined;
    try {
      outcome = this.#classify?.(error, value);
    } catch {
      outcome = undefined;
    }
    outcome ??= defaultOutcome(error);
    if (outcome === 'success') call.permit.success();
    else if (outcome === 'dropped') call.permit.dropped();
    else call.permit.ignore();
    if (outcome !== 'ignore') this.#record(outcome === 'success', call.trial, error);
    else if (call.trial) this.#trials--;
    // A caller already answered (by a derived promise, or at its timeout) is not answered again.
    if (call.answered) return;
    call.answered = true;
    if (error === undefined) call.resolve(value);
    else this.#fail('error', call.args as A, error).then(call.resolve, call.reject);
  }

  /** @internal The call's timeout elapsed: answer the caller now, keep the permit until it ends. */
  _timeout(call: Call): void {
    if (call.answered) return;
    call.timedOut = true;
    call.answered = true;
    const error = new CallTimeoutError(this.#timeoutMs as number);
    call.ctx._abort(error);
    this.#record(false, call.trial, error);
    this.#fail('timeout', call.args as A, error).then(call.resolve, call.reject);
  }

  /** Reports an outcome to the circuit. */
  #record(ok: boolean, trial: boolean, error: unknown): void {
    if (trial) {
      this.#trials--;
      if (this.#state !== 'HALF_OPEN') return;
      if (ok) this.breaker.close();
      else this.breaker.open();
      return;
    }
    // A call admitted while CLOSED whose outcome arrives after the circuit left CLOSED says nothing new.
    if (this.#state !== 'CLOSED') return;
    if (ok) {
      // What opossum's own fire() does for a success, minus the promise plumbing: its rolling window
      // counts `fire` and `success` from these events (a success never changes a CLOSED circuit).
      this.breaker.emit('fire', EMPTY_ARGS);
      this.breaker.emit('success', undefined, 0);
    } else {
      // A failure goes through fire(), so opossum judges volume and error percentage and may open.
      this.breaker.fire(Promise.reject(error)).catch(noop);
    }
  }

  #fail(reason: FallbackReason, args: A, error: unknown): Promise<R> {
    if (this.listenerCount('fallback') > 0) this.emit('fallback', { reason });
    const fallback = this.#fallback;
    if (fallback === undefined) return Promise.reject(error);
    try {
      return Promise.resolve(fallback(reason, ...args));
    } catch (fallbackError) {
      return Promise.reject(fallbackError);
    }
  }

  #transition(to: CircuitState): void {
    const from = this.#state;
    if (from === to) return;
    this.#state = to;
    if (to !== 'HALF_OPEN') this.#trials = 0;
    if (this.listenerCount('state') > 0) this.emit('state', { from, to });
  }
}

/**
 * Guards `action` with a circuit breaker (opossum) over an adaptive limiter, with fallbacks.
 *
 * @param action - called as `action(ctx, ...args)`; `ctx.signal` aborts on timeout and shutdown.
 * @example
 * ```ts
 * const getUser = guard((ctx, id: string) => fetch(`${API}/users/${id}`, { signal: ctx.signal }).then((r) => r.json()), {
 *   timeout: 2000,
 *   probeSlots: 3,
 *   fallback: (reason, id) => cache.get(id),
 * });
 * const user = await getUser.fire('42');
 * ```
 */
export function guard<A extends unknown[], R>(
  action: GuardedAction<A, R>,
  options?: GuardOptions<A, R>,
): Guard<A, R> {
  return new Guard(action, options);
}

export { LimitExceededError };
