import type { Clock } from '../internal/clock.js';

const perf = globalThis.performance;

/**
 * @internal The default clock of a {@link RetryPolicy}: `performance.now()` and **ref'd** Node
 * timers. limits-core's `systemClock` unrefs its timers (a limiter's housekeeping must never hold a
 * process open), but the wait between two attempts has a caller awaiting its result: an unref'd
 * timer would let a script whose only pending work is a retry exit mid-wait with the promise
 * never settled. The timer is cleared when the caller's signal aborts, so nothing outlives the call.
 */
export const retryClock: Clock = {
  now: () => perf.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout(handle) {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};
