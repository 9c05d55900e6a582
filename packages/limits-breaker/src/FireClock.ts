import type { Clock } from 'limits-core';
import type { CheckedOptions } from './options.js';

/**
 * @internal The clock of a guard's own limiter when calls have a `timeoutMs` budget: the guard's
 * clock, except that the limiter's first reading inside `fire()`'s admission (the call's queue
 * arrival, or a timed grant's start) is the time the guard has just read for the call's budget,
 * instead of a second clock read for the same call a few hundred nanoseconds later (a read costs
 * 35–40 ns on Node 20; with 10,000 calls fired at once at a limit of 64 that was 3 reads per queued
 * call instead of 2). Any other reading, and every timer, is the guard's clock's.
 */
export class FireClock implements Clock {
  readonly #clock: Clock;
  /** The guard's reading for the call being admitted, not used yet (`NaN`: none). */
  #primed = Number.NaN;

  /** For a guard that makes its own limiter, with a `timeoutMs` and no `limit.clock`. */
  static forOwnLimiter(o: CheckedOptions, clock: Clock): FireClock | undefined {
    const own = o.limiter === undefined && o.limit?.clock === undefined;
    return own && o.timeoutMs !== false ? new FireClock(clock) : undefined;
  }

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  now(): number {
    const primed = this.#primed;
    if (Number.isNaN(primed)) return this.#clock.now();
    this.#primed = Number.NaN;
    return primed;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    return this.#clock.setTimeout(fn, ms);
  }

  clearTimeout(handle: unknown): void {
    this.#clock.clearTimeout(handle);
  }

  /** The next `now()` (only) answers `now`: the guard just read it, at `fire()`. */
  prime(now: number): void {
    this.#primed = now;
  }

  /** Admission is over: `now()` reads the clock (whether or not the limiter used the reading). */
  unprime(): void {
    this.#primed = Number.NaN;
  }
}
