import { describe, expect, test } from 'vitest';
import type { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { PermitRequest, QueueTicket } from '../src/limiter/PermitRequest.js';
import type { Permit } from '../src/permit/Permit.js';
import { FakeClock } from './support/FakeClock.js';

describe('PermitRequest.queued and QueueTicket.cancel (how limits-breaker sheds its queued calls)', () => {
  // The core side of limits-breaker's guard taking its waiters out of the queue when the circuit opens.
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

describe('Limiter.cancelRequests (how limits-breaker sheds its queued calls without a list of tickets)', () => {
  const ownerOf = (r: PermitRequest) => (r as PermitRequest & { owner: string }).owner;
  /** A request that records how its wait ended, tagged with an owner. */
  const request = (owner: string, log: string[]) => {
    const r = {
      owner,
      permit: undefined as Permit | undefined,
      error: undefined as LimitExceededError | undefined,
      granted(p: Permit) {
        r.permit = p;
        log.push(`granted ${owner}`);
      },
      refused(e: LimitExceededError) {
        r.error = e;
        log.push(`refused ${owner}`);
      },
    };
    return r;
  };

  test('refuses the matching queued requests, oldest first, as aborts with the cause; leaves the others queued', () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock: new FakeClock() });
    const held = limiter.tryAcquire() as Permit;
    const log: string[] = [];
    const requests = ['a1', 'b1', 'a2', 'b2', 'a3'].map((o) => request(o, log));
    for (const r of requests) expect(limiter.acquireWith(r)).toBeUndefined();
    const rejects: string[] = [];
    limiter.on('reject', (e) => rejects.push(e.reason));
    const cause = Symbol('shed');
    const n = limiter.cancelRequests((r) => ownerOf(r).startsWith('a'), cause);
    expect(n).toBe(3);
    expect(log).toEqual(['refused a1', 'refused a2', 'refused a3']);
    expect(requests[0]?.error?.reason).toBe('aborted');
    expect(requests[0]?.error?.cause).toBe(cause);
    expect(rejects).toEqual(['aborted', 'aborted', 'aborted']);
    expect(limiter.queued).toBe(2);
    // The others keep their place.
    held.success();
    expect(log.at(-1)).toBe('granted b1');
    requests[1]?.permit?.success();
    expect(log.at(-1)).toBe('granted b2');
    requests[3]?.permit?.success();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
    expect(limiter.cancelRequests(() => true)).toBe(0);
  });

  test('match sees every request before any is refused; one granted by a refusal meanwhile is skipped, and what they blocked is served after', () => {
    const limiter = new Limiter({ limit: 2, maxQueued: 10, clock: new FakeClock() });
    const first = limiter.tryAcquire() as Permit;
    const big = limiter.tryAcquire() as Permit;
    const log: string[] = [];
    const a1 = request('a1', log);
    const a2 = request('a2', log);
    const b = request('b', log);
    // a1's refusal releases a permit: a2 (next in line) is granted before its own turn to be refused.
    a1.refused = (e) => {
      a1.error = e;
      log.push('refused a1');
      first.success();
    };
    for (const r of [a1, a2, b]) limiter.acquireWith(r);
    const seen: string[] = [];
    const n = limiter.cancelRequests((r) => {
      seen.push(ownerOf(r));
      expect(log).toEqual([]); // nothing refused yet
      return ownerOf(r).startsWith('a');
    });
    expect(seen).toEqual(['a1', 'a2', 'b']);
    expect(n).toBe(1);
    expect(log).toEqual(['refused a1', 'granted a2']);
    expect(limiter.queued).toBe(1);
    big.success();
    expect(log.at(-1)).toBe('granted b');
    a2.permit?.success();
    b.permit?.success();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });

  test('only acquireWith requests: queued acquire() and run() calls are not offered to match', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock: new FakeClock() });
    const held = limiter.tryAcquire() as Permit;
    const waiting = limiter.acquire();
    const running = limiter.run(() => 1);
    const offered: unknown[] = [];
    expect(limiter.cancelRequests((r) => offered.push(r) > 0)).toBe(0);
    expect(offered).toEqual([]);
    held.success();
    (await waiting).success();
    expect(await running).toBe(1);
  });

  test('a match that is not a function is refused, naming it, before anything changes', () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock: new FakeClock() });
    limiter.tryAcquire();
    limiter.acquireWith(request('a', []));
    expect(() => limiter.cancelRequests('a' as never)).toThrow(
      new TypeError('limits: argument "match" of cancelRequests() must be a function, got "a"'),
    );
    expect(limiter.queued).toBe(1);
  });
});
