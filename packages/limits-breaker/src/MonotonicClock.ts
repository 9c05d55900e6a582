import type { Clock } from 'limits-core';

/**
 * @internal An injected clock made monotonic for the guard: a backward jump is absorbed (the time
 * goes on from where it was), so the calls' budgets, start times and the timeout list's order do not
 * depend on it. Without it, every budget started after a jump of −1 h ended an hour late (the guard
 * never lets a budget start before an earlier one's). Timers are the clock's own: they take relative
 * delays. The system clock (`performance.now()`) is monotonic already and is used as it is.
 */
export class MonotonicClock implements Clock {
  readonly #clock: Clock;
  /** Backward jumps so far: `now() = clock.now() + skew`. */
  #skew = 0;
  #lastRaw = -Infinity;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  now(): number {
    const raw = this.#clock.now();
    if (raw < this.#lastRaw) this.#skew += this.#lastRaw - raw;
    this.#lastRaw = raw;
    return raw + this.#skew;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    return this.#clock.setTimeout(fn, ms);
  }

  clearTimeout(handle: unknown): void {
    this.#clock.clearTimeout(handle);
  }
}
