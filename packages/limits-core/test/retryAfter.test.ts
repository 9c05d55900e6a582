import { describe, expect, test } from 'vitest';
import {
  LimitExceededError,
  Limiter,
  PartitionedLimiter,
  type Permit,
  type RejectEvent,
} from '../src/index.js';
import { FakeClock } from './support/FakeClock.js';

/** A limiter at `limit` permits held and `queued` waiters, and what its next refusal says. */
async function refusalAt(
  limiter: Limiter,
  limit: number,
  queued: number,
): Promise<{ error: LimitExceededError; event: RejectEvent; held: Permit[] }> {
  const held = Array.from({ length: limit }, () => limiter.tryAcquire() as Permit);
  for (let i = 0; i < queued; i++) {
    limiter.acquire().then(
      (p) => p.success(),
      () => {}, // refused when the test closes the limiter
    );
  }
  const events: RejectEvent[] = [];
  limiter.on('reject', (e) => events.push(e));
  const error = (await limiter.acquire().catch((e: unknown) => e)) as LimitExceededError;
  expect(error).toBeInstanceOf(LimitExceededError);
  expect(events).toHaveLength(1);
  return { error, event: events[0] as RejectEvent, held };
}

describe('retryAfterMs', () => {
  test('a refusal before any call was measured carries no retryAfterMs, nor does its reject event', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 10, maxQueued: 1000, clock });
    const { error, event, held } = await refusalAt(limiter, 10, 1000);
    expect(error.reason).toBe('queue_full');
    expect(error.retryAfterMs).toBeUndefined();
    expect(event).toEqual({ reason: 'queue_full', cost: 1 });
    expect('retryAfterMs' in event).toBe(false);
    for (const p of held) p.success();
    await limiter.close();
  });

  test('a deadline refusal before any call was measured carries no retryAfterMs either', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock });
    const held = limiter.tryAcquire() as Permit;
    // Deadline admission guesses 1000 ms per call until one is measured: 500 ms cannot be met.
    const error = (await limiter.acquire({ timeoutMs: 500 }).catch((e) => e)) as LimitExceededError;
    expect(error.reason).toBe('deadline');
    expect(error.message).toMatch(/service ≈ 1000 ms/);
    expect(error.retryAfterMs).toBeUndefined();
    held.success();
  });

  test('once a hold time is measured, refusals carry the estimate from it', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 10, maxQueued: 1000, clock });
    limiter.on('release', () => {}); // times every call
    const p = limiter.tryAcquire() as Permit;
    await clock.advance(20);
    p.success();
    const { error, event, held } = await refusalAt(limiter, 10, 1000);
    // 10 + 1000 + 1 − 10 = 1001 units ahead, at 10 per 20 ms.
    expect(error.retryAfterMs).toBe(2002);
    expect(event).toEqual({ reason: 'queue_full', cost: 1, retryAfterMs: 2002 });
    for (const h of held) h.success();
    await limiter.close();
  });

  test('an initialServiceMs given is the estimate until a hold time is measured', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 0, clock, initialServiceMs: 50 });
    const { error, held } = await refusalAt(limiter, 1, 0);
    expect(error).toMatchObject({ reason: 'at_limit', retryAfterMs: 50 });
    for (const h of held) h.success();
  });

  test('a partition without a measured hold time or an initialServiceMs gives no retryAfterMs', async () => {
    const clock = new FakeClock();
    const limiter = new PartitionedLimiter({
      limit: 2,
      clock,
      partitions: { a: { reserved: 1, maxBorrow: 0, maxQueued: 0 }, b: {} },
    });
    const a = limiter.partition('a');
    const held = a.tryAcquire() as Permit;
    const error = (await a.acquire().catch((e) => e)) as LimitExceededError;
    expect(error.reason).toBe('at_limit');
    expect(error.retryAfterMs).toBeUndefined();
    held.success();
  });
});
