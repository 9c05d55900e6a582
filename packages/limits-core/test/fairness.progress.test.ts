import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { LimitAlgorithm } from '../src/algorithms/LimitAlgorithm.js';
import { DeficitRoundRobin } from '../src/fairness/DeficitRoundRobin.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { SelectorEntry, WaiterExtras } from '../src/queue/Waiter.js';
import { flush } from './support/FakeClock.js';
import { serveTenants, tenantOf, testOwner, Waiter } from './support/Waiter.js';

const owner = testOwner;

/**
 * A waiter whose charge is read through a getter that throws after `budget` reads, so a selector
 * that spins on it fails the test instead of hanging the run.
 */
function waiter(tenant: string, charge: number, budget = 100_000): Waiter {
  const extras = new WaiterExtras();
  const w = new Waiter(owner, 1, 0, () => {}, extras);
  const entry = new SelectorEntry(w, tenant, 0, charge);
  let reads = 0;
  Object.defineProperty(entry, 'charge', {
    get() {
      if (++reads > budget) throw new Error(`peek() spun: charge read ${reads} times`);
      return charge;
    },
  });
  extras.sel = entry;
  return w;
}

const serve = serveTenants;

/** A custom algorithm without `maxLimit`: the limiter cannot know the largest charge. */
function customLimit(limit: number): LimitAlgorithm {
  return {
    limit,
    update() {
      return limit;
    },
  };
}

describe('deficit round robin always makes progress', () => {
  test('a head whose charge exceeds maxCredit is served once its tenant has maxCredit', () => {
    const drr = new DeficitRoundRobin({ quantum: 1, maxCredit: 1 }, Infinity);
    drr.add(waiter('a', 2));
    expect(tenantOf(drr.peek() as Waiter)).toBe('a');
  });

  test('a tenant whose charges exceed maxCredit still gets only its share: the excess is carried as debt', () => {
    const drr = new DeficitRoundRobin({ quantum: 1, maxCredit: 1 }, Infinity);
    for (let i = 0; i < 20; i++) drr.add(waiter('heavy', 2));
    for (let i = 0; i < 40; i++) drr.add(waiter('light', 1));
    const order = serve(drr, 30);
    const heavy = order.filter((t) => t === 'heavy').length;
    const light = order.length - heavy;
    // Equal quanta: equal served cost, so twice as many light (cost 1) as heavy (cost 2) grants.
    expect(Math.abs(light - 2 * heavy)).toBeLessThanOrEqual(2);
  });

  test('fractional quanta far below the charge reach the head in one peek', () => {
    const drr = new DeficitRoundRobin(
      { quantum: (t) => (t === 'a' ? 0.1 : 0.3), maxCredit: 7 },
      Infinity,
    );
    drr.add(waiter('a', 1e6, 1000));
    drr.add(waiter('b', 7, 1000));
    expect(serve(drr, 2).sort()).toEqual(['a', 'b']);
  });

  test('permit.success() returns and serves a cost-2 waiter when maxCredit is 1 and the algorithm has no maxLimit', async () => {
    const limiter = new Limiter({
      algorithm: customLimit(2),
      maxQueued: 10,
      fairness: { maxCredit: 1 },
    });
    const held = (await limiter.acquire({ cost: 2 })) as Permit;
    const waiting = limiter.acquire({ cost: 2, tenant: 'a' });
    const other = limiter.acquire({ cost: 1, tenant: 'b' });
    held.success();
    const first = await waiting;
    expect(limiter.inflight).toBe(2);
    first.success();
    (await other).success();
    await flush();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, queued: 0, tenants: 0 });
  });
});

describe('a fairness quantum function is checked before the fair queue changes', () => {
  for (const [label, value, type] of [
    ['0', 0, RangeError],
    ['a negative number', -1, RangeError],
    ['NaN', Number.NaN, TypeError],
    ['Infinity', Infinity, RangeError],
    ['a string', '2', TypeError],
    ['undefined', undefined, TypeError],
  ] as const) {
    test(`a quantum function returning ${label} throws a ${type.name} naming the tenant and leaves no tenant behind`, () => {
      const drr = new DeficitRoundRobin(
        { quantum: (t) => (t === 'bad' ? (value as number) : 1) },
        Infinity,
      );
      drr.add(waiter('good', 1));
      expect(() => drr.add(waiter('bad', 1))).toThrow(type);
      expect(() => drr.add(waiter('bad', 1))).toThrow(/"fairness.quantum\("bad"\)" must be/);
      expect(drr.tenants).toBe(1);
      expect(serve(drr, 5)).toEqual(['good']);
      expect(drr.tenants).toBe(0);
      expect(drr.peek()).toBeUndefined();
    });
  }
});

describe('deficit round robin progress (model)', () => {
  // The smallest case the model found of a charge above maxCredit, kept as a fixed case.
  test('a charge a hair above maxCredit with a tiny quantum is served', () => {
    const drr = new DeficitRoundRobin({ quantum: 0.01, maxCredit: 0.5 }, Infinity);
    drr.add(waiter('0', 0.5000000000000001, 10_000));
    expect(tenantOf(drr.peek() as Waiter)).toBe('0');
  });

  // Whatever the quanta, charges and maxCredit, every peek returns a waiter while any is queued,
  // within a bounded number of steps, and serves them all.
  test('random quanta, charges above and below maxCredit, adds, serves and deletes', () => {
    fc.assert(
      fc.property(
        fc.record({
          quanta: fc.array(fc.double({ min: 0.01, max: 50, noNaN: true }), {
            minLength: 1,
            maxLength: 4,
          }),
          maxCredit: fc.double({ min: 0.5, max: 20, noNaN: true }),
          ops: fc.array(
            fc.oneof(
              fc.record({
                op: fc.constant('add' as const),
                tenant: fc.nat(3),
                charge: fc.oneof(
                  fc.double({ min: 0.01, max: 5, noNaN: true }),
                  fc.double({ min: 1, max: 1e6, noNaN: true }),
                ),
              }),
              fc.record({ op: fc.constant('serve' as const) }),
              fc.record({ op: fc.constant('delete' as const), index: fc.nat() }),
            ),
            { maxLength: 60 },
          ),
        }),
        ({ quanta, maxCredit, ops }) => {
          const drr = new DeficitRoundRobin(
            { quantum: (t) => quanta[Number(t) % quanta.length] as number, maxCredit },
            Infinity,
          );
          const queued: Waiter[] = [];
          const serveOne = () => {
            const w = drr.peek();
            expect(w).toBeDefined();
            expect(drr.peek()).toBe(w); // repeated peeks return the same waiter
            drr.served(w as Waiter);
            queued.splice(queued.indexOf(w as Waiter), 1);
          };
          for (const o of ops) {
            if (o.op === 'add') {
              const w = waiter(String(o.tenant), o.charge, 10_000);
              drr.add(w);
              queued.push(w);
            } else if (o.op === 'serve' && queued.length > 0) serveOne();
            else if (o.op === 'delete' && queued.length > 0) {
              const w = queued.splice(o.index % queued.length, 1)[0] as Waiter;
              drr.delete(w);
            }
          }
          while (queued.length > 0) serveOne();
          expect(drr.peek()).toBeUndefined();
          expect(drr.tenants).toBe(0);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
