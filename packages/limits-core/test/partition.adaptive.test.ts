import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { LimitAlgorithm } from '../src/algorithms/LimitAlgorithm.js';
import type { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { PartitionedLimiter } from '../src/partition/PartitionedLimiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { FakeClock, flush } from './support/FakeClock.js';

const NAMES = ['a', 'b', 'c', 'd'] as const;

describe('PartitionedLimiter over an adaptive total (model)', () => {
  // A total that moves between 1 and its maxLimit never strands a waiter, and a
  // partition with room in its reserve always gets a unit at once.
  test('random costs, totals and releases: every request is granted or refused, reserves always hold', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({
              op: fc.constant('acquire' as const),
              part: fc.constantFrom(...NAMES),
              cost: fc.oneof(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 1, max: 14 })),
            }),
            fc.record({ op: fc.constant('release' as const), index: fc.nat() }),
            fc.record({ op: fc.constant('total' as const), next: fc.integer({ min: 1, max: 12 }) }),
            fc.record({ op: fc.constant('stop' as const) }),
            fc.record({ op: fc.constant('resume' as const) }),
          ),
          { maxLength: 60 },
        ),
        async (ops) => {
          const total: LimitAlgorithm & { limit: number; next: number } = {
            limit: 8,
            maxLimit: 12,
            next: 8,
            update(): number {
              total.limit = total.next;
              return total.limit;
            },
          };
          const clock = new FakeClock();
          const b = new PartitionedLimiter({
            algorithm: total,
            clock,
            stallThresholdMs: Infinity,
            partitions: {
              a: { reserved: 0.25, maxQueued: 4 },
              b: { reserved: 2, maxBorrow: 3, maxQueued: 4 },
              c: { maxQueued: 4 },
              d: { maxBorrow: 1, maxQueued: 4, queueOrder: 'lifo' },
            },
          });
          // At 12: a 3 + 5, b 2 + 3, c 7, d 1.
          const reach: Record<string, number> = { a: 8, b: 5, c: 7, d: 1 };
          const held: Permit[] = [];
          let pending = 0;
          for (const o of ops) {
            clock.jump(1);
            if (o.op === 'acquire') {
              pending++;
              b.partition(o.part)
                .acquire({ cost: o.cost })
                .then(
                  (p) => held.push(p),
                  (e: LimitExceededError) => {
                    expect(e.reason === 'too_large').toBe(o.cost > (reach[o.part] as number));
                  },
                )
                .finally(() => pending--);
            } else if (o.op === 'release' && held.length > 0) {
              held.splice(o.index % held.length, 1)[0]?.success();
            } else if (o.op === 'total') total.next = o.next;
            else if (o.op === 'stop') b.stopBorrowing();
            else if (o.op === 'resume') b.resumeBorrowing();
            await flush();
            const ledger = b.ledger();
            // Running alone may exceed a shrunken total, never the largest one.
            expect(ledger.running).toBeLessThanOrEqual(12);
            // A reserve is a guarantee: with room in it and an empty queue, a unit is granted at once.
            for (const name of NAMES) {
              const line = ledger.partitions[name];
              if (line === undefined || line.queued > 0 || line.running + 1 > line.reserved)
                continue;
              const p = b.partition(name).tryAcquire();
              expect(p).toBeDefined();
              p?.ignore();
            }
          }
          b.resumeBorrowing();
          for (let round = 0; round < 200; round++) {
            await flush();
            if (held.length === 0 && pending === 0) break;
            clock.jump(1);
            held.shift()?.success();
          }
          expect(pending).toBe(0);
          expect(b.ledger()).toMatchObject({ running: 0, borrowed: 0 });
        },
      ),
      { numRuns: 1000 },
    );
  });
});
