import fc from 'fast-check';
import { expect, test } from 'vitest';
import type { Sample } from '../src/algorithms/LimitAlgorithm.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { FakeClock, flush } from './support/FakeClock.js';

type Op =
  | {
      kind: 'acquire';
      cost: number;
      bytes: number;
      timeout: number | undefined;
      abortable: boolean;
    }
  | { kind: 'try'; cost: number }
  | { kind: 'release'; index: number; outcome: 'success' | 'dropped' | 'ignore' }
  | { kind: 'double'; index: number }
  | { kind: 'abort'; index: number }
  | { kind: 'time'; ms: number }
  | { kind: 'limit'; value: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('acquire' as const),
    cost: fc.integer({ min: 1, max: 3 }),
    bytes: fc.integer({ min: 0, max: 60 }),
    timeout: fc.option(fc.integer({ min: 0, max: 80 }), { nil: undefined }),
    abortable: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('try' as const), cost: fc.integer({ min: 1, max: 3 }) }),
  fc.record({
    kind: fc.constant('release' as const),
    index: fc.nat(),
    outcome: fc.constantFrom('success' as const, 'dropped' as const, 'ignore' as const),
  }),
  fc.record({ kind: fc.constant('double' as const), index: fc.nat() }),
  fc.record({ kind: fc.constant('abort' as const), index: fc.nat() }),
  fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 0, max: 40 }) }),
  fc.record({ kind: fc.constant('limit' as const), value: fc.integer({ min: 0, max: 6 }) }),
);

test('random interleavings keep every invariant and drain to zero with no timers left', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(op, { maxLength: 60 }),
      fc.constantFrom('fifo' as const, 'lifo' as const, 'adaptive' as const),
      fc.boolean(),
      async (ops, queueOrder, codel) => {
        const clock = new FakeClock();
        const alg = { limit: 3, maxLimit: 6, update: (_s: Sample) => alg.limit };
        const maxQueuedBytes = 150;
        const limiter = new Limiter({
          algorithm: alg,
          probeSlots: 1,
          maxQueued: 8,
          maxQueuedBytes,
          maxQueueWaitMs: 60,
          queueOrder,
          clock,
          ...(codel ? { codel: { targetMs: 15, intervalMs: 30 } } : {}),
        });
        const held: Permit[] = [];
        const released: Permit[] = [];
        const controllers: AbortController[] = [];
        let releaseEvents = 0;
        limiter.on('release', () => releaseEvents++);
        // A grant never takes in-flight past the capacity of the moment, except for one job costlier
        // than a shrunken capacity, which runs alone. (After a shrink, earlier grants may exceed it.)
        let badGrants = 0;
        limiter.on('acquire', (e) => {
          if (e.inflight > e.capacity && limiter.snapshot().permits !== 1) badGrants++;
        });
        const grant = (p: Permit) => {
          held.push(p);
        };
        const check = () => {
          const sum = held.reduce((n, p) => n + p.cost, 0);
          expect(limiter.inflight).toBe(sum);
          expect(limiter.inflight >= 0).toBe(true);
          expect(badGrants).toBe(0);
          expect(limiter.queuedBytes).toBeLessThanOrEqual(maxQueuedBytes);
          expect(limiter.queued).toBeLessThanOrEqual(8);
          expect(releaseEvents).toBe(released.length);
        };
        for (const o of ops) {
          switch (o.kind) {
            case 'acquire': {
              const ac = new AbortController();
              if (o.abortable) controllers.push(ac);
              limiter
                .acquire({
                  cost: o.cost,
                  bytes: o.bytes,
                  ...(o.timeout === undefined ? {} : { timeoutMs: o.timeout }),
                  ...(o.abortable ? { signal: ac.signal } : {}),
                })
                .then(grant, () => {});
              break;
            }
            case 'try': {
              const p = limiter.tryAcquire({ cost: o.cost });
              if (p) grant(p);
              break;
            }
            case 'release': {
              if (held.length === 0) break;
              const [p] = held.splice(o.index % held.length, 1) as [Permit];
              p[o.outcome]();
              released.push(p);
              break;
            }
            case 'double': {
              // Reporting again on an already released permit changes nothing.
              if (released.length === 0) break;
              const p = released[o.index % released.length] as Permit;
              p.success();
              p.dropped();
              break;
            }
            case 'abort':
              if (controllers.length > 0) controllers[o.index % controllers.length]?.abort();
              break;
            case 'time':
              await clock.advance(o.ms);
              break;
            case 'limit':
              alg.limit = o.value;
              // The limiter reads the algorithm after a sample: release one to apply it.
              if (held.length > 0) {
                const p = held.pop() as Permit;
                p.success();
                released.push(p);
              }
              break;
          }
          await flush();
          check();
        }
        // Drain: release everything as it arrives, let every deadline pass.
        for (let i = 0; i < 40 && (held.length > 0 || limiter.queued > 0); i++) {
          while (held.length > 0) {
            const p = held.pop() as Permit;
            p.success();
            released.push(p);
          }
          await clock.advance(20);
          check();
        }
        await clock.advance(200);
        expect(limiter.snapshot()).toMatchObject({
          inflight: 0,
          permits: 0,
          queued: 0,
          queuedBytes: 0,
          queuedCost: 0,
        });
        expect(clock.pending).toBe(0);
      },
    ),
    { numRuns: 300 },
  );
});
