import { describe, expect, test } from 'vitest';
import type { LimitExceededError } from '../src/errors/LimitExceededError.js';
import type { AcquireSink } from '../src/limiter/AcquireSink.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/limiter/Permit.js';
import type { Waiter } from '../src/queue/Waiter.js';
import { FakeClock } from './support/FakeClock.js';

describe('AcquireSink._queued (how limits-breaker sheds its queued calls)', () => {
  // issue 9, finding 9 (the core side: limits-breaker's guard takes its waiters out of the queue when the circuit opens)
  test('a sink is handed its waiter once when queued, and _abortWaiter takes it out of the queue as an abort', () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock });
    const queued: Waiter[] = [];
    const refused: LimitExceededError[] = [];
    const granted: Permit[] = [];
    const s: AcquireSink = {
      _granted: (p) => granted.push(p),
      _refused: (e) => refused.push(e),
      _queued: (w) => queued.push(w),
    };
    const held = limiter._acquireFor(s) as Permit;
    expect(queued).toEqual([]); // granted at once: never queued
    limiter._acquireFor(s);
    limiter._acquireFor(s);
    expect(queued).toHaveLength(2);
    expect(limiter.queued).toBe(2);
    limiter._abortWaiter(queued[0] as Waiter);
    expect(refused.map((e) => e.reason)).toEqual(['aborted']);
    expect(limiter.queued).toBe(1);
    // An abort of a waiter no longer queued changes nothing.
    limiter._abortWaiter(queued[0] as Waiter);
    expect(refused).toHaveLength(1);
    held.success();
    expect(granted).toHaveLength(1);
    expect(granted[0]).toBe(queued[1]);
    (granted[0] as Permit).success();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });
});
