import { EventEmitter } from 'eventemitter3';
import {
  type AcquireOptions,
  type Clock,
  defaultClassify,
  formatValue,
  type LimitExceededError,
  Limiter,
  LimitsError,
  type Permit,
  type QueueTicket,
  systemClock,
  VegasLimit,
} from 'limits-core';
import { Call, type CallOwner, noop } from './Call.js';
import type { CallContext } from './CallContext.js';
import { CallList } from './CallList.js';
import type { Circuit, CircuitOwner } from './circuit/Circuit.js';
import { OpossumCircuit } from './circuit/OpossumCircuit.js';
import { CallTimeoutError, CircuitOpenError } from './errors.js';
import { LatencyWindow } from './LatencyWindow.js';
import { forwardLimiterEvent, reportListenerError } from './listeners.js';
import type { OpossumBreaker } from './opossum.js';
import { checkGuardOptions } from './options.js';
import { TimeoutList } from './TimeoutList.js';
import type {
  CircuitState,
  FallbackCause,
  FallbackReason,
  GuardClassify,
  GuardEvents,
  GuardedAction,
  GuardOptions,
  GuardOutcome,
  GuardStats,
} from './types.js';

const EMPTY_ARGS: unknown[] = [];

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

/**
 * A circuit breaker (opossum) layered over a limiter. Per call: OPEN → fail fast without touching the
 * limiter (reason `open`); otherwise take a permit (a refusal goes to the fallback with reason
 * `limit` and never counts as a breaker failure); then run the action with its own abort signal.
 * Create one with {@link guard}.
 */
export class Guard<A extends unknown[], R>
  extends EventEmitter<GuardEvents>
  implements CallOwner, CircuitOwner
{
  /** The limiter in front of the action. */
  readonly limiter: Limiter;
  /** The opossum instance (its state machine, rolling window, volume threshold, reset timeout). */
  readonly breaker: OpossumBreaker;
  readonly #circuit: Circuit;
  readonly #action: GuardedAction<A, R>;
  readonly #fallback: GuardOptions<A, R>['fallback'];
  readonly #classify: GuardClassify | undefined;
  readonly #acquire: AcquireOptions | undefined;
  readonly #timeoutMs: number | false;
  readonly #clock: Clock;
  readonly #timeouts: TimeoutList;
  readonly #latency: LatencyWindow;
  readonly #ownsLimiter: boolean;
  /** Calls in flight. */
  readonly #calls = new CallList();
  /**
   * Calls waiting in the limiter's queue, oldest first: when the circuit opens, each is taken out of
   * the queue (its `QueueTicket`) and answered `open`. Filing a call costs a few field writes;
   * calls that get a permit at once are never filed. (An AbortSignal passed with each queued acquire
   * would do it through public API, but it made every queued call carry the limiter's per-waiter
   * extras: 25 % more per call with 10,000 queued, and Node's EventTarget scans its listener list on
   * every add, so one signal shared by the queue was quadratic.)
   */
  readonly #queued = new CallList();
  readonly #unsubscribe: Array<() => void> = [];
  readonly #forwarding = new Set<string>();
  #shut = false;
  /**
   * The clock as read by the settling call whose release is starting the next ones (`NaN` outside):
   * a call granted in that same synchronous stretch starts at that time, one clock read less per call.
   */
  #freshNow = Number.NaN;
  /** Start time of the last call started: starts never go backwards (the timeout list relies on it). */
  #lastStart = -Infinity;
  /**
   * The answer of a call the limiter refused at admission, inside `acquireWith` (taken at once by
   * `fire`, which had no promise for that caller yet).
   */
  #refusal: Promise<R> | undefined = undefined;
  /** The resolve function `#capture` just received (taken at once by `fire`). */
  #captured: ((value: unknown) => void) | undefined = undefined;
  /** One shared promise executor instead of a closure per call. */
  readonly #capture = (resolve: (value: unknown) => void): void => {
    this.#captured = resolve;
  };

  /**
   * @internal Use {@link guard}.
   * @throws TypeError/RangeError for a bad option (before anything is built).
   */
  constructor(action: GuardedAction<A, R>, options: GuardOptions<A, R> = {}) {
    super();
    if (typeof action !== 'function') {
      throw new TypeError(`limits: guard(action) needs a function, got ${formatValue(action)}`);
    }
    const o = checkGuardOptions(options);
    this.#action = action;
    this.#fallback = o.fallback as GuardOptions<A, R>['fallback'];
    this.#classify = o.classify as GuardClassify | undefined;
    this.#acquire = o.acquire;
    this.#clock = o.clock ?? systemClock;
    this.#timeoutMs = o.timeout;
    this.#ownsLimiter = o.limiter === undefined;
    // The own limiter checks its options itself (and starts no timer until used).
    this.limiter =
      o.limiter ??
      new Limiter({
        limit: new VegasLimit(),
        probeSlots: o.probeSlots,
        // The guard completes every permit it takes (no user code holds one), so its own limiter
        // needs no leak tracking; `limit: { trackLeaks }` still overrides it.
        trackLeaks: 'off',
        ...(o.clock === undefined ? {} : { clock: o.clock }),
        ...o.limit,
      });
    const circuit = new OpossumCircuit(this, o);
    this.#circuit = circuit;
    this.breaker = circuit.breaker;
    this.#latency = new LatencyWindow(o.latencyWindowMs, o.latencyBuckets, () => this.#clock.now());
    this.#timeouts = new TimeoutList(this.#clock, o.timeout === false ? Infinity : o.timeout);
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
    // Through #emit: a guard listener's error is the guard's to report, not the limiter's.
    const off = forwardLimiterEvent(this.limiter, event, (payload) =>
      this.#emit(event, payload as never),
    );
    this.#unsubscribe.push(off);
  }

  /** The circuit state. */
  get state(): CircuitState {
    return this.#circuit.state;
  }

  /**
   * Calls the action through the breaker and the limiter.
   * @returns the action's result, or the fallback's.
   * @throws (rejects) `CircuitOpenError`, `LimitExceededError`, `CallTimeoutError` or the action's
   *   error when there is no fallback; whatever the fallback throws when there is one.
   */
  fire(...args: A): Promise<R> {
    if (this.#shut) return Promise.reject(new LimitsError('SHUTDOWN', 'limits: guard shut down'));
    const circuit = this.#circuit;
    let trial = false;
    if (circuit.state !== 'CLOSED') {
      if (!circuit.admitTrial())
        return this.#fail('open', args, new CircuitOpenError(circuit.state));
      trial = true;
    }
    // A call without arguments keeps the shared empty array: its rest array dies young.
    const call = new Call(this, trial, args.length === 0 ? EMPTY_ARGS : args, circuit.episode);
    // (The `acquire` option was checked at construction: this does not throw.)
    const permit = this.limiter.acquireWith(call, this.#acquire);
    if (permit !== undefined) return this.#start(call, permit) as Promise<R>;
    const refusal = this.#refusal;
    if (refusal !== undefined) {
      // Refused at admission, before acquireWith returned (see `_refused`).
      this.#refusal = undefined;
      return refusal;
    }
    // Queued: the call itself waits in the limiter's queue; one promise answers the caller.
    const promise = new Promise<R>(this.#capture as (resolve: (value: R) => void) => void);
    call.resolve = this.#captured as (value: unknown) => void;
    this.#captured = undefined;
    return promise;
  }

  /** @internal The limiter queued `call`: filed with its ticket, to be shed if the circuit opens. */
  _queued(call: Call, ticket: QueueTicket): void {
    call.permit = ticket;
    this.#queued.append(call);
  }

  /**
   * Takes a call that left the limiter's queue off the guard's list of queued calls (a queued call
   * not started yet has a `permit` only while filed there).
   */
  #leaveQueue(call: Call): void {
    if (call.permit === undefined) return;
    call.permit = undefined;
    this.#queued.remove(call);
  }

  /** @internal The limiter granted a queued call its permit. */
  _granted(call: Call, permit: Permit): void {
    this.#leaveQueue(call);
    if (this.#shut) {
      // A shared limiter outlives the guard: its late grant goes straight back.
      permit.ignore();
      this.#circuit.endTrial(call);
      call.answered = true;
      call.resolve(Promise.reject(new LimitsError('SHUTDOWN', 'limits: guard shut down')));
      return;
    }
    if (this.#circuit.state === 'OPEN') {
      // Granted while the circuit was opening (by a waiter shed just before): it must not run.
      permit.ignore();
      this.#circuit.endTrial(call);
      call.answered = true;
      call.resolve(this.#fail('open', call.args as A, new CircuitOpenError('OPEN')));
      return;
    }
    this.#start(call, permit);
  }

  /**
   * @internal The limiter refused a queued call: reason `limit`, never a breaker failure; or the
   * circuit opened while it waited: reason `open`.
   */
  _refused(call: Call, error: LimitExceededError): void {
    this.#leaveQueue(call);
    this.#circuit.endTrial(call);
    call.answered = true;
    const answer = call.shed
      ? this.#fail('open', call.args as A, new CircuitOpenError('OPEN'))
      : this.#fail('limit', call.args as A, error);
    // Refused at admission: `fire` has no promise for the caller yet and returns this one.
    if (call.resolve === noop) this.#refusal = answer;
    else call.resolve(answer);
  }

  /** Counts, limiter snapshot and latency percentiles. */
  stats(): GuardStats {
    return {
      state: this.#circuit.state,
      breaker: this.#circuit.stats(),
      limiter: this.limiter.snapshot(),
      latency: this.#latency.summary(),
      trials: this.#circuit.trials,
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
    // Newest first.
    for (let call = this.#calls.tail; call !== undefined; call = call.cprev) {
      call.live = false;
      call._abort(error);
      if (!call.answered) {
        call.answered = true;
        call.resolve(Promise.reject(error));
      }
      // Calls in flight have started: `permit` is their permit.
      (call.permit as Permit).ignore();
    }
    this.#calls.clear();
    for (const off of this.#unsubscribe) off();
    this.#circuit.shutdown();
    if (this.#ownsLimiter) await this.limiter.close();
  }

  /**
   * Runs the action of `call` under `permit`. A call that waited in the queue already has its caller's
   * promise (`call.resolve`): it is answered through it, and this returns `undefined`. A call that got
   * its permit at once gets its promise here (returned), derived from the action's when there is no
   * timeout to answer it earlier.
   */
  #start(call: Call, permit: Permit): Promise<R> | undefined {
    call.permit = permit;
    const queued = call.resolve !== noop;
    const args = call.args as A;
    let result: R | PromiseLike<R>;
    let thenable: boolean;
    try {
      // A call without arguments skips the spread (a builtin call of its own).
      result =
        args.length === 0
          ? (this.#action as unknown as (ctx: CallContext) => R | PromiseLike<R>)(call)
          : this.#action(call, ...args);
      // (Inside the try: a `then` getter may throw too.)
      thenable = isThenable(result);
    } catch (error) {
      // Threw before starting anything: the permit goes back at once, the breaker does not count it.
      permit.ignore();
      this.#circuit.endTrial(call);
      call.answered = true;
      const answer = this.#fail('error', args, error);
      if (!queued) return answer;
      call.resolve(answer);
      return undefined;
    }
    if (!thenable) {
      this.#track(call);
      call.answered = true;
      this.#settled(call, undefined, result);
      if (!queued) return Promise.resolve(result);
      call.resolve(result);
      return undefined;
    }
    if (this.#timeoutMs === false && !queued) {
      // Without a timeout the caller is answered exactly when the action settles: derive its promise
      // from the action's instead of making a second one.
      this.#track(call);
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
    let promise: Promise<R> | undefined;
    if (!queued) {
      promise = new Promise<R>(this.#capture as (resolve: (value: R) => void) => void);
      call.resolve = this.#captured as (value: unknown) => void;
      this.#captured = undefined;
    }
    this.#track(call);
    try {
      (result as PromiseLike<R>).then(
        (value) => this.#settled(call, undefined, value),
        (error: unknown) =>
          this.#settled(call, error ?? new Error('action rejected with undefined'), undefined),
      );
    } catch (error) {
      // A thenable whose then() throws: the action failed with that error (as `await` would have
      // it), and its caller is answered now, through `call.resolve`.
      this.#settled(call, error ?? new Error('then() threw undefined'), undefined);
    }
    return promise;
  }

  /** Lists a started call as in flight (and in the timeout list, with a timeout). */
  #track(call: Call): void {
    const fresh = this.#freshNow;
    const start = Number.isNaN(fresh) ? this.#clock.now() : Math.max(fresh, this.#lastStart);
    this.#lastStart = start;
    call.start = start;
    this.#calls.append(call);
    if (this.#timeoutMs !== false) this.#timeouts.add(call);
  }

  /** The action settled (possibly long after its caller timed out). */
  #settled(call: Call, error: unknown, value: unknown): void {
    if (!call.live) return; // shut down meanwhile: already released
    call.live = false;
    this.#calls.remove(call);
    this.#timeouts.remove(call);
    const now = this.#clock.now();
    this.#latency.record(now - call.start, now);
    const permit = call.permit as Permit;
    if (call.timedOut) {
      // Counted as a breaker failure when it timed out; now the permit can go back, as congestion.
      permit.dropped();
      return;
    }
    let outcome: GuardOutcome | undefined;
    try {
      outcome = this.#classify?.(error, value);
    } catch {
      outcome = undefined;
    }
    outcome ??= defaultOutcome(error);
    // Releasing may start queued calls right here: they take `now` as their start time.
    const outer = this.#freshNow;
    this.#freshNow = now;
    try {
      if (outcome === 'success') permit.success();
      else if (outcome === 'dropped') permit.dropped();
      else permit.ignore();
    } finally {
      this.#freshNow = outer;
    }
    if (outcome === 'success') this.#circuit.success(call);
    else if (outcome !== 'ignore') this.#circuit.failure(call, error);
    else this.#circuit.endTrial(call);
    // A caller already answered (by a derived promise, or at its timeout) is not answered again.
    if (call.answered) return;
    call.answered = true;
    if (error === undefined) call.resolve(value);
    else call.resolve(this.#fail('error', call.args as A, error));
  }

  /** @internal The call's timeout elapsed: answer the caller now, keep the permit until it ends. */
  _timeout(call: Call): void {
    if (call.answered) return;
    call.timedOut = true;
    call.answered = true;
    const error = new CallTimeoutError(this.#timeoutMs as number);
    call._abort(error);
    this.#circuit.failure(call, error);
    call.resolve(this.#fail('timeout', call.args as A, error));
  }

  /**
   * Answers a call that did not succeed: the fallback's result, or `error` without a fallback. A
   * fallback that returns is counted in the circuit's `fallbacks` (as opossum's own fallback is).
   */
  #fail(reason: FallbackReason, args: A, error: unknown): Promise<R> {
    const fallback = this.#fallback;
    const listened = this.listenerCount('fallback') > 0;
    if (fallback === undefined && !listened) return Promise.reject(error);
    const cause = { reason, error } as FallbackCause;
    if (listened) this.#emit('fallback', cause);
    if (fallback === undefined) return Promise.reject(error);
    let result: R | PromiseLike<R>;
    try {
      result = fallback(cause, ...args);
    } catch (fallbackError) {
      return Promise.reject(fallbackError);
    }
    this.#circuit.fallback(result, error);
    return Promise.resolve(result);
  }

  /**
   * @internal The circuit changed state (a new episode): on opening, every call still waiting for a
   * permit leaves the limiter's queue, oldest first, and is answered `open` (through `_refused`), all
   * synchronously. No call can queue meanwhile (the circuit is OPEN); a waiter granted by a refusal
   * before it is answered `open` by `_granted`.
   */
  _stateChanged(from: CircuitState, to: CircuitState): void {
    if (to === 'OPEN') {
      for (let call = this.#queued.head; call !== undefined; call = this.#queued.head) {
        const ticket = call.permit as QueueTicket;
        this.#leaveQueue(call);
        call.shed = true;
        ticket.cancel();
      }
    }
    if (this.listenerCount('state') > 0) this.#emit('state', { from, to });
  }

  /**
   * Emits one of the guard's events. Every event the guard emits goes through here (callers check
   * that someone listens first): a listener that throws is reported (`_report`), never thrown into
   * the guard, the limiter or opossum, so the guard's state stays consistent and every caller is
   * answered.
   */
  #emit<E extends Exclude<keyof GuardEvents, 'error'>>(
    event: E,
    payload: Parameters<GuardEvents[E]>[0],
  ): void {
    try {
      (this.emit as (e: E, p: unknown) => boolean)(event, payload);
    } catch (error) {
      this._report(error);
    }
  }

  /** @internal Reports a listener's error (see {@link reportListenerError}). */
  _report(error: unknown): void {
    reportListenerError(this, this.limiter, error);
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
