import { describe, expect, test } from 'vitest';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { FakeClock } from './support/FakeClock.js';

/** Queues `items` behind a held permit, releases it, and returns the order they were served in. */
async function served(
  limiter: Limiter,
  clock: FakeClock,
  items: Array<{ name: string; priority: number; at: number }>,
  releaseAt: number,
) {
  const held = limiter.tryAcquire() as Permit;
  const order: string[] = [];
  const all: Promise<void>[] = [];
  let now = 0;
  for (const item of [...items].sort((a, b) => a.at - b.at)) {
    await clock.advance(item.at - now);
    now = item.at;
    all.push(
      limiter.acquire({ priority: item.priority }).then((p) => {
        order.push(item.name);
        p.success();
      }),
    );
  }
  await clock.advance(releaseAt - now);
  held.success();
  await Promise.all(all);
  return order;
}

describe('priority queueing with aging', () => {
  test('higher priority first; equal priority in arrival order', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({
      limit: 1,
      maxQueued: 10,
      clock,
      priority: { agingPerSecond: 0 },
    });
    const order = await served(
      limiter,
      clock,
      [
        { name: 'low1', priority: 0, at: 0 },
        { name: 'high1', priority: 5, at: 1 },
        { name: 'low2', priority: 0, at: 2 },
        { name: 'high2', priority: 5, at: 3 },
      ],
      10,
    );
    expect(order).toEqual(['high1', 'high2', 'low1', 'low2']);
  });

  test('waiting raises priority: an old low-priority waiter overtakes a fresh high one', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({
      limit: 1,
      maxQueued: 10,
      clock,
      priority: { agingPerSecond: 2 },
    });
    // low waited 3 s → 0 + 2 × 3 = 6 > 5 (high waited ~0 s).
    const order = await served(
      limiter,
      clock,
      [
        { name: 'low', priority: 0, at: 0 },
        { name: 'high', priority: 5, at: 3000 },
      ],
      3000,
    );
    expect(order).toEqual(['low', 'high']);
  });

  test('aging stops at maxAgedPriority; an aged waiter then wins ties by age only', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({
      limit: 1,
      maxQueued: 10,
      clock,
      priority: { agingPerSecond: 10, maxAgedPriority: 4 },
    });
    const order = await served(
      limiter,
      clock,
      [
        { name: 'low', priority: 0, at: 0 },
        { name: 'high', priority: 5, at: 5000 },
        { name: 'mid', priority: 4, at: 5001 },
      ],
      6000,
    );
    // low is capped at 4: below high (5), tied with mid (4) but older.
    expect(order).toEqual(['high', 'low', 'mid']);
  });

  test('minShare: a class with waiters gets at least one grant in every ceil(1 / share)', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({
      limit: 1,
      maxQueued: 100,
      clock,
      priority: { agingPerSecond: 0, minShare: 0.25 },
    });
    const items = [
      ...Array.from({ length: 12 }, (_, i) => ({ name: 'H', priority: 9, at: i })),
      ...Array.from({ length: 3 }, (_, i) => ({ name: 'L', priority: 0, at: 20 + i })),
    ];
    const order = await served(limiter, clock, items, 100);
    // Every 4th grant goes to the starved low class while it has waiters.
    expect(order.slice(0, 12).join('')).toBe('HHHLHHHLHHHL');
  });

  test('fairness and priority cannot be combined; bad options are refused', () => {
    expect(() => new Limiter({ fairness: {}, priority: {} })).toThrow(/cannot be combined/);
    expect(() => new Limiter({ priority: { minShare: 1 } })).toThrow(
      /"priority.minShare" must be a number in \[0, 1\), got 1/,
    );
    expect(() => new Limiter({ priority: { agingPerSecond: -1 } })).toThrow(
      /"priority.agingPerSecond"/,
    );
  });
});
