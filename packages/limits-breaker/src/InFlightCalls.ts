import type { Clock, Permit } from 'limits-core';
import { type Call, CallFlag } from './Call.js';
import { CallList } from './CallList.js';
import type { FireClock } from './FireClock.js';
import { TimeoutList } from './TimeoutList.js';

/**
 * @internal The guard's calls in flight (started, not settled): their start times, their `timeoutMs`
 * budgets (one timer for all, see {@link TimeoutList}; a call is in it from `fire()` until it is
 * answered or settles, queued or running), and their abort at shutdown.
 */
export class InFlightCalls {
  /** (A list of its own rather than a subclass: the list's methods stay monomorphic.) */
  readonly #list = new CallList();
  readonly #clock: Clock;
  readonly #fireClock: FireClock | undefined;
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

  /** @param fireClock - the own limiter's clock, primed at each `budget()`. */
  constructor(clock: Clock, timeoutMs: number | false, fireClock: FireClock | undefined) {
    this.#clock = clock;
    this.#fireClock = fireClock;
    this.#timeouts = timeoutMs === false ? undefined : new TimeoutList(clock, timeoutMs);
  }

  /**
   * With a timeout only, at `fire()`: the call's budget starts now (its one clock read, which is also
   * its start time if it is granted at once) and it enters the timeout list, whatever the limiter
   * answers next.
   * Primes the own limiter's `FireClock` with that reading.
   */
  budget(call: Call): void {
    const now = this.#clock.now();
    const fired = Math.max(now, this.#lastStart);
    this.#lastStart = fired;
    call.fired = fired;
    call.start = fired;
    (this.#timeouts as TimeoutList).add(call);
    this.#fireClock?.prime(now);
  }

  /**
   * Lists a started call as in flight. Its start time is read now if it waited in the limiter's queue
   * (`waited`) or there is no timeout; a call granted at once with a timeout started at its fire time.
   */
  track(call: Call, waited: boolean): void {
    if (waited || this.#timeouts === undefined) {
      const fresh = this.freshNow;
      const start = Number.isNaN(fresh) ? this.#clock.now() : Math.max(fresh, this.#lastStart);
      this.#lastStart = start;
      call.start = start;
    }
    this.#list.append(call);
  }

  /** The call settled: no longer in flight, and out of the timeout list. */
  untrack(call: Call): void {
    this.#list.remove(call);
    this.#timeouts?.remove(call);
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
    for (let call = this.#list.tail; call !== undefined; call = call.cprev) {
      call.mark(CallFlag.LIVE, false);
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
