import { describe, expect, test } from 'vitest';
import { FixedLimit } from '../src/algorithms/FixedLimit.js';
import { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { PermitRequest, QueueTicket } from '../src/limiter/PermitRequest.js';
import { Permit } from '../src/permit/Permit.js';
import { FakeClock } from './support/FakeClock.js';

/**
 * A limiter of `capacity` units on a fake clock (with 0, one held permit fills a limiter of 1), with
 * its `queue`, `expire` and `reject` events logged.
 */
function setup(capacity: number, options: { maxQueued?: number; maxQueueWaitMs?: number } = {}) {
  const clock = new FakeClock();
  const events: string[] = [];
  const limiter = new Limiter({
    algorithm: new FixedLimit(Math.max(1, capacity)),
    probeSlots: 0,
    clock,
    maxQueued: 10,
    ...options,
  });
  const held = capacity === 0 ? limiter.tryAcquire() : undefined;
  limiter.on('queue', () => events.push('queue'));
  limiter.on('expire', (e) => events.push(`expire ${e.reason}`));
  limiter.on('reject', (e) => events.push(`reject ${e.reason}`));
  return { limiter, clock, events, held };
}

/** A request that records how its wait ended. */
function request() {
  const log: { granted?: Permit; refused?: LimitExceededError; ticket?: QueueTicket } = {};
  const r: PermitRequest = {
    granted: (permit) => {
      log.granted = permit;
    },
    refused: (error) => {
      log.refused = error;
    },
    queued: (ticket) => {
      log.ticket = ticket;
    },
  };
  return { r, log };
}

describe('Limiter admission and refusals', () => {
  test('a request that fits with nobody ahead is granted at once, without calling the request', () => {
    const { limiter } = setup(1);
    const { r, log } = request();
    const permit = limiter.acquireWith(r);
    expect(permit).toBeInstanceOf(Permit);
    expect(limiter.inflight).toBe(1);
    expect(log).toEqual({});
  });

  test('a request that does not fit is queued, gets its ticket, and is granted when capacity frees', () => {
    const { limiter, events } = setup(1);
    const first = limiter.acquireWith(request().r) as Permit;
    const { r, log } = request();
    expect(limiter.acquireWith(r)).toBeUndefined();
    expect(log.ticket).toBeDefined();
    expect(events).toEqual(['queue']);
    first.success();
    expect(log.granted).toBeInstanceOf(Permit);
    expect(limiter.inflight).toBe(1);
  });

  test('a refusal at admission rejects a promise caller, or calls the request and returns undefined; each emits reject once', async () => {
    const { limiter, events } = setup(1, { maxQueued: 0 });
    void limiter.acquire({ cost: 1 });
    await expect(limiter.acquire({ cost: 1 })).rejects.toMatchObject({ reason: 'at_limit' });
    void limiter.close();
    const { r, log } = request();
    expect(limiter.acquireWith(r)).toBeUndefined();
    expect(log.refused?.reason).toBe('closed');
    expect(events).toEqual(['reject at_limit', 'reject closed']);
  });

  test('a ticket takes its request out of the queue, refused as aborted with the cause, once', () => {
    const { limiter } = setup(0);
    const { r, log } = request();
    limiter.acquireWith(r);
    expect(log.ticket?.cancel('bye')).toBe(true);
    expect(log.refused?.reason).toBe('aborted');
    expect(log.refused?.cause).toBe('bye');
    expect(log.ticket?.cancel('again')).toBe(false);
    expect(limiter.queued).toBe(0);
  });

  test('a waiter past maxQueueWaitMs is refused as expired and emits expire', async () => {
    const { limiter, clock, events } = setup(0, { maxQueueWaitMs: 50 });
    const { r, log } = request();
    limiter.acquireWith(r);
    await clock.advance(50);
    expect(log.refused?.reason).toBe('expired');
    expect(events).toEqual(['queue', 'expire expired', 'reject expired']);
  });

  test('a queued acquire() refused while waiting settles its caller with the LimitExceededError', async () => {
    const { limiter } = setup(0);
    const queued = limiter.acquire();
    void limiter.close();
    await expect(queued).rejects.toBeInstanceOf(LimitExceededError);
  });

  test('close() refuses every queued waiter as closed and stops the queue timer', () => {
    const { limiter, clock } = setup(0, { maxQueueWaitMs: 50 });
    const a = request();
    const b = request();
    limiter.acquireWith(a.r);
    limiter.acquireWith(b.r);
    expect(clock.pending).toBe(1);
    void limiter.close();
    expect([a.log.refused?.reason, b.log.refused?.reason]).toEqual(['closed', 'closed']);
    expect(limiter.queued).toBe(0);
    expect(clock.pending).toBe(0);
  });
});

describe('Limiter fast paths', () => {
  test('acquire() and acquireWith() without options refuse a cost above maxCost as too_large even with capacity free', async () => {
    const algorithm = { limit: 3, maxLimit: 0.5, update: () => 3 };
    const limiter = new Limiter({ algorithm, probeSlots: 0 });
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'too_large' });
    const { r, log } = request();
    expect(limiter.acquireWith(r)).toBeUndefined();
    expect(log.refused?.reason).toBe('too_large');
    expect(limiter.inflight).toBe(0);
  });
});
