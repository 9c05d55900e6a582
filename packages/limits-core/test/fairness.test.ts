import { describe, expect, test } from 'vitest';
import { CostEstimator } from '../src/fairness/CostEstimator.js';
import { DeficitRoundRobin } from '../src/fairness/DeficitRoundRobin.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { SelectorEntry, WaiterExtras } from '../src/queue/Waiter.js';
import { FakeClock, flush } from './support/FakeClock.js';
import { serveTenants, tenantOf, testOwner, Waiter } from './support/Waiter.js';

const owner = testOwner;
function waiter(tenant: string, charge: number): Waiter {
  const extras = new WaiterExtras();
  const w = new Waiter(owner, 1, 0, () => {}, extras);
  extras.sel = new SelectorEntry(w, tenant, 0, charge);
  return w;
}
const chargeOf = (w: Waiter) => w.sel?.charge ?? 0;

const serve = serveTenants;

describe('deficit round robin', () => {
  test("seed 000's table: quantum A = 2, B = 4; A's heads cost 5, B's cost 2", () => {
    const drr = new DeficitRoundRobin({ quantum: (t) => (t === 'A' ? 2 : 4), maxCredit: 10 }, 10);
    for (let i = 0; i < 20; i++) drr.add(waiter('A', 5));
    for (let i = 0; i < 40; i++) drr.add(waiter('B', 2));
    // Round 1: A has 2 < 5, B has 4 → B, B. Round 2: A has 4 < 5, B → B, B. Round 3: A has 6 → A
    // (1 left), B → B, B. Round 4: A has 3 < 5, B → B, B. Round 5: A has 5 → A (0), B → B, B.
    expect(serve(drr, 13)).toEqual([
      'B',
      'B',
      'B',
      'B',
      'A',
      'B',
      'B',
      'B',
      'B',
      'A',
      'B',
      'B',
      'B',
    ]);
  });

  test('over a long backlog, served cost splits in the ratio of the quanta (1:2 within ±5 %)', () => {
    const drr = new DeficitRoundRobin({ quantum: (t) => (t === 'A' ? 2 : 4) }, 10);
    for (let i = 0; i < 5000; i++) drr.add(waiter('A', 5));
    for (let i = 0; i < 20000; i++) drr.add(waiter('B', 2));
    const served = { A: 0, B: 0 };
    for (let i = 0; i < 6000; i++) {
      const w = drr.peek() as Waiter;
      served[tenantOf(w) as 'A' | 'B'] += chargeOf(w);
      drr.served(w);
    }
    expect(served.B / served.A).toBeGreaterThan(2 * 0.95);
    expect(served.B / served.A).toBeLessThan(2 * 1.05);
  });

  test('credit is capped and reset when a tenant goes idle', () => {
    const drr = new DeficitRoundRobin({ quantum: 3, maxCredit: 4 }, 4);
    drr.add(waiter('A', 1));
    serve(drr, 1); // A earns 3, spends 1, goes idle: its credit is dropped with its entry
    expect(drr.tenants).toBe(0);
    for (let i = 0; i < 3; i++) drr.add(waiter('A', 4));
    drr.add(waiter('B', 1));
    // A starts from 0 again: 3 < 4 → B first; then A has min(4, 6) = 4 → one A, not a burst of two.
    expect(serve(drr, 3)).toEqual(['B', 'A', 'A']);
  });

  test('maxCredit below the largest charge is refused', () => {
    expect(() => new DeficitRoundRobin({ maxCredit: 3 }, 8)).toThrow(
      /"fairness.maxCredit" must be a number in \[8, Infinity\), got 3/,
    );
  });
});

describe('tenant fairness in the limiter', () => {
  test('a tenant flooding the queue does not starve another', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 1000, fairness: { quantum: 1 } });
    const held = limiter.tryAcquire() as Permit;
    const order: string[] = [];
    const all: Promise<void>[] = [];
    for (let i = 0; i < 50; i++)
      all.push(
        limiter.acquire({ tenant: 'flood' }).then((p) => {
          order.push('flood');
          p.success();
        }),
      );
    for (let i = 0; i < 3; i++)
      all.push(
        limiter.acquire({ tenant: 'quiet' }).then((p) => {
          order.push('quiet');
          p.success();
        }),
      );
    held.success();
    await Promise.all(all);
    // Round robin: the quiet tenant's three requests are among the first six served.
    expect(order.slice(0, 6).filter((t) => t === 'quiet')).toHaveLength(3);
  });

  test('a heavy job (cost = max) amid a stream of cost-1 jobs runs within a bounded number of rounds', async () => {
    const limiter = new Limiter({ limit: 4, maxQueued: 1000, fairness: { quantum: 1 } });
    const running: Permit[] = [];
    for (let i = 0; i < 4; i++) running.push(limiter.tryAcquire() as Permit);
    let heavyAt = -1;
    let grants = 0;
    const heavy = limiter.acquire({ tenant: 'batch', cost: 4 }).then((p) => {
      heavyAt = grants;
      return p;
    });
    // A steady stream: every time a light job is granted it ends and another arrives.
    const pump = async () => {
      const p = await limiter.acquire({ tenant: 'web' });
      grants++;
      if (heavyAt < 0) void pump();
      p.success();
    };
    for (let i = 0; i < 4; i++) void pump();
    for (const p of running) p.success();
    const h = await heavy;
    // The heavy tenant earns 1 per round and needs 4: it is chosen by the 4th round, then strict head
    // of line holds newcomers back until 4 units are free.
    expect(heavyAt).toBeGreaterThanOrEqual(0);
    expect(heavyAt).toBeLessThanOrEqual(8);
    expect(h.cost).toBe(4);
    h.success();
  });

  test('100,000 distinct tenants passing through leave the tenant table within its bound', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 64, fairness: {} });
    let maxTenants = 0;
    for (let batch = 0; batch < 100_000 / 64; batch++) {
      const held = limiter.tryAcquire() as Permit;
      const pending: Promise<void>[] = [];
      for (let i = 0; i < 64; i++) {
        pending.push(limiter.acquire({ tenant: `t${batch * 64 + i}` }).then((p) => p.success()));
      }
      maxTenants = Math.max(maxTenants, limiter.snapshot().tenants);
      held.success();
      await Promise.all(pending);
    }
    // The table holds only tenants with waiters: never more than maxQueued, empty once drained.
    expect(maxTenants).toBe(64);
    expect(limiter.snapshot().tenants).toBe(0);
  });

  test('a per-tenant cap refuses with queue_full and names the tenant', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 100, fairness: { maxQueuedPerTenant: 2 } });
    limiter.tryAcquire();
    void limiter.acquire({ tenant: 'a' });
    void limiter.acquire({ tenant: 'a' });
    const e = await limiter.acquire({ tenant: 'a' }).catch((x: unknown) => x);
    expect(e).toMatchObject({ reason: 'queue_full' });
    expect((e as Error).message).toMatch(/tenant "a" has reached maxQueuedPerTenant/);
    void limiter.acquire({ tenant: 'b' });
    expect(limiter.queued).toBe(3);
  });

  test('expired heads are removed and reported, never run', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({
      limit: 1,
      maxQueued: 10,
      clock,
      fairness: {},
      initialServiceMs: 0,
    });
    const held = limiter.tryAcquire() as Permit;
    const outcomes: string[] = [];
    const a = limiter.acquire({ tenant: 'a', timeoutMs: 10 }).then(
      () => outcomes.push('a ran'),
      (e) => outcomes.push(`a ${e.reason}`),
    );
    const b = limiter.acquire({ tenant: 'b', timeoutMs: 1000 }).then((p) => {
      outcomes.push('b ran');
      p.success();
    });
    await clock.advance(20);
    held.success();
    await Promise.all([a, b]);
    expect(outcomes).toEqual(['a expired', 'b ran']);
  });

  test('with an estimator, tenants are charged the measured cost of their kind, not their claim', async () => {
    const clock = new FakeClock();
    const costs = new CostEstimator({ floor: 1, ceiling: 1000 });
    costs.observe('report', 40);
    costs.observe('lookup', 1);
    const limiter = new Limiter({
      limit: 1,
      maxQueued: 100,
      clock,
      fairness: { quantum: 10, estimator: costs },
    });
    const held = limiter.tryAcquire() as Permit;
    const order: string[] = [];
    const all: Promise<void>[] = [];
    // Both tenants claim cost 1; the reports really cost 40 each.
    for (let i = 0; i < 5; i++) {
      all.push(
        limiter.acquire({ tenant: 'analyst', kind: 'report' }).then((p) => {
          order.push('R');
          p.success();
        }),
      );
    }
    for (let i = 0; i < 40; i++) {
      all.push(
        limiter.acquire({ tenant: 'shop', kind: 'lookup' }).then((p) => {
          order.push('L');
          p.success();
        }),
      );
    }
    held.success();
    await Promise.all(all);
    // Per 4 rounds the analyst earns 40 (one report) while the shop is served 10 lookups per round.
    expect(order.slice(0, 41).filter((x) => x === 'R').length).toBeLessThanOrEqual(2);
  });

  test('run observes how long each kind held its permit into the estimator', async () => {
    const clock = new FakeClock();
    const costs = new CostEstimator({ floor: 1 });
    const limiter = new Limiter({ limit: 2, maxQueued: 10, clock, fairness: { estimator: costs } });
    const done = limiter.run(() => new Promise<void>((r) => clock.setTimeout(r, 30)), {
      kind: 'q',
    });
    await clock.advance(30);
    await done;
    expect(costs.estimate('q')).toBe(30);
    await flush();
  });
});

describe('CostEstimator', () => {
  test('an exponential average per kind, clamped to [floor, ceiling]', () => {
    const c = new CostEstimator({ factor: 0.5, floor: 2, ceiling: 100 });
    expect(c.estimate('x')).toBe(2);
    c.observe('x', 10);
    expect(c.estimate('x')).toBe(10);
    c.observe('x', 20);
    expect(c.estimate('x')).toBe(15);
    c.observe('x', 1000);
    expect(c.estimate('x')).toBe(100);
    c.observe('y', 0);
    expect(c.estimate('y')).toBe(2);
  });

  test('per-byte estimates scale with the input size', () => {
    const c = new CostEstimator({ perByte: true, floor: 0, factor: 1 });
    c.observe('parse', 50, 1000);
    expect(c.estimate('parse', 4000)).toBe(200);
  });

  test('ratio tracks actual / estimated', () => {
    const c = new CostEstimator({ factor: 1, initial: 10, floor: 1 });
    c.observe('k', 30); // estimated 10, cost 30
    expect(c.ratio('k')).toBe(3);
    c.observe('k', 30); // estimated 30 now
    expect(c.ratio('k')).toBe(1);
    expect(c.ratio('unknown')).toBeUndefined();
  });

  test('remembers at most maxKinds kinds, forgetting the least recently used', () => {
    const c = new CostEstimator({ maxKinds: 3 });
    for (const k of ['a', 'b', 'c']) c.observe(k, 5);
    c.observe('a', 5);
    c.observe('d', 5); // evicts b
    expect(c.kinds).toBe(3);
    expect(c.ratio('b')).toBeUndefined();
    expect(c.ratio('a')).toBeDefined();
  });

  test('bad options name the option and the range', () => {
    expect(() => new CostEstimator({ factor: 0 })).toThrow(
      /"costs.factor" must be a number in \(0, 1\], got 0/,
    );
    expect(() => new CostEstimator({ floor: 10, ceiling: 5 })).toThrow(/"costs.ceiling"/);
  });
});
