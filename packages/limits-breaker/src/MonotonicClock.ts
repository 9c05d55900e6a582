import type { Clock } from 'limits-core';

/**
 * An injected clock made monotonic for the guard: a backward jump is absorbed (the time goes on from
 * where it was), so the calls' deadlines stay in `fire()` order (the timeout list relies on it) and
 * a jump of −1 h neither delays nor hastens a timeout. Timers are the clock's own: they take relative
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
