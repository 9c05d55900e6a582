import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { type Ledger, PartitionedLimiter } from '../src/partition/PartitionedLimiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { flush } from './support/FakeClock.js';

/** Seed 003: total 10, core reserved 3, recommendation reserved 2, shared 5. */
function seed003() {
  return new PartitionedLimiter({
    limit: 10,
    partitions: {
      core: { reserved: 3, maxQueued: 10 },
      recommendation: { reserved: 2, maxQueued: 10 },
    },
  });
}

function check(ledger: Ledger) {
  let running = 0;
  let borrowed = 0;
  let reserved = 0;
  for (const p of Object.values(ledger.partitions)) {
    expect(p.borrowed).toBe(Math.max(0, p.running - p.reserved));
    running += p.running;
    borrowed += p.borrowed;
    reserved += p.reserved;
  }
  expect(ledger.running).toBe(running);
  expect(ledger.borrowed).toBe(borrowed);
  expect(ledger.shared).toBe(Math.max(0, ledger.total - reserved));
  expect(borrowed).toBeLessThanOrEqual(ledger.shared);
  expect(running).toBeLessThanOrEqual(Math.max(ledger.total, reserved));
}

describe('PartitionedLimiter (seed 003)', () => {
  test('a saturated partition borrows the shared pool but never the others’ reserve', async () => {
    const b = seed003();
    const rec = b.partition('recommendation');
    const held: Permit[] = [];
    for (let i = 0; i < 10; i++) {
      const p = rec.tryAcquire();
      if (p) held.push(p);
    }
    expect(held).toHaveLength(7); // 2 reserved + 5 shared
    expect(b.ledger().partitions.recommendation).toMatchObject({
      reserved: 2,
      borrowed: 5,
      running: 7,
    });
    // Core's reserve is intact: admitted at once, three times.
    const core = [0, 1, 2].map(() => b.partition('core').tryAcquire());
    expect(core.every(Boolean)).toBe(true);
    expect(b.partition('core').tryAcquire()).toBeUndefined(); // the shared pool is taken
    check(b.ledger());
  });

  test('stopBorrowing: borrowed falls to 0 as work ends and no new borrow happens', async () => {
    const b = seed003();
    const rec = b.partition('recommendation');
    const held = Array.from({ length: 7 }, () => rec.tryAcquire() as Permit);
    const waiting = rec.acquire();
    b.stopBorrowing();
    const seen: number[] = [];
    for (const p of held.slice(0, 6)) {
      p.success();
      await flush();
      seen.push(b.ledger().partitions.recommendation?.borrowed ?? -1);
      check(b.ledger());
    }
    // 7 running (5 borrowed) → releases drain the borrow; the waiter gets a reserved slot, not a loan.
    expect(seen).toEqual([4, 3, 2, 1, 0, 0]);
    const w = await waiting;
    expect(b.ledger().partitions.recommendation).toMatchObject({ running: 2, borrowed: 0 });
    expect(rec.tryAcquire()).toBeUndefined();
    b.resumeBorrowing();
    expect(rec.tryAcquire()).toBeDefined();
    w.success();
  });

  test('freed shared capacity goes to another partition’s queue', async () => {
    const b = seed003();
    const rec = b.partition('recommendation');
    const recHeld = Array.from({ length: 7 }, () => rec.tryAcquire() as Permit);
    const coreHeld = Array.from({ length: 3 }, () => b.partition('core').tryAcquire() as Permit);
    const coreWaiter = b.partition('core').acquire();
    recHeld[0]?.success(); // frees a shared unit: core borrows it
    const p = await coreWaiter;
    expect(b.ledger().partitions.core).toMatchObject({ running: 4, borrowed: 1 });
    for (const x of [...recHeld.slice(1), ...coreHeld, p]) x.success();
    expect(b.ledger()).toMatchObject({ running: 0, borrowed: 0 });
  });

  test('maxBorrow caps a partition’s loan', () => {
    const b = new PartitionedLimiter({
      limit: 10,
      partitions: { a: { reserved: 2, maxBorrow: 3 }, b: { reserved: 2 } },
    });
    const got = Array.from({ length: 10 }, () => b.partition('a').tryAcquire()).filter(Boolean);
    expect(got).toHaveLength(5);
  });

  test('fractional reserves follow the total; bad options are refused', () => {
    const b = new PartitionedLimiter({
      limit: 20,
      partitions: { a: { reserved: 0.25 }, b: { reserved: 0.5 } },
    });
    expect(b.ledger()).toMatchObject({ total: 20, shared: 5 });
    expect(b.ledger().partitions.a?.reserved).toBe(5);
    expect(
      () =>
        new PartitionedLimiter({
          limit: 4,
          partitions: { a: { reserved: 3 }, b: { reserved: 2 } },
        }),
    ).toThrow(/add up to 5 units/);
    expect(
      () => new PartitionedLimiter({ limit: 4, partitions: { a: { reserved: 1.5 } } }),
    ).toThrow(/"partitions.a.reserved" must be a whole number of units or a fraction/);
    expect(() => b.partition('nope')).toThrow(/unknown partition "nope"; partitions are "a", "b"/);
  });

  // Costs above a partition's reach: no waiter left pending.
  test('the ledger adds up at every step of random interleavings, and nothing stays queued once work drains', async () => {
    // What each partition can ever have: core 3 + 5 shared, recommendation 2 + 4, search 5, narrow 2.
    const reach: Record<string, number> = { core: 8, recommendation: 6, search: 5, narrow: 2 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({
              op: fc.constant('acquire' as const),
              part: fc.constantFrom('core', 'recommendation', 'search', 'narrow'),
              cost: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 11 })),
            }),
            fc.record({ op: fc.constant('release' as const), index: fc.nat() }),
            fc.record({ op: fc.constant('stop' as const) }),
            fc.record({ op: fc.constant('resume' as const) }),
          ),
          { maxLength: 80 },
        ),
        async (ops) => {
          const b = new PartitionedLimiter({
            limit: 10,
            partitions: {
              core: { reserved: 3, maxQueued: 5 },
              recommendation: { reserved: 2, maxBorrow: 4, maxQueued: 5 },
              search: { reserved: 0, maxQueued: 5 },
              narrow: { reserved: 0, maxBorrow: 2, maxQueued: 5 },
            },
          });
          const held: Permit[] = [];
          let pending = 0;
          for (const o of ops) {
            if (o.op === 'acquire') {
              pending++;
              b.partition(o.part)
                .acquire({ cost: o.cost })
                .then(
                  (p) => {
                    expect(o.cost).toBeLessThanOrEqual(reach[o.part] as number);
                    held.push(p);
                  },
                  (e: LimitExceededError) => {
                    // Refused as too large exactly when the partition can never have that much.
                    expect(e.reason === 'too_large').toBe(o.cost > (reach[o.part] as number));
                  },
                )
                .finally(() => pending--);
            } else if (o.op === 'release' && held.length > 0)
              held.splice(o.index % held.length, 1)[0]?.success();
            else if (o.op === 'stop') b.stopBorrowing();
            else if (o.op === 'resume') b.resumeBorrowing();
            await flush();
            const ledger = b.ledger();
            check(ledger);
            const reserve = (name: string) => ledger.partitions[name]?.reserved ?? 0;
            // Nobody eats into another partition's reserve: others run at most total − reserve.
            for (const name of Object.keys(ledger.partitions)) {
              const others = ledger.running - (ledger.partitions[name]?.running ?? 0);
              expect(others).toBeLessThanOrEqual(ledger.total - reserve(name));
            }
          }
          b.resumeBorrowing();
          // Drain: release whatever is granted until nothing is queued or held.
          for (let round = 0; round < 100; round++) {
            await flush();
            if (
              held.length === 0 &&
              Object.values(b.ledger().partitions).every((p) => p.queued === 0)
            )
              break;
            while (held.length > 0) held.pop()?.success();
          }
          await flush();
          expect(b.ledger()).toMatchObject({ running: 0, borrowed: 0 });
          // No waiter is left behind once nothing runs: every request was granted or refused.
          for (const p of Object.values(b.ledger().partitions)) expect(p.queued).toBe(0);
          expect(pending).toBe(0);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
