import {
  type AcquireOptions,
  type Classify,
  type Clock,
  defaultClassify,
  formatValue,
  type LimitExceededError,
  type Limiter,
  LimitsError,
  type Outcome,
  type Permit,
  type QueueTicket,
  systemClock,
} from 'limits-core';
import { Call, CallFlag, type CallOwner, callerPromise, noop } from './Call.js';
import type { CallContext } from './CallContext.js';
import type { Circuit, CircuitOwner } from './circuit/Circuit.js';
import { OpossumCircuit } from './circuit/OpossumCircuit.js';
import { CallTimeoutError, CircuitOpenError } from './errors.js';
import { Fallback } from './Fallback.js';
import { GuardEmitter } from './GuardEmitter.js';
import { InFlightCalls } from './InFlightCalls.js';
import { isThenable } from './isThenable.js';
import { LatencyWindow } from './LatencyWindow.js';
import { MonotonicClock } from './MonotonicClock.js';
import type { OpossumBreaker } from './opossum.js';
import { checkGuardOptions, ownLimiter, ownOnSystemClock } from './options.js';
import type { PermitHold } from './PermitHold.js';
import type { CircuitState, GuardedAction, GuardOptions, GuardStats } from './types.js';

const EMPTY_ARGS: unknown[] = [];
const shutDownError = () => new LimitsError('SHUTDOWN', 'limits: guard shut down');
/** The cause of the refusal of a queued call taken out of the queue by the circuit opening. */
const SHED: unique symbol = Symbol('limits: shed when the circuit opened');

/**
 * A circuit breaker (opossum) layered over a limiter. Per call: OPEN → fail fast without touching the
 * limiter (reason `open`); otherwise take a permit (a refusal goes to the fallback with reason
 * `limit` and never counts as a breaker failure); then run the action with its own abort signal.
 * Create one with {@link guard}.
 */
export class Guard<A extends unknown[], R> extends GuardEmitter implements CallOwner, CircuitOwner {
  /** The limiter in front of the action. */
  readonly limiter: Limiter;
  /** The opossum instance (its state machine, rolling window, volume threshold, reset timeout). */
  readonly breaker: OpossumBreaker;
  readonly #circuit: Circuit;
  readonly #action: GuardedAction<A, R>;
  readonly #fallback: Fallback<A, R>;
  readonly #classify: Classify | undefined;
  readonly #acquire: AcquireOptions | undefined;
  readonly #timeoutMs: number | false;
  readonly #clock: Clock;
  readonly #latency: LatencyWindow;
  readonly #ownsLimiter: boolean;
  /** Calls in flight. */
  readonly #calls: InFlightCalls;
  #shut = false;
  /** The answer of a call refused at admission, inside `acquireWith` (taken at once by `fire`). */
  #refusal: Promise<R> | undefined = undefined;

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
    this.#classify = o.classify as Classify | undefined;
    this.#acquire = o.acquire;
    this.#clock = o.clock === undefined ? systemClock : new MonotonicClock(o.clock);
    this.#timeoutMs = o.timeoutMs;
    this.#ownsLimiter = o.limiter === undefined;
    this.limiter = o.limiter ?? ownLimiter(o, o.clock);
    const circuit = new OpossumCircuit(this, o);
    this.#circuit = circuit;
    this.breaker = circuit.breaker;
    this.#fallback = new Fallback<A, R>(
      o.fallback as GuardOptions<A, R>['fallback'],
      circuit,
      () => this.listenerCount('fallback') > 0,
      (cause) => this._emitSafely('fallback', cause),
    );
    this.#calls = new InFlightCalls(this.#clock, o.timeoutMs, this.limiter, ownOnSystemClock(o));
    this.#latency = new LatencyWindow(o.latencyWindowMs, o.latencyBuckets, () => this.#clock.now());
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
  fire(...args: A): Promise<R>;
  fire(): Promise<R> {
    // No rest parameter (an array per call, an empty one too, wherever fire() is not inlined).
    // biome-ignore lint/complexity/noArguments: read in place, never materialised
    const n = arguments.length;
    const args = (n === 0 ? EMPTY_ARGS : new Array(n)) as A;
    // biome-ignore lint/complexity/noArguments: read in place, never materialised
    for (let i = 0; i < n; i++) args[i] = arguments[i];
    if (this.#shut) return Promise.reject(shutDownError());
    const circuit = this.#circuit;
    let trial = false;
    if (circuit.state !== 'CLOSED') {
      if (!circuit.admitTrial())
        return this.#fallback.answer('open', args, new CircuitOpenError(circuit.state));
      trial = true;
    }
    const call = new Call(this, trial, args, circuit.episode);
    // (The `acquire` option was checked at construction: this does not throw.)
    const permit = this.limiter.acquireWith(call, this.#acquire);
    if (permit !== undefined) {
      const fired = this.#timeoutMs === false ? Number.NaN : this.#calls.budget(call, permit);
      return this.#start(call, permit, fired) as Promise<R>;
    }
    const refusal = this.#refusal;
    if (refusal !== undefined) {
      // Refused at admission, before acquireWith returned (see `_refused`).
      this.#refusal = undefined;
      return refusal;
    }
    // Queued: the call waits in the limiter's queue; one promise answers the caller. Its budget
    // counts from the end of this synchronous run (`budgetLater`; it leaves the timeout list on every
    // path). (A call a selector granted during admission runs already: LIVE, not answered.)
    if (this.#timeoutMs !== false && !call.is(CallFlag.ANSWERED)) this.#calls.budgetLater(call);
    return callerPromise<R>(call);
  }

  /** @internal The action of `call` called `ctx.hold()` (see `CallContext.hold`). */
  _hold(call: Call): PermitHold {
    return this.#calls.holds.hold(call);
  }

  /** @internal The limiter queued `call`: it keeps its ticket (its timeout cancels the wait). */
  _queued(call: Call, ticket: QueueTicket): void {
    call.permit = ticket;
    call.mark(CallFlag.WAITING);
  }

  /**
   * @internal The limiter granted a queued call its permit. (Small, with the rare cases in
   * `#dismiss`: V8 inlines it, and the two calls that lead here, into the limiter's dispatch loop.)
   */
  _granted(call: Call, permit: Permit): void {
    call.unmark(CallFlag.WAITING);
    if (this.#shut || this.#circuit.state === 'OPEN') this.#dismiss(call, permit);
    else this.#start(call, permit);
  }

  /**
   * A granted call that must not run: its permit goes back unused. Its caller gets `SHUTDOWN` (a
   * shared limiter outlives the guard: a late grant goes straight back), or the `open` answer (granted
   * while the circuit was opening, by a waiter shed just before).
   */
  #dismiss(call: Call, permit: Permit): void {
    const answer = this.#shut
      ? Promise.reject<R>(shutDownError())
      : this.#fallback.answer('open', call.args as A, new CircuitOpenError('OPEN'));
    permit.ignore();
    this.#calls.untime(call);
    this.#circuit.endTrial(call);
    call.mark(CallFlag.ANSWERED);
    call.resolve(answer);
  }

  /**
   * @internal The limiter refused a call (at admission or while it waited): reason `limit`; or the
   * circuit opened while it waited: `open`; or its `timeoutMs` budget ran out while it waited:
   * `timeout` (the `CallTimeoutError` is the refusal's cause). None reached the downstream: none is a
   * breaker failure, and a trial frees its slot only in its own HALF_OPEN episode.
   */
  _refused(call: Call, error: LimitExceededError): void {
    call.unmark(CallFlag.WAITING);
    this.#calls.untime(call);
    this.#circuit.endTrial(call);
    call.mark(CallFlag.ANSWERED);
    const args = call.args as A;
    const answer = this.#shut
      ? Promise.reject<R>(shutDownError())
      : call.is(CallFlag.TIMED_OUT)
        ? this.#fallback.answer('timeout', args, error.cause as CallTimeoutError)
        : error.reason === 'aborted' && error.cause === SHED
          ? this.#fallback.answer('open', args, new CircuitOpenError('OPEN'))
          : this.#fallback.answer('limit', args, error);
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
   * permit released; with a `timeoutMs` its caller is rejected at once (code `SHUTDOWN`), without one
   * the caller's promise follows the action (derived from it), which the aborted signal should end.
   * opossum is shut down; the timeout timer and list and every listener the guard added are removed;
   * an own limiter is closed. Calls still waiting for a permit leave the limiter's queue at once (a
   * shared one too) and are answered `SHUTDOWN`. An action that ignores its signal keeps running,
   * but holds nothing of the guard's any more.
   */
  async shutdown(): Promise<void> {
    if (this.#shut) return;
    this.#shut = true;
    this.#shed(); // (each queued call is answered SHUTDOWN through `_refused`)
    this.#calls.abortAll(shutDownError());
    for (const off of this._unsubscribe) off();
    this.#circuit.shutdown();
    if (this.#ownsLimiter) await this.limiter.close();
  }

  /**
   * Runs the action of `call` under `permit`. A call that waited in the queue already has its caller's
   * promise (`call.resolve`): it is answered through it, and this returns `undefined`. A call that got
   * its permit at once gets its promise here (returned), derived from the action's when there is no
   * timeout to answer it earlier. `fired`: the budget's start of a timed call granted in `fire()`.
   */
  #start(call: Call, permit: Permit, fired = Number.NaN): Promise<R> | undefined {
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
      this.#calls.untime(call);
      this.#circuit.endTrial(call);
      call.mark(CallFlag.ANSWERED);
      const answer = this.#fallback.answer('error', args, error);
      if (!queued) return answer;
      call.resolve(answer);
      return undefined;
    }
    if (!thenable) {
      this.#calls.track(call, fired);
      call.mark(CallFlag.ANSWERED);
      this.#settled(call, undefined, result);
      if (!queued) return Promise.resolve(result);
      call.resolve(result);
      return undefined;
    }
    if (this.#timeoutMs === false && !queued) {
      // Without a timeout the caller is answered exactly when the action settles: derive its promise
      // from the action's instead of making a second one.
      this.#calls.track(call, fired);
      call.mark(CallFlag.ANSWERED);
      return Promise.resolve(result).then(
        (value) => {
          this.#settled(call, undefined, value);
          return value;
        },
        (error: unknown) => {
          this.#settled(call, error ?? new Error('action rejected with undefined'), undefined);
          return this.#fallback.answer('error', args, error);
        },
      );
    }
    let promise: Promise<R> | undefined;
    if (!queued) {
      promise = callerPromise<R>(call);
    }
    this.#calls.track(call, fired);
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

  /** The action settled (possibly long after its caller timed out). */
  #settled(call: Call, error: unknown, value: unknown): void {
    if (!call.is(CallFlag.LIVE)) return; // shut down meanwhile: already released
    call.unmark(CallFlag.LIVE);
    const held = this.#calls.untrack(call, error === undefined);
    const now = this.#clock.now();
    this.#latency.record(now - call.start, now);
    const permit = call.permit as Permit;
    if (call.is(CallFlag.TIMED_OUT)) {
      // Counted as a breaker failure when it timed out; now the permit can go back, as congestion.
      permit.dropped();
      return;
    }
    let outcome: Outcome | undefined;
    try {
      outcome = this.#classify?.(error, value);
    } catch {
      outcome = undefined;
    }
    outcome ??= defaultClassify(error);
    // (A held permit goes back at its hold's release.)
    this.#calls.release(call, held, outcome, now);
    if (outcome === 'success') this.#circuit.success(call);
    else if (outcome !== 'ignore') this.#circuit.failure(call, error);
    else this.#circuit.endTrial(call);
    // A caller already answered (by a derived promise, or at its timeout) is not answered again.
    if (call.is(CallFlag.ANSWERED)) return;
    call.mark(CallFlag.ANSWERED);
    if (error === undefined) call.resolve(value);
    else call.resolve(this.#fallback.answer('error', call.args as A, error));
  }

  /**
   * @internal The call's `timeoutMs` budget (from `fire()`) ran out. Still waiting for a permit: it
   * leaves the limiter's queue now and its caller is answered `timeout` (through `_refused`; not a
   * breaker failure, not a limiter sample: it never reached the downstream). Running: its caller is
   * answered now, its signal aborts, the breaker counts a failure, and it keeps its permit until the
   * action ends (then released as dropped).
   */
  _timeout(call: Call): void {
    if (call.is(CallFlag.ANSWERED)) return;
    call.mark(CallFlag.TIMED_OUT);
    const error = new CallTimeoutError(this.#timeoutMs as number);
    if (call.is(CallFlag.WAITING)) {
      (call.permit as QueueTicket).cancel(error);
      return;
    }
    call.mark(CallFlag.ANSWERED);
    call._abort(error);
    this.#circuit.failure(call, error);
    call.resolve(this.#fallback.answer('timeout', call.args as A, error));
  }

  /**
   * @internal The circuit changed state (a new episode): on opening, every call still waiting for a
   * permit leaves the limiter's queue and is answered `open` (through `_refused`; a waiter granted by
   * a refusal meanwhile, through `_granted`), all synchronously. No call can queue meanwhile.
   */
  _stateChanged(from: CircuitState, to: CircuitState): void {
    if (to === 'OPEN') this.#shed();
    if (this.listenerCount('state') > 0) this._emitSafely('state', { from, to });
  }

  /**
   * Takes this guard's calls out of the limiter's queue, oldest first (a shared limiter holds other
   * requests too): each is answered through `_refused` (`open`, or `SHUTDOWN` once shut down), all
   * synchronously; a waiter granted by a refusal meanwhile goes through `_granted`.
   */
  #shed(): void {
    this.limiter.cancelRequests(
      (request) => request instanceof Call && request.owner === this,
      SHED,
    );
  }
}

/**
 * Guards `action` with a circuit breaker (opossum) over an adaptive limiter, with fallbacks.
 *
 * @param action - called as `action(ctx, ...args)`; `ctx.signal` aborts when the call's `timeoutMs`
 *   budget (counted from `fire()`) runs out, and on shutdown.
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
