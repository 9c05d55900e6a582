import { EventEmitter } from 'eventemitter3';
import { type AcquireOptions, type Limiter, systemClock } from 'limits-core';
import { Call, CallsInFlight, type GuardParts, Holds, SHED } from './Call.js';
import { CircuitOpenError, shutDownError } from './errors.js';
import { Fallback } from './Fallback.js';
import { LatencyWindow } from './LatencyWindow.js';
import { MonotonicClock } from './MonotonicClock.js';
import { OpossumCircuit } from './OpossumCircuit.js';
import type { OpossumBreaker } from './opossum.js';
import { callAcquireOptions, checkAction, checkGuardOptions, ownLimiter } from './options.js';
import { TimeoutList } from './TimeoutList.js';
import type {
  CircuitState,
  GuardEvents,
  GuardedAction,
  GuardOptions,
  GuardStats,
} from './types.js';

/** The limiter's events a guard re-emits. */
type ForwardedEvent = 'limit' | 'reject' | 'release';

/**
 * A circuit breaker (opossum) layered over a limiter. Per call: OPEN → fail fast without touching the
 * limiter (reason `open`); otherwise take a permit (a refusal goes to the fallback with reason
 * `limiter` and never counts as a breaker failure); then run the action with its own abort signal.
 * Create one with {@link guard}.
 */
export class Guard<A extends unknown[], R> extends EventEmitter<GuardEvents> {
  /** The limiter in front of the action. */
  readonly limiter: Limiter;
  /** The opossum instance (its state machine, rolling window, volume threshold, reset timeout). */
  readonly breaker: OpossumBreaker;
  /** What the guard's calls share. */
  readonly #parts: GuardParts;
  /** The `acquire` option, passed to the limiter with each call. */
  readonly #acquire:
    | AcquireOptions
    | ((...args: never[]) => AcquireOptions | undefined)
    | undefined;
  /** Whether the limiter is the guard's own (closed by `shutdown()`). */
  readonly #ownsLimiter: boolean;
  /** The limiter events forwarded so far, each with what stops it. */
  readonly #forwarded = new Map<ForwardedEvent, () => void>();

  /**
   * Use {@link guard}.
   * @throws TypeError/RangeError for a bad option (before anything is built).
   */
  constructor(action: GuardedAction<A, R>, options: GuardOptions<A, R> = {}) {
    super();
    checkAction(action);
    const o = checkGuardOptions(options);
    const clock = o.clock === undefined ? systemClock : new MonotonicClock(o.clock);
    this.#acquire = o.acquire;
    this.#ownsLimiter = o.limiter === undefined;
    this.limiter = o.limiter ?? ownLimiter(o);
    const circuit = new OpossumCircuit(
      o,
      (from, to) => this.#stateChanged(from, to),
      (error) => this.emit('error', error),
    );
    this.breaker = circuit.breaker;
    this.#parts = {
      action: action as GuardParts['action'],
      classify: o.classify,
      clock,
      circuit,
      fallback: new Fallback(o.fallback, circuit, this),
      timeoutMs: o.timeoutMs,
      timeouts: o.timeoutMs === false ? undefined : new TimeoutList(clock),
      inFlight: new CallsInFlight(),
      latency: new LatencyWindow(o.latencyWindowMs, o.latencyBuckets, () => clock.now()),
      holds: new Holds(this.limiter),
      shut: false,
    };
  }

  /** The circuit state. */
  get state(): CircuitState {
    return this.#parts.circuit.state;
  }

  /**
   * Calls the action through the breaker and the limiter.
   * @returns the action's result, or the fallback's.
   * @throws (rejects) `CircuitOpenError`, `LimitExceededError`, `CallTimeoutError` or the action's
   *   error when there is no fallback; whatever the fallback throws when there is one.
   */
  fire(...args: A): Promise<R> {
    const parts = this.#parts;
    if (parts.shut) return Promise.reject(shutDownError());
    let acquire = this.#acquire;
    if (typeof acquire === 'function') {
      try {
        acquire = callAcquireOptions(acquire, args);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const circuit = parts.circuit;
    let trial = false;
    if (circuit.state !== 'CLOSED') {
      // OPEN, or HALF_OPEN with every trial slot taken: fail fast, without touching the limiter.
      if (!circuit.admitTrial()) {
        return parts.fallback.answer(
          'open',
          args,
          new CircuitOpenError(circuit.state),
        ) as Promise<R>;
      }
      trial = true;
    }
    return new Promise<R>((resolve) => {
      const call = new Call(parts, args, trial, resolve as (answer: unknown) => void);
      parts.timeouts?.add(call);
      // A permit now, or later `call.granted(permit)` or `call.refused(error)`.
      const permit = this.limiter.acquireWith(call, acquire);
      if (permit !== undefined) call.granted(permit);
    });
  }

  /** Counts, limiter snapshot and latency percentiles. */
  stats(): GuardStats {
    const { circuit, latency } = this.#parts;
    return {
      state: circuit.state,
      breaker: circuit.stats(),
      limiter: this.limiter.snapshot(),
      latency: latency.summary(),
      trials: circuit.trials,
    };
  }

  /**
   * Shuts the guard down: no new calls; calls still waiting for a permit leave the limiter's queue (a
   * shared one's too), and every call in flight is aborted (its signal fires) and its permit
   * released; every caller not answered yet is rejected at once (code `SHUTDOWN`). opossum is shut
   * down; the timeout timer and every listener the guard added are removed; an own limiter is
   * closed. An action that ignores its signal keeps running, but holds nothing of the guard's any
   * more.
   */
  async shutdown(): Promise<void> {
    const parts = this.#parts;
    if (parts.shut) return;
    parts.shut = true;
    this.#shed(); // (each is answered SHUTDOWN)
    parts.timeouts?.clear();
    Call.shutDown(parts.inFlight.takeAll(), shutDownError());
    for (const stop of this.#forwarded.values()) stop();
    this.#forwarded.clear();
    parts.circuit.shutdown();
    if (this.#ownsLimiter) await this.limiter.close();
  }

  /**
   * Subscribes like eventemitter3's `on`. The limiter's `limit`, `reject` and `release` events are
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

  /**
   * Emits one of the guard's events. A listener that throws never throws into the guard, the limiter
   * or opossum, so the guard's state stays consistent and every caller is answered: its error is
   * reported as an `error` event. An `error` nobody listens to here goes to the limiter's `error`
   * event; without a listener there either (or when an `error` listener throws), it is rethrown on a
   * microtask, as the limiter does with its own listeners' errors.
   */
  override emit<T extends EventEmitter.EventNames<GuardEvents>>(
    event: T,
    ...args: EventEmitter.EventArgs<GuardEvents, T>
  ): boolean {
    if (event === 'error') {
      this.#report(args[0]);
      return true;
    }
    try {
      return super.emit(event, ...args);
    } catch (error) {
      this.#report(error);
      return true;
    }
  }

  /** Reports `error` (see {@link Guard.emit}). */
  #report(error: unknown): void {
    try {
      if (this.listenerCount('error') > 0) {
        super.emit('error', error);
        return;
      }
      if (this.limiter.listenerCount('error') > 0) {
        this.limiter.emit('error', error);
        return;
      }
    } catch {
      // An error listener that throws: rethrown below, like any listener error nobody handles.
    }
    queueMicrotask(() => {
      throw error;
    });
  }

  /** Forwards the limiter's `event` (once). */
  #forward(event: string): void {
    if (event !== 'limit' && event !== 'reject' && event !== 'release') return;
    if (this.#forwarded.has(event)) return;
    const limiter = this.limiter as unknown as EventEmitter;
    const relay = (payload: unknown): void => {
      this.emit(event, payload as never);
    };
    limiter.on(event, relay);
    this.#forwarded.set(event, () => limiter.off(event, relay));
  }

  /**
   * The circuit changed state. On opening, every call still waiting for a permit leaves the limiter's
   * queue and is answered `open`, all synchronously: none runs against the failing dependency.
   */
  #stateChanged(from: CircuitState, to: CircuitState): void {
    if (to === 'OPEN') this.#shed();
    if (this.listenerCount('state') > 0) this.emit('state', { from, to });
  }

  /**
   * Takes this guard's calls out of the limiter's queue, oldest first (a shared limiter holds other
   * requests too): each is refused with cause {@link SHED} (answered `open`, or `SHUTDOWN` once shut
   * down), all synchronously.
   */
  #shed(): void {
    const parts = this.#parts;
    this.limiter.cancelRequests(
      (request) => request instanceof Call && request.parts === parts,
      SHED,
    );
  }
}

/**
 * Guards `action` with a circuit breaker (opossum) over an adaptive limiter, with fallbacks.
 *
 * @param action - called as `action(ctx, ...args)`; `ctx.signal` aborts when the call's `timeoutMs`
 *   (counted from `fire()`) runs out, and on shutdown.
 * @throws TypeError/RangeError for an action that is not a function or a bad option.
 * @example
 * ```ts
 * const getUser = guard((ctx, id: string) => fetch(`${API}/users/${id}`, { signal: ctx.signal }).then((r) => r.json()), {
 *   timeoutMs: 2000,
 *   probeSlots: 3,
 *   fallback: (_cause, id) => cache.get(id),
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
