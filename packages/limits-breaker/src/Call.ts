import type { LimitExceededError, Permit, PermitRequest, QueueTicket } from 'limits-core';
import { CallContext } from './CallContext.js';
import type { CircuitTicket } from './circuit/Circuit.js';
import type { PermitHold } from './PermitHold.js';
import type { Timed } from './TimeoutList.js';

/**
 * @internal A call's flags, read with {@link Call.is} and set with {@link Call.mark} (one number field:
 * the queue may hold 10^5 calls).
 */
export const CallFlag = {
  /** Still in flight for the guard (not settled, not shut down). */
  LIVE: 1,
  /** The caller was answered (by the result, the timeout, or shutdown). */
  ANSWERED: 2,
  /**
   * The caller was answered at the timeout: while the call waited in the limiter's queue (it is then
   * taken out of it), or while its action runs (which keeps its permit until it ends).
   */
  TIMED_OUT: 4,
  /** A trial call (admitted while HALF_OPEN). */
  TRIAL: 8,
  /** Waiting in the limiter's queue (its `QueueTicket` in `permit`). */
  WAITING: 32,
  /** The action called `ctx.hold()` (a second call throws). */
  HOLD: 64,
  /** Its hold is not released yet: the permit outlives the action (see `PermitHold`). */
  HOLDING: 128,
} as const;
/** Bits from here up (three) hold the outcome a hold will release with (see `PermitHold`). */
export const OUTCOME_SHIFT = 8;
const { LIVE, TRIAL } = CallFlag;

/** The reason of a call aborted before its signal was read (kept until the first read makes one). */
class AbortedUnread {
  constructor(readonly reason: unknown) {}
}

/** The resolve function of a call whose caller's promise is derived from the action's (or not made yet). */
export const noop = (): void => {};

/**
 * @internal What a {@link Call} reports to (the guard that made it): the limiter's answers to its
 * permit request, and its timeout.
 */
export interface CallOwner {
  /** The limiter queued `call`; `ticket` takes it out of the queue. */
  _queued(call: Call, ticket: QueueTicket): void;
  /** The limiter granted a queued call its permit. */
  _granted(call: Call, permit: Permit): void;
  /** The limiter refused the call (at admission, or while it waited). */
  _refused(call: Call, error: LimitExceededError): void;
  /** The call's `timeoutMs` budget ran out (while queued or while running). */
  _timeout(call: Call): void;
  /** The action called `ctx.hold()`. */
  _hold(call: Call): PermitHold;
}

/**
 * @internal One call, from `fire()` to the end of its action: it waits in the limiter's queue (as a
 * limits-core `PermitRequest`: no promise there), is the action's context (a `CallContext`: no second
 * object), sits in the timeout list (`Timed`) and in the guard's list of calls in flight,
 * and tells the circuit which episode it was admitted in (`CircuitTicket`). One object and one caller
 * promise per call, where a promise chain through `limiter.acquire()` took several of each.
 *
 * It has 13 fields, which V8 lays out in 128 bytes (Node 20 and 24: 8 bytes per field and 3 words of
 * header). Keep it so: a young-generation collection copies a surviving object word by word when it
 * is under 136 bytes, and with a `memcpy` call from there. With 10,000 calls queued and a 14th field,
 * that call took about 10 ns per guard call in a CPU profile of the timed burst (bench/RESULTS.md,
 * "Session 14").
 */
export class Call extends CallContext implements Timed, PermitRequest, CircuitTicket {
  /**
   * The call's abort state, one field: `undefined` (not aborted, `signal` not read), its own
   * AbortController (made at the first read of `signal`, aborted with the call), or the reason of an
   * abort that came before any read.
   */
  #abort: AbortController | AbortedUnread | undefined = undefined;
  /** Links in the timeout list. */
  prev: Timed | undefined = undefined;
  next: Timed | undefined = undefined;
  /** Links in the guard's list of calls in flight. */
  cprev: Call | undefined = undefined;
  cnext: Call | undefined = undefined;
  /** The {@link CallFlag} bits. */
  #flags: number;
  /**
   * The permit, once granted; before that, while the call waits in the limiter's queue, its queue
   * ticket (to take it out of the queue; one field less per queued call).
   */
  permit: Permit | QueueTicket | undefined = undefined;
  /**
   * Clock ms when the action started (for the latency window); `undefined` until then. (Not a number
   * first: V8 would make the field a boxed double, one more object per queued call.)
   */
  start: number = undefined as unknown as number;
  /**
   * Clock ms when the call's `timeoutMs` budget (queue wait + execution) started, rounded up to a
   * whole ms: at `fire()` for a call granted at once (`InFlightCalls.budget`), at the end of the
   * synchronous run that fired it for a queued one (`InFlightCalls.budgetLater`). Set only with a
   * timeout.
   */
  fired = 0;
  /**
   * The circuit episode (the circuit's count of state changes) the call was admitted in: only calls
   * of the current episode report to the circuit, and only trials of the current HALF_OPEN episode
   * hold one of its trial slots.
   */
  readonly episode: number;
  /**
   * Answers the caller: the resolve function of the caller's promise (a rejection resolves it with a
   * rejected promise); `noop` when the caller's promise is derived from the action's.
   */
  resolve: (value: unknown) => void = noop;
  constructor(
    readonly owner: CallOwner,
    trial: boolean,
    readonly args: unknown[],
    episode: number,
  ) {
    super();
    this.#flags = trial ? LIVE | TRIAL : LIVE;
    this.episode = episode;
  }
  /** A trial call (admitted while HALF_OPEN). */
  get trial(): boolean {
    return (this.#flags & TRIAL) !== 0;
  }
  /** The {@link CallFlag} bits. */
  get flags(): number {
    return this.#flags;
  }
  override get signal(): AbortSignal {
    const abort = this.#abort;
    if (abort instanceof AbortController) return abort.signal;
    const controller = new AbortController();
    if (abort !== undefined) controller.abort(abort.reason);
    this.#abort = controller;
    return controller.signal;
  }
  override hold(): PermitHold {
    return this.owner._hold(this);
  }
  /** Aborts this call's signal (now, or as soon as it is created). */
  _abort(reason: unknown): void {
    const abort = this.#abort;
    if (abort === undefined) this.#abort = new AbortedUnread(reason);
    // (An AbortController already aborted keeps its first reason.)
    else if (abort instanceof AbortController) abort.abort(reason);
  }
  /** Whether `flag` (one of {@link CallFlag}) is set. */
  is(flag: number): boolean {
    return (this.#flags & flag) !== 0;
  }
  /** Sets `flag` (one or more of {@link CallFlag}). */
  mark(flag: number): void {
    this.#flags |= flag;
  }
  /** Clears `flag` (one or more of {@link CallFlag}). */
  unmark(flag: number): void {
    this.#flags &= ~flag;
  }
  expire(): void {
    this.owner._timeout(this);
  }
  queued(ticket: QueueTicket): void {
    this.owner._queued(this, ticket);
  }
  granted(permit: Permit): void {
    this.owner._granted(this, permit);
  }
  refused(error: LimitExceededError): void {
    this.owner._refused(this, error);
  }
}

/**
 * The caller's promise of `call`, answered through `call.resolve`. A closure per call, where a shared
 * executor writing into the guard saved that allocation: the guard outlives its calls, so each of
 * those writes went through V8's write barrier, and valgrind counts fewer machine instructions per
 * call this way (`bench/instructions.mjs`, bench/RESULTS.md "Session 8").
 */
export function callerPromise<R>(call: Call): Promise<R> {
  return new Promise<R>((resolve) => {
    call.resolve = resolve as (value: unknown) => void;
  });
}
