import { describe, expect, test } from 'vitest';
import { seededRandom } from '../src/internal/random.js';
import { RetryBudget } from '../src/retry/RetryBudget.js';
import { RetryPolicy } from '../src/retry/RetryPolicy.js';
import { FakeClock } from './support/FakeClock.js';

/** Withdraws until the budget refuses; returns how many retries it granted. */
function drain(budget: RetryBudget): number {
  let n = 0;
  while (budget.tryRetry()) n++;
  return n;
}

describe('RetryBudget', () => {
  test('with no requests and no floor it refuses every retry', () => {
    const budget = new RetryBudget({ minPerSecond: 0, clock: new FakeClock() });
    expect(budget.available).toBe(0);
    expect(budget.tryRetry()).toBe(false);
  });

  test('each request deposits ratio retries: ten requests at 0.1 pay for exactly one retry', () => {
    const budget = new RetryBudget({ ratio: 0.1, minPerSecond: 0, clock: new FakeClock() });
    for (let i = 0; i < 9; i++) budget.recordRequest();
    expect(budget.available).toBe(0);
    expect(budget.tryRetry()).toBe(false);
    budget.recordRequest();
    expect(budget.available).toBe(1);
    expect(budget.tryRetry()).toBe(true);
    expect(budget.available).toBe(0);
    expect(budget.tryRetry()).toBe(false);
  });

  test('the floor allows minPerSecond × windowMs / 1000 retries per window without any request', () => {
    const budget = new RetryBudget({ minPerSecond: 10, windowMs: 10_000, clock: new FakeClock() });
    expect(budget.available).toBe(100);
    expect(drain(budget)).toBe(100);
  });

  test('a ratio whose product rounds below a whole number still grants that whole number', () => {
    // 0.57 × 100 is 56.99999999999999 in floating point.
    const budget = new RetryBudget({ ratio: 0.57, minPerSecond: 0, clock: new FakeClock() });
    for (let i = 0; i < 100; i++) budget.recordRequest();
    expect(budget.available).toBe(57);
    expect(drain(budget)).toBe(57);
  });

  test('requests and retries leave the window after windowMs, in buckets of windowMs / 10', () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ ratio: 1, minPerSecond: 0, windowMs: 1000, clock });
    for (let i = 0; i < 5; i++) budget.recordRequest(); // bucket [0, 100)
    clock.jump(500);
    for (let i = 0; i < 3; i++) budget.recordRequest(); // bucket [500, 600)
    expect(budget.available).toBe(8);
    expect(budget.tryRetry()).toBe(true); // withdrawn in bucket [500, 600)
    expect(budget.available).toBe(7);
    clock.jump(499); // 999: the first bucket is still the oldest of the ten
    expect(budget.available).toBe(7);
    clock.jump(1); // 1000: the first bucket left the window
    expect(budget.available).toBe(2);
    clock.jump(500); // 1500: the second one too, with the retry withdrawn in it
    expect(budget.available).toBe(0);
    budget.recordRequest();
    expect(budget.available).toBe(1);
  });

  test('a jump of many windows empties it, and a clock that goes back changes nothing', () => {
    const clock = new FakeClock(10_000);
    const budget = new RetryBudget({ ratio: 1, minPerSecond: 0, windowMs: 1000, clock });
    for (let i = 0; i < 4; i++) budget.recordRequest();
    clock.jump(-5000);
    expect(budget.available).toBe(4);
    budget.recordRequest(); // counted in the current bucket
    expect(budget.available).toBe(5);
    clock.jump(5000 + 1_000_000);
    expect(budget.available).toBe(0);
  });

  test('a clock that starts below zero keeps the ring right', () => {
    const clock = new FakeClock(-1234);
    const budget = new RetryBudget({ ratio: 1, minPerSecond: 0, windowMs: 1000, clock });
    budget.recordRequest();
    clock.jump(900); // -334: bucket [-400, -300), the tenth counting [-1300, -1200)
    budget.recordRequest();
    expect(budget.available).toBe(2);
    clock.jump(100); // -234: the bucket of -1234 left the window
    expect(budget.available).toBe(1);
  });
});

describe('RetryBudget under a 100 % failure burst', () => {
  /** A policy whose every attempt fails, sharing `budget`; no backoff wait. */
  function failingSetup(budget: RetryBudget, clock: FakeClock) {
    const policy = new RetryPolicy({
      maxAttempts: 3,
      baseDelayMs: 0,
      budget,
      clock,
      random: seededRandom(1),
    });
    let attempts = 0;
    const task = async () => {
      attempts++;
      throw new Error('503');
    };
    return { policy, task, attempts: () => attempts };
  }

  test('1,000 concurrent failing calls with ratio 0.1 and no floor get exactly 0.1 × 1000 = 100 retries', async () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ ratio: 0.1, minPerSecond: 0, clock });
    const { policy, task, attempts } = failingSetup(budget, clock);
    const calls = Array.from({ length: 1000 }, () => policy.run(task).catch((e: Error) => e));
    await clock.advance(0);
    await clock.advance(0);
    const results = await Promise.all(calls);
    expect(results.every((r) => r instanceof Error && r.message === '503')).toBe(true);
    expect(attempts()).toBe(1100);
    // 900 first failures refused, then the 100 retried calls fail again and are refused too.
    expect(policy.stats()).toEqual({
      calls: 1000,
      attempts: 1100,
      retries: 100,
      refusedByBudget: 1000,
      exhausted: 0,
    });
    expect(clock.pending).toBe(0);
  });

  test('1,000 sequential failing calls get 100 retries: one per ten requests, as they come', async () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ ratio: 0.1, minPerSecond: 0, clock });
    const { policy, task } = failingSetup(budget, clock);
    const retriedAt: number[] = [];
    policy.on('retry', () => retriedAt.push(policy.stats().calls));
    for (let i = 0; i < 1000; i++) {
      const call = policy.run(task).catch(() => undefined);
      await clock.advance(0);
      await call;
    }
    expect(policy.stats().retries).toBe(100);
    expect(retriedAt.slice(0, 3)).toEqual([10, 20, 30]);
  });

  test('the budget refills as the window slides past the burst', async () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ ratio: 0.1, minPerSecond: 0, windowMs: 10_000, clock });
    const { policy, task } = failingSetup(budget, clock);
    const burst = async (n: number) => {
      const calls = Array.from({ length: n }, () => policy.run(task).catch(() => undefined));
      await clock.advance(0);
      await clock.advance(0);
      await Promise.all(calls);
    };
    await burst(1000);
    expect(policy.stats().retries).toBe(100);
    expect(budget.available).toBe(0);
    await clock.advance(5000);
    // Still inside the window: 1,100 requests pay for 110 retries, of which 100 are spent.
    await burst(100);
    expect(policy.stats().retries).toBe(110);
    expect(budget.available).toBe(0);
    await clock.advance(5000); // the first burst and its retries left the window
    expect(budget.available).toBe(0); // 100 requests, 10 retries
    await burst(100);
    expect(policy.stats().retries).toBe(120); // 200 requests pay for 20
    await clock.advance(10_000); // everything left the window
    await burst(1000);
    expect(policy.stats().retries).toBe(220);
  });
});
