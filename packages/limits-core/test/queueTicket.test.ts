import { describe, expect, test } from 'vitest';
import type { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { PermitRequest, QueueTicket } from '../src/limiter/PermitRequest.js';
import type { Permit } from '../src/permit/Permit.js';
import { FakeClock } from './support/FakeClock.js';

describe('PermitRequest.queued and QueueTicket.cancel (how limits-breaker sheds its queued calls)', () => {
  // issue 9, finding 9 (the core side: limits-breaker's guard takes its waiters out of the queue when the circuit opens)
  test('a request is handed its ticket once when queued, and cancel() takes it out of the queue as an abort', () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock });
    const queued: QueueTicket[] = [];
    const refused: LimitExceededError[] = [];
    const granted: Permit[] = [];
    const s: PermitRequest = {
      granted: (p) => granted.push(p),
      refused: (e) => refused.push(e),
      queued: (t) => queued.push(t),
    };
    const held = limiter.acquireWith(s) as Permit;
    expect(queued).toEqual([]); // granted at once: never queued
    limiter.acquireWith(s);
    limiter.acquireWith(s);
    expect(queued).toHaveLength(2);
    expect(limiter.queued).toBe(2);
    const cause = new Error('circuit open');
    expect(queued[0]?.cancel(cause)).toBe(true);
    expect(refused.map((e) => e.reason)).toEqual(['aborted']);
    expect(refused[0]?.cause).toBe(cause);
    expect(limiter.queued).toBe(1);
    // Cancelling a request no longer queued changes nothing.
    expect(queued[0]?.cancel()).toBe(false);
    expect(refused).toHaveLength(1);
    held.success();
    expect(granted).toHaveLength(1);
    expect(granted[0]).toBe(queued[1]);
    expect(queued[1]?.cancel()).toBe(false); // granted: no longer queued
    (granted[0] as Permit).success();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });
});
