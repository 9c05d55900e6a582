import type { Clock, Permit } from 'limits-core';
import type { Call } from './Call.js';
import { CallList } from './CallList.js';
import { TimeoutList } from './TimeoutList.js';

/**
 * @internal The guard's calls in flight (started, not settled): their start times, their timeouts
 * (one timer for all, see {@link TimeoutList}), and their abort at shutdown.
 */
export class InFlightCalls {
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
  /** Start time of the last call started: starts never go backwards (the timeout list relies on it). */
  #lastStart = -Infinity;

  constructor(clock: Clock, timeoutMs: number | false) {
    this.#clock = clock;
    this.#timeouts = timeoutMs === false ? undefined : new TimeoutList(clock, timeoutMs);
  }

  /** Lists a started call as in flight (and in the timeout list, with a timeout); sets its start. */
  track(call: Call): void {
    const fresh = this.freshNow;
    const start = Number.isNaN(fresh) ? this.#clock.now() : Math.max(fresh, this.#lastStart);
    this.#lastStart = start;
    call.start = start;
    this.#list.append(call);
    this.#timeouts?.add(call);
  }

  /** The call settled: no longer in flight, and its timeout is off. */
  untrack(call: Call): void {
    this.#list.remove(call);
    this.#timeouts?.remove(call);
  }

  /**
   * Shutdown: the timeout timer is cleared; every call in flight, newest first, is no longer live,
   * is aborted with `error`, its caller (if not answered yet) rejected with it, and its permit
   * released; the list is emptied.
   */
  abortAll(error: unknown): void {
    this.#timeouts?.clear();
    for (let call = this.#list.tail; call !== undefined; call = call.cprev) {
      call.live = false;
      call._abort(error);
      if (!call.answered) {
        call.answered = true;
        call.resolve(Promise.reject(error));
      }
      // Calls in flight have started: `permit` is their permit.
      (call.permit as Permit).ignore();
    }
    this.#list.clear();
  }
}
