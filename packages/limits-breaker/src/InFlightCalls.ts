import type { Clock, Limiter, Outcome, Permit } from 'limits-core';
import { type Call, CallFlag } from './Call.js';
import { CallList } from './CallList.js';
import { type HoldOwner, Holds, releaseAs, storedOutcome, storeOutcome } from './Holds.js';
import { TimeoutList } from './TimeoutList.js';

/**
 * @internal The guard's calls in flight (started, not settled, or settled with a held permit): their start times, their `timeoutMs`
 * budgets (one timer for all, see {@link TimeoutList}; a call is in it from `fire()` until it is
 * answered or settles, queued or running), and their abort at shutdown.
 */
export class InFlightCalls implements HoldOwner {
  /** (A list of its own rather than a subclass: the list's methods stay monomorphic.) */
  readonly #list = new CallList();
  readonly #clock: Clock;
  /** `undefined` without a timeout. */
  readonly #timeouts: TimeoutList | undefined;
  /**
   * The clock as read by the settling call whose release is starting the next ones (`NaN` outside):
   * a call granted in that same synchronous stretch starts at that time, one clock read less per
   * call. Set by the guard around a release.
   */
  freshNow = Number.NaN;
  /**
   * Last fire time (with a timeout) or start time taken: never goes backwards (the timeout list relies
   * on fire times in `fire()` order).
   */
  #lastStart = -Infinity;
  /** The calls' holds (`ctx.hold()`): a held call stays listed here until its hold is released. */
  readonly holds = new Holds(this);

  /**
   * @param limiter - the guard's limiter (a hold collected unreleased is reported on its `leak` event).
   * @param sameClock - the limiter is the guard's own, on the system clock (see `budget`). The system
   *   clock never jumps back, so the limiter's readings are the guard's; an injected one may, and each
   *   then absorbs a jump on its own (see `MonotonicClock`).
   */
  constructor(
    clock: Clock,
    timeoutMs: number | false,
    readonly limiter: Limiter,
    sameClock: boolean,
  ) {
    this.#clock = clock;
    this.#sameClock = sameClock;
    this.#timeouts = timeoutMs === false ? undefined : new TimeoutList(clock, timeoutMs);
  }

  /**
   * With a timeout only, for a call granted at once in `fire()` with `permit`: its budget starts now
   * (one clock read, which is also its start time: see {@link InFlightCalls.track}; none when the
   * guard's own limiter, on the system clock, has just read it for a timed grant) and it enters the
   * timeout list.
   * @returns the budget's start (the clock, never before an earlier call's).
   */
  budget(call: Call, permit: Permit): number {
    const t = this.#sameClock ? permit.startTime : Number.NaN;
    const now = Number.isNaN(t) ? this.#clock.now() : t;
    const fired = Math.max(now, this.#lastStart);
    this.#lastStart = fired;
    // Rounded up to a whole ms: a whole number (below 2^31) is a small integer to V8, where a fraction
    // in this field made V8 box it, one more 16-byte object per call for as long as the call waits in
    // the queue (with 10,000 queued, more for every young-generation collection to copy). The budget
    // then ends up to 1 ms late, within the timer's own granularity.
    call.fired = Math.ceil(fired);
    (this.#timeouts as TimeoutList).add(call);
    return fired;
  }

  /**
   * With a timeout only, for a call `fire()` left waiting in the limiter's queue: it enters the
   * timeout list now, and its budget starts when the synchronous run that fired it ends (one clock
   * read for every call queued in that run, at the first microtask after it; or at the next call
   * granted at once, whichever comes first). So a queued call's timeout never comes early, and
   * comes late by at most the rest of that run. With 10,000 calls fired at once, a reading per queued
   * call reached `fire()` as a boxed number, and the young-generation collections during the burst
   * kept more and took longer: the guard's timed burst ran about 8 % slower than without
   * (bench/RESULTS.md, "Session 14").
   */
  budgetLater(call: Call): void {
    // (`call.fired` is left as it is until the stamp: a NaN there would make V8 box the field.)
    (this.#timeouts as TimeoutList).addPending(call);
    if (!this.#stamping) {
      this.#stamping = true;
      queueMicrotask(this.#stamp);
    }
  }

  #stamping = false;
  /** The guard's own limiter, on the system clock (its permits' start times are readings of it). */
  readonly #sameClock: boolean;
  readonly #stamp = (): void => {
    this.#stamping = false;
    const timeouts = this.#timeouts as TimeoutList;
    if (!timeouts.pending) return;
    const fired = Math.max(this.#clock.now(), this.#lastStart);
    this.#lastStart = fired;
    timeouts.stamp(Math.ceil(fired));
  };

  /**
   * Lists a started call as in flight, with its start time: `fired`, its budget's start, for a timed
   * call granted at once in `fire()`; otherwise (`NaN`: it waited in the limiter's queue, or there is
   * no timeout) the time is read now. (So a queued call holds no start time, another boxed number,
   * while it waits.)
   */
  track(call: Call, fired: number): void {
    if (Number.isNaN(fired)) {
      const fresh = this.freshNow;
      const start = Number.isNaN(fresh) ? this.#clock.now() : Math.max(fresh, this.#lastStart);
      this.#lastStart = start;
      call.start = start;
    } else call.start = fired;
    this.#list.push(call);
  }

  /**
   * The call settled: out of the timeout list, and no longer in flight — unless its permit stays
   * held: an unreleased `ctx.hold()` of an action that `resolved` in time (its hold is over
   * otherwise).
   * @returns whether the permit stays held (see {@link InFlightCalls.release}).
   */
  untrack(call: Call, resolved: boolean): boolean {
    this.#timeouts?.remove(call);
    if (call.is(CallFlag.HOLDING)) {
      if (resolved && !call.is(CallFlag.TIMED_OUT)) return true;
      call.unmark(CallFlag.HOLDING);
    }
    this.#list.remove(call);
    return false;
  }

  /**
   * Releases a settled call's permit with `outcome` (or the outcome its hold was released with while
   * the action ran), or, when it stays `held`, keeps `outcome` for its hold's release. `now` is the
   * clock as read at the settle (see {@link InFlightCalls.freshNow}).
   */
  release(call: Call, held: boolean, outcome: Outcome, now: number): void {
    if (held) {
      storeOutcome(call, outcome);
      return;
    }
    // Releasing may start queued calls right here: they take `now` as their start time.
    const outer = this.freshNow;
    this.freshNow = now;
    try {
      releaseAs(call.permit as Permit, (call.is(CallFlag.HOLD) && storedOutcome(call)) || outcome);
    } finally {
      this.freshNow = outer;
    }
  }

  /** @internal A held call's permit went back (its hold was released or collected). */
  _unhold(call: Call): void {
    this.#list.remove(call);
  }

  /** A call answered without running (refused, shed, dismissed, or its action threw): out of the timeout list. */
  untime(call: Call): void {
    this.#timeouts?.remove(call);
  }

  /**
   * Shutdown: the timeout timer is cleared (and the timeout list emptied, queued calls included);
   * every call in flight, newest first, is no longer live,
   * is aborted with `error`, its caller (if not answered yet) rejected with it, and its permit
   * released; the list is emptied.
   */
  abortAll(error: unknown): void {
    this.#timeouts?.clear();
    for (let call = this.#list.head; call !== undefined; call = call.cnext) {
      // A held call's hold is over too (its release must not touch the list while it is walked).
      call.unmark(CallFlag.LIVE | CallFlag.HOLDING);
      call._abort(error);
      if (!call.is(CallFlag.ANSWERED)) {
        call.mark(CallFlag.ANSWERED);
        call.resolve(Promise.reject(error));
      }
      // Calls in flight have started: `permit` is their permit.
      (call.permit as Permit).ignore();
    }
    this.#list.clear();
  }
}
