import type { Clock } from './clock.js';

/**
 * @internal A limiter's time: its clock made monotonic. An injected clock need not be monotonic; a
 * backward jump is absorbed into `skew`, so `now()` never goes backwards. Queue times, expiries,
 * permit start times and deadlines (converted at admission with `skew`) all use it; the limiter and
 * its wait queue share one instance.
 */
export class MonotonicTime {
  /** The clock read (and used for timers). */
  readonly clock: Clock;
  /** Backward clock jumps so far: `now() = clock.now() + skew`. */
  skew = 0;
  #lastRaw = -Infinity;

  constructor(clock: Clock) {
    this.clock = clock;
  }

  /** The clock, made monotonic (a backward jump is absorbed into `skew`). */
  now(): number {
    const raw = this.clock.now();
    if (raw < this.#lastRaw) this.skew += this.#lastRaw - raw;
    this.#lastRaw = raw;
    return raw + this.skew;
  }

  /**
   * A caller's time budget as a deadline in this time: the earlier of `deadline` (clock ms, converted
   * with `skew`) and `now + timeout` (`Infinity`: neither given).
   */
  deadline(deadline: number | undefined, timeoutMs: number | undefined, now: number): number {
    const at = deadline === undefined ? Infinity : deadline + this.skew;
    return timeoutMs === undefined ? at : Math.min(at, now + timeoutMs);
  }
}
