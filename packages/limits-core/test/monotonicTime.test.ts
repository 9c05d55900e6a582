import { describe, expect, test } from 'vitest';
import { Limiter } from '../src/index.js';
import { MonotonicTime } from '../src/internal/MonotonicTime.js';
import { FakeClock } from './support/FakeClock.js';

/** A clock whose time is set directly (no timers) and that counts its readings. */
class ManualClock {
  time = 0;
  reads = 0;
  now(): number {
    this.reads += 1;
    return this.time;
  }
  set(ms: number): void {
    this.time = ms;
  }
  setTimeout(): unknown {
    throw new Error('no timers here');
  }
  clearTimeout(): void {}
}

describe('MonotonicTime.turnNow', () => {
  test('a coarse time reads the clock once per synchronous run and again after a microtask', async () => {
    const clock = new ManualClock();
    const time = new MonotonicTime(clock, true);
    clock.set(5);
    expect(time.turnNow()).toBe(5);
    clock.set(8);
    expect(time.turnNow()).toBe(5); // same run: the first reading
    expect(clock.reads).toBe(1);
    await Promise.resolve();
    expect(time.turnNow()).toBe(8);
    expect(clock.reads).toBe(2);
    expect(time.now()).toBe(8); // now() is always exact
  });

  test('an exact time (any injected clock) reads the clock every time', () => {
    const clock = new ManualClock();
    const time = new MonotonicTime(clock);
    expect(time.turnNow()).toBe(0);
    clock.set(7);
    expect(time.turnNow()).toBe(7);
  });
});

describe('queued arrival times', () => {
  test('with the system clock and no time policy, a burst reads the clock once for its arrivals', async () => {
    // The system clock is the one that runs coarse: count performance.now() calls during the burst.
    const limiter = new Limiter({ limit: 1, maxQueued: 1000 });
    const perf = globalThis.performance;
    const original = perf.now;
    let reads = 0;
    const hold = limiter.run(() => new Promise((r) => setTimeout(r, 5)));
    perf.now = () => {
      reads++;
      return original.call(perf);
    };
    let runs: Promise<unknown>[];
    try {
      runs = Array.from({ length: 100 }, () => limiter.run(async () => 1));
    } finally {
      perf.now = original;
    }
    expect(limiter.queued).toBe(100);
    expect(reads).toBe(1);
    expect(limiter.snapshot().oldestQueuedMs).toBeGreaterThanOrEqual(0);
    await Promise.all([hold, ...runs]);
  });

  test('with maxQueueWaitMs every arrival is read exactly (expiry acts on it)', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, maxQueueWaitMs: 100, clock });
    void limiter.run(() => new Promise(() => {}));
    const first = limiter.run(async () => 1);
    await clock.advance(60);
    const second = limiter.run(async () => 2);
    first.catch(() => {});
    second.catch(() => {});
    await clock.advance(40); // the first expires at 100, the second at 160
    expect(limiter.queued).toBe(1);
    await clock.advance(59);
    expect(limiter.queued).toBe(1);
    await clock.advance(1);
    expect(limiter.queued).toBe(0);
  });
});
