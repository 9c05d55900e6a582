import type { Clock } from 'limits-core';
import { describe, expect, test } from 'vitest';
import { FireClock } from '../src/FireClock.js';
import { guard } from '../src/guard.js';

/** A clock that counts its reads and advances 1 ms per read. */
function countingClock() {
  const timers: unknown[] = [];
  const c = {
    reads: 0,
    t: 0,
    now: () => {
      c.reads++;
      return ++c.t;
    },
    setTimeout: (fn: () => void, ms: number) => {
      timers.push([fn, ms]);
      return timers.length;
    },
    clearTimeout: (h: unknown) => {
      timers[(h as number) - 1] = undefined;
    },
  };
  return { clock: c as typeof c & Clock, timers };
}

describe('FireClock', () => {
  test('the first reading after prime() is the primed time, the next ones read the clock', () => {
    const { clock } = countingClock();
    const fc = new FireClock(clock);
    fc.prime(500);
    expect(fc.now()).toBe(500);
    expect(clock.reads).toBe(0);
    expect(fc.now()).toBe(1);
    expect(clock.reads).toBe(1);
  });

  test('after unprime() a reading reads the clock, and timers are the wrapped clock timers', () => {
    const { clock, timers } = countingClock();
    const fc = new FireClock(clock);
    fc.prime(500);
    fc.unprime();
    expect(fc.now()).toBe(1);
    const fn = () => {};
    const h = fc.setTimeout(fn, 20);
    expect(timers).toEqual([[fn, 20]]);
    fc.clearTimeout(h);
    expect(timers).toEqual([undefined]);
  });

  test('a guard with a timeoutMs reads the clock once per queued call at fire() (its own limiter reuses the reading)', () => {
    const { clock } = countingClock();
    const g = guard(() => new Promise<never>(() => {}), {
      clock,
      timeoutMs: 1000,
      limit: { limit: 1, maxQueued: 10 },
    });
    const calls = [g.fire()];
    const before = clock.reads;
    calls.push(g.fire(), g.fire());
    expect(clock.reads - before).toBe(2);
    expect(g.limiter.queued).toBe(2);
    for (const call of calls) call.catch(() => {});
    void g.shutdown();
  });

  test('a guard whose own limiter has a clock of its own (limit.clock) leaves that clock alone', () => {
    const { clock } = countingClock();
    const own = countingClock().clock;
    const g = guard(() => new Promise<never>(() => {}), {
      clock,
      timeoutMs: 1000,
      limit: { limit: 1, maxQueued: 10, clock: own },
    });
    const calls = [g.fire()];
    const before = own.reads;
    calls.push(g.fire());
    expect(own.reads - before).toBe(1);
    for (const call of calls) call.catch(() => {});
    void g.shutdown();
  });
});
