import type { Clock } from '../../src/internal/clock.js';

interface Timer {
  id: number;
  at: number;
  fn: () => void;
}

/**
 * A deterministic clock whose timers fire synchronously: `advance` runs every due timer in order,
 * with `now()` at its due time. For suites that drive a limiter through `acquireWith` (no promises),
 * where thousands of simulated milliseconds must run without flushing microtasks between them.
 */
export class SyncClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers: Timer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { id: this.#nextId++, at: this.#now + Math.max(0, ms), fn };
    let i = this.#timers.length;
    while (i > 0 && (this.#timers[i - 1] as Timer).at > timer.at) i--;
    this.#timers.splice(i, 0, timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    const i = this.#timers.findIndex((t) => t.id === handle);
    if (i >= 0) this.#timers.splice(i, 1);
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.length;
  }

  /** Moves time forward by `ms`, firing due timers in order. */
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      const next = this.#timers[0];
      if (next === undefined || next.at > end) break;
      this.#timers.shift();
      this.#now = Math.max(this.#now, next.at);
      next.fn();
    }
    this.#now = end;
  }
}
