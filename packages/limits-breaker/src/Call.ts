import {
  type Classify,
  type Clock,
  defaultClassify,
  type LimitExceededError,
  type Limiter,
  OUTCOMES,
  type Outcome,
  type Permit,
  type PermitRequest,
  type QueueTicket,
} from 'limits-core';
import { CallContext, type PermitHold } from './CallContext.js';
import { CallTimeoutError, CircuitOpenError, holdStateError, shutDownError } from './errors.js';
import type { Fallback } from './Fallback.js';
import type { LatencyWindow } from './LatencyWindow.js';
import type { OpossumCircuit } from './OpossumCircuit.js';
import { checkOutcome } from './options.js';
import type { Timed, TimeoutList } from './TimeoutList.js';

/** What the calls of one guard share: built once by the guard, used by each of its calls. */
export interface GuardParts {
  /** The guarded action. */
  readonly action: (ctx: CallContext, ...args: unknown[]) => unknown;
  /** The `classify` option. */
  readonly classify: Classify | undefined;
  /** The guard's clock (monotonic). */
  readonly clock: Clock;
  /** The circuit each call reports its outcome to. */
  readonly circuit: OpossumCircuit;
  /** How a call that did not succeed is answered. */
  readonly fallback: Fallback;
  /** The `timeoutMs` option. */
  readonly timeoutMs: number | false;
  /** Calls from `fire()` until their caller is answered, by deadline; `undefined` without a timeout. */
  readonly timeouts: TimeoutList | undefined;
  /** Calls whose action has started and whose permit is not back yet (aborted by `shutdown()`). */
  readonly inFlight: CallsInFlight;
  /** Latency of settled calls. */
  readonly latency: LatencyWindow;
  /** The calls' holds (`ctx.hold()`). */
  readonly holds: Holds;
  /** Set by `shutdown()`. */
  shut: boolean;
}

/** What a call keeps of its hold: not the hold itself, so that a hold dropped unreleased is collected. */
interface HoldRecord {
  released: boolean;
  /** The outcome given to `release()`, if any. */
  outcome: Outcome | undefined;
}

/**
 * Where a call is, from `fire()` until its permit is back. Each phase carries exactly what it needs:
 * - `asking`: inside `limiter.acquireWith()`, which answers at once or queues the call;
 * - `queued`: waiting in the limiter's queue; `ticket` takes it out;
 * - `running`: the action runs under `permit` since `startedAt` (clock ms); the caller waits;
 * - `timedOut`: the caller was answered `timeout` and the breaker counted a failure; the action runs
 *   on and keeps its permit until it ends (then released as `dropped`);
 * - `held`: the action settled and its caller was answered, but `ctx.hold()` keeps the permit;
 * - `ended`: answered, and nothing held.
 */
export type CallState =
  | { readonly phase: 'asking' }
  | { readonly phase: 'queued'; readonly ticket: QueueTicket }
  | {
      readonly phase: 'running';
      readonly permit: Permit;
      readonly startedAt: number;
      hold: HoldRecord | undefined;
    }
  | {
      readonly phase: 'timedOut';
      readonly permit: Permit;
      readonly startedAt: number;
      hold: HoldRecord | undefined;
    }
  | {
      readonly phase: 'held';
      readonly permit: Permit;
      /** The outcome the action settled with (the permit's unless the hold's release gives one). */
      readonly outcome: Outcome;
      readonly hold: HoldRecord;
    }
  | { readonly phase: 'ended' };

/** The phases of a call whose action started and whose permit is not back yet. */
type Started = Extract<CallState, { readonly permit: Permit }>;

const ASKING: CallState = { phase: 'asking' };
const ENDED: CallState = { phase: 'ended' };

/** The cause of the refusal of a queued call that the guard takes out of the queue when the circuit opens. */
export const SHED: unique symbol = Symbol('limits: shed when the circuit opened');

/**
 * One guarded call, from `fire()` until its permit is back: the limiter's request for a permit (a
 * limits-core `PermitRequest`), the action's context (`CallContext`), an entry of the timeout list,
 * and what it tells the circuit (`trial`, `episode`). Every step of its life is a method here, moving
 * it from one {@link CallState} to the next.
 */
export class Call extends CallContext implements PermitRequest, Timed {
  /** Where the call is (see {@link CallState}). */
  state: CallState = ASKING;
  /** Clock ms when its `timeoutMs` runs out (counted from `fire()`); `Infinity` without a timeout. */
  readonly deadline: number;
  /**
   * The circuit episode (its count of state changes) the call was admitted in: only calls of the
   * current episode report to the circuit, and only trials of the current HALF_OPEN episode hold one
   * of its trial slots.
   */
  readonly episode: number;
  /** The call's signal, made on first read or at its abort. */
  #controller: AbortController | undefined = undefined;
  /** Its neighbours in the timeout list (see {@link TimeoutList}). */
  timeoutPrev: Timed | undefined = undefined;
  timeoutNext: Timed | undefined = undefined;
  /** Its neighbours among the calls in flight (see {@link CallsInFlight}). */
  flightPrev: Call | undefined = undefined;
  flightNext: Call | undefined = undefined;

  /**
   * @param trial - admitted as a HALF_OPEN trial.
   * @param resolve - answers the caller (a rejection resolves it with a rejected promise).
   */
  constructor(
    readonly parts: GuardParts,
    readonly args: unknown[],
    readonly trial: boolean,
    readonly resolve: (answer: unknown) => void,
  ) {
    super();
    this.episode = parts.circuit.episode;
    const timeoutMs = parts.timeoutMs;
    this.deadline = timeoutMs === false ? Infinity : parts.clock.now() + timeoutMs;
  }

  override get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  override hold(): PermitHold {
    const state = this.state;
    if (state.phase !== 'running' && state.phase !== 'timedOut') {
      throw holdStateError(
        'ctx.hold() must be called while the action runs, before it settles; this call has ended',
      );
    }
    if (state.hold !== undefined) {
      throw holdStateError('ctx.hold() was already called for this call');
    }
    const record: HoldRecord = { released: false, outcome: undefined };
    state.hold = record;
    return this.parts.holds.make(this, record);
  }

  /** The limiter queued the call (inside `acquireWith`). */
  queued(ticket: QueueTicket): void {
    this.state = { phase: 'queued', ticket };
  }

  /** The limiter granted the call its permit, at once or after it waited: the action runs. */
  granted(permit: Permit): void {
    const parts = this.parts;
    if (parts.shut || parts.circuit.state === 'OPEN') this.#dismiss(permit);
    else this.#run(permit);
  }

  /**
   * The limiter refused the call, at admission or while it waited (queue full, expired, …: reason
   * `limiter`), or the guard took it out of the queue when the circuit opened (`open`) or shut down.
   * It never reached the downstream: not a breaker failure. (A call the guard took out of the queue
   * at its timeout was answered already.)
   */
  refused(error: LimitExceededError): void {
    const phase = this.state.phase;
    if (phase !== 'asking' && phase !== 'queued') return;
    const parts = this.parts;
    this.#end();
    parts.circuit.endTrial(this);
    this.resolve(
      parts.shut
        ? Promise.reject(shutDownError())
        : error.cause === SHED
          ? parts.fallback.answer('open', this.args, new CircuitOpenError('OPEN'))
          : parts.fallback.answer('limiter', this.args, error),
    );
  }

  /**
   * The call's `timeoutMs` ran out (called by the timeout list). Still queued: it leaves the
   * limiter's queue and its caller is answered `timeout` (it never reached the downstream: neither a
   * breaker failure nor a limiter sample). Running: its caller is answered now, its signal aborts,
   * the breaker counts a failure, and it keeps its permit until the action ends.
   */
  expire(): void {
    const state = this.state;
    const parts = this.parts;
    const error = new CallTimeoutError(parts.timeoutMs as number);
    if (state.phase === 'queued') {
      this.#end();
      // (The limiter answers the cancel with `refused`, which finds the call ended.)
      state.ticket.cancel(error);
      parts.circuit.endTrial(this);
      this.resolve(parts.fallback.answer('timeout', this.args, error));
    } else if (state.phase === 'running') {
      const { permit, startedAt, hold } = state;
      this.state = { phase: 'timedOut', permit, startedAt, hold };
      this.#abort(error);
      parts.circuit.failure(this, error);
      this.resolve(parts.fallback.answer('timeout', this.args, error));
    }
  }

  /**
   * The guard shuts down: each of `calls` (calls in flight) has its signal aborted with `error`, its
   * caller (if not answered yet) rejected with it, and its permit released. All of them end first,
   * so that what an abort listener does (release a hold, fire again) finds nothing left of them.
   */
  static shutDown(calls: Iterable<Call>, error: unknown): void {
    const ended: Array<[Call, Started]> = [];
    for (const call of calls) {
      const state = call.state;
      if (state.phase !== 'running' && state.phase !== 'timedOut' && state.phase !== 'held')
        continue;
      ended.push([call, state]);
      call.state = ENDED;
    }
    for (const [call, state] of ended) {
      call.#abort(error);
      if (state.phase === 'running') call.resolve(Promise.reject(error));
      state.permit.ignore();
    }
  }

  /** Its hold was released: a permit held past the action goes back now. */
  holdReleased(record: HoldRecord): void {
    const state = this.state;
    // Still running: the permit goes back when the action settles, with the hold's outcome.
    if (state.phase !== 'held' || state.hold !== record) return;
    this.#end();
    state.permit.release(record.outcome ?? state.outcome);
  }

  /**
   * Its hold was garbage-collected unreleased.
   * @returns the permit, if it was still held past the action (now released as `ignore`).
   */
  holdCollected(): Permit | undefined {
    const state = this.state;
    if (state.phase === 'held' && !state.hold.released) {
      state.hold.released = true;
      this.#end();
      state.permit.ignore();
      return state.permit;
    }
    // Still running: the hold is over, the permit goes back when the action settles.
    if ((state.phase === 'running' || state.phase === 'timedOut') && state.hold !== undefined) {
      state.hold.released = true;
    }
    return undefined;
  }

  /** Runs the action under `permit`. */
  #run(permit: Permit): void {
    const parts = this.parts;
    this.state = { phase: 'running', permit, startedAt: parts.clock.now(), hold: undefined };
    parts.inFlight.add(this);
    let result: unknown;
    let thenable: boolean;
    try {
      result = parts.action(this, ...this.args);
      thenable = isThenable(result); // (inside the try: a `then` getter may throw too)
    } catch (error) {
      this.#threw(error);
      return;
    }
    if (!thenable) {
      this.#settled(undefined, result);
      return;
    }
    try {
      (result as PromiseLike<unknown>).then(
        (value) => this.#settled(undefined, value),
        (error: unknown) =>
          this.#settled(error ?? new Error('action rejected with undefined'), undefined),
      );
    } catch (error) {
      // A thenable whose then() throws: the action failed with that error (as `await` would have it).
      this.#settled(error ?? new Error('then() threw undefined'), undefined);
    }
  }

  /** The action threw before starting anything: its permit goes back at once, not a breaker failure. */
  #threw(error: unknown): void {
    const state = this.state;
    if (state.phase !== 'running') return; // (the guard shut down from inside the action)
    const parts = this.parts;
    this.#end();
    state.permit.ignore();
    parts.circuit.endTrial(this);
    this.resolve(parts.fallback.answer('error', this.args, error));
  }

  /** The action settled (possibly long after its caller was answered at the timeout). */
  #settled(error: unknown, value: unknown): void {
    const state = this.state;
    if (state.phase !== 'running' && state.phase !== 'timedOut') return; // shut down meanwhile
    const parts = this.parts;
    const now = parts.clock.now();
    parts.latency.record(now - state.startedAt, now);
    if (state.phase === 'timedOut') {
      // Answered and counted as a breaker failure at its timeout; the permit goes back now, as congestion.
      this.#end();
      state.permit.dropped();
      return;
    }
    const outcome = this.#classify(error, value);
    const hold = state.hold;
    if (hold !== undefined && !hold.released && error === undefined) {
      // The work goes on past the action: the permit goes back at the hold's release.
      this.state = { phase: 'held', permit: state.permit, outcome, hold };
      parts.timeouts?.remove(this);
    } else {
      this.#end();
      state.permit.release(hold?.outcome ?? outcome);
    }
    if (outcome === 'success') parts.circuit.success(this);
    else if (outcome !== 'ignore') parts.circuit.failure(this, error);
    else parts.circuit.endTrial(this);
    this.resolve(error === undefined ? value : parts.fallback.answer('error', this.args, error));
  }

  /**
   * A granted call that must not run: its permit goes back unused. Its caller gets `SHUTDOWN` (a
   * shared limiter outlives the guard), or the `open` answer (granted while the circuit was opening).
   */
  #dismiss(permit: Permit): void {
    const parts = this.parts;
    const answer = parts.shut
      ? Promise.reject(shutDownError())
      : parts.fallback.answer('open', this.args, new CircuitOpenError('OPEN'));
    this.#end();
    permit.ignore();
    parts.circuit.endTrial(this);
    this.resolve(answer);
  }

  /** The outcome of a settled action: the `classify` option's, else limits-core's default. */
  #classify(error: unknown, value: unknown): Outcome {
    let outcome: Outcome | undefined;
    try {
      outcome = this.parts.classify?.(error, value);
    } catch {
      outcome = undefined;
    }
    if (outcome === undefined) return defaultClassify(error);
    // An answer that is not an outcome says nothing of the call: `ignore`.
    return OUTCOMES.includes(outcome) ? outcome : 'ignore';
  }

  /** Nothing is left to do for the call: out of the timeout list and of the calls in flight. */
  #end(): void {
    this.state = ENDED;
    this.parts.timeouts?.remove(this);
    this.parts.inFlight.remove(this);
  }

  /** Aborts the call's signal (the first reason stays). */
  #abort(reason: unknown): void {
    this.#controller ??= new AbortController();
    this.#controller.abort(reason);
  }
}

/**
 * A guard's calls in flight (their action started, their permit not back yet), for `shutdown()`,
 * linked through the calls themselves.
 */
export class CallsInFlight {
  #head: Call | undefined = undefined;

  /** Adds `call`. */
  add(call: Call): void {
    const head = this.#head;
    call.flightPrev = undefined;
    call.flightNext = head;
    if (head !== undefined) head.flightPrev = call;
    this.#head = call;
  }

  /** Takes `call` out (if listed). */
  remove(call: Call): void {
    if (call.flightPrev === undefined && this.#head !== call) return;
    if (call.flightPrev === undefined) this.#head = call.flightNext;
    else call.flightPrev.flightNext = call.flightNext;
    if (call.flightNext !== undefined) call.flightNext.flightPrev = call.flightPrev;
    call.flightPrev = undefined;
    call.flightNext = undefined;
  }

  /** Takes every call out. @returns them, newest first. */
  takeAll(): Call[] {
    const calls: Call[] = [];
    while (this.#head !== undefined) {
      calls.push(this.#head);
      this.remove(this.#head);
    }
    return calls;
  }
}

/** Whether `value` is a thenable (reads `then` once; a getter that throws, throws). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** A call's hold (`ctx.hold()`). It references its call; nothing of the guard's references it. */
class Hold implements PermitHold {
  readonly #call: Call;
  readonly #record: HoldRecord;
  readonly #holds: Holds;

  constructor(call: Call, record: HoldRecord, holds: Holds) {
    this.#call = call;
    this.#record = record;
    this.#holds = holds;
  }

  release(outcome?: Outcome): void {
    if (outcome !== undefined) checkOutcome(outcome);
    const record = this.#record;
    if (record.released) return;
    record.released = true;
    if (outcome !== undefined) record.outcome = outcome;
    this.#holds.forget(this);
    this.#call.holdReleased(record);
  }
}

/**
 * The holds of one guard's calls. Each hold is registered with a `FinalizationRegistry`: a hold
 * collected unreleased releases its permit as `ignore` and is reported on the limiter's `leak` event
 * (and once per guard as a process warning), like a leaked permit.
 */
export class Holds {
  readonly #limiter: Limiter;
  #registry: FinalizationRegistry<Call> | undefined = undefined;
  #warned = false;

  /** @param limiter - the guard's limiter, whose `leak` event reports a hold collected unreleased. */
  constructor(limiter: Limiter) {
    this.#limiter = limiter;
  }

  /** A new hold of `call`. */
  make(call: Call, record: HoldRecord): PermitHold {
    const hold = new Hold(call, record, this);
    if (typeof FinalizationRegistry === 'function') {
      this.#registry ??= new FinalizationRegistry((held) => this.#collected(held));
      this.#registry.register(hold, call, hold);
    }
    return hold;
  }

  /** `hold` was released: it no longer needs watching. */
  forget(hold: PermitHold): void {
    this.#registry?.unregister(hold);
  }

  /** A hold of `call` was collected (from the collector's cleanup task). */
  #collected(call: Call): void {
    const permit = call.holdCollected();
    if (permit !== undefined) this.#report(permit);
  }

  /** Reports a reclaimed hold: the limiter's `leak` event, and a process warning once per guard. */
  #report(permit: Permit): void {
    const limiter = this.#limiter;
    try {
      if (limiter.listenerCount('leak') > 0) {
        limiter.emit('leak', { cost: permit.cost, heldMs: Number.NaN });
      }
      if (!this.#warned) {
        this.#warned = true;
        const proc = (globalThis as { process?: { emitWarning?: (...a: unknown[]) => void } })
          .process;
        proc?.emitWarning?.call(
          proc,
          'limits: a permit held with ctx.hold() was garbage-collected before release() was ' +
            'called; its capacity was reclaimed (released as ignore). (Reported once per guard.)',
          { code: 'LIMITS_PERMIT_LEAK', type: 'LimitsWarning' },
        );
      }
    } catch {
      // A report that fails must not stop the reclaim (it is done).
    }
  }
}
