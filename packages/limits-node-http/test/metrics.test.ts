import { guard } from 'limits-breaker';
import {
  Limiter,
  OUTCOMES,
  PartitionedLimiter,
  type Permit,
  Quota,
  REJECT_REASONS,
  RetryBudget,
  RetryPolicy,
} from 'limits-core';
import * as promClient from 'prom-client';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultSecondsBuckets, registerMetrics } from '../src/index.js';
import { type Exposition, manualClock, metricsServer, seriesKey } from './support/metricsScrape.js';

const GAUGES = [
  'limits_limit',
  'limits_capacity',
  'limits_inflight',
  'limits_queued',
  'limits_queued_bytes',
  'limits_queue_oldest_wait_seconds',
];
const LIMITER_NAMES = [
  ...GAUGES,
  'limits_requests_total',
  'limits_outcomes_total',
  'limits_queue_wait_seconds',
  'limits_lease_duration_seconds',
];

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(registry: Registry) {
  const server = await metricsServer(registry);
  cleanups.push(() => server.close());
  return server;
}

/** Every value prom-client itself reports (getMetricsAsJSON) is in the scraped exposition, equal. */
async function crossCheck(registry: Registry, scraped: Exposition): Promise<void> {
  let count = 0;
  for (const metric of await registry.getMetricsAsJSON()) {
    for (const v of metric.values) {
      const name = (v as { metricName?: string }).metricName ?? metric.name;
      const labels = Object.fromEntries(
        Object.entries(v.labels).map(([k, x]) => [
          k,
          k === 'le' && x === Infinity ? '+Inf' : String(x),
        ]),
      );
      expect(scraped.value(name, labels), seriesKey(name, labels)).toBe(v.value);
      count++;
    }
  }
  expect(scraped.samples.size).toBe(count);
}

/** The histogram's cumulative bucket counts, by bound. */
function buckets(scraped: Exposition, name: string, labels: Record<string, string>) {
  return Object.fromEntries(
    [...defaultSecondsBuckets.map(String), '+Inf'].map((le) => [
      le,
      scraped.value(`${name}_bucket`, { ...labels, le }),
    ]),
  );
}

describe('registerMetrics on a Limiter', () => {
  it('exports every documented series, labelled limiter="db", after 3 successes, 1 dropped, 2 queue_full refusals', async () => {
    const clock = manualClock();
    // maxQueueWaitMs: the queue reads the time, so it measures each wait (see the README).
    const limiter = new Limiter({ limit: 2, maxQueued: 1, maxQueueWaitMs: 60_000, clock });
    const registry = new Registry();
    const handle = registerMetrics(registry, limiter, { limiter: 'db' });
    const server = await serve(registry);
    const db = { limiter: 'db' };

    for (const ms of [20, 200, 3000]) {
      const p = limiter.tryAcquire() as Permit;
      clock.advance(ms);
      p.success();
    }
    const d = limiter.tryAcquire() as Permit;
    clock.advance(7000);
    d.dropped();
    const a = limiter.tryAcquire() as Permit;
    const b = limiter.tryAcquire() as Permit;
    const queued = limiter.acquire({ bytes: 100 });
    clock.advance(1500);
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'queue_full' });
    await expect(limiter.acquire({ bytes: 10 })).rejects.toMatchObject({ reason: 'queue_full' });

    const s = await server.scrape();
    expect(handle.limiter).toBe('db');
    expect(handle.names).toEqual(LIMITER_NAMES);
    expect(s.value('limits_limit', db)).toBe(2);
    expect(s.value('limits_capacity', db)).toBe(2);
    expect(s.value('limits_inflight', db)).toBe(2);
    expect(s.value('limits_queued', db)).toBe(1);
    expect(s.value('limits_queued_bytes', db)).toBe(100);
    expect(s.value('limits_queue_oldest_wait_seconds', db)).toBe(1.5);
    for (const g of GAUGES) expect(s.types.get(g)).toBe('gauge');
    expect(s.types.get('limits_requests_total')).toBe('counter');
    expect(s.types.get('limits_outcomes_total')).toBe('counter');
    expect(s.types.get('limits_queue_wait_seconds')).toBe('histogram');
    expect(s.types.get('limits_lease_duration_seconds')).toBe('histogram');
    expect(
      Object.fromEntries(
        OUTCOMES.map((o) => [o, s.value('limits_outcomes_total', { ...db, outcome: o })]),
      ),
    ).toEqual({ success: 3, dropped: 1, failure: 0, ignore: 0 });
    expect(s.value('limits_requests_total', { ...db, result: 'admitted' })).toBe(6);
    for (const r of REJECT_REASONS) {
      expect(s.value('limits_requests_total', { ...db, result: 'refused', reason: r }), r).toBe(
        r === 'queue_full' ? 2 : 0,
      );
    }
    // Six grants at once: no wait observed.
    expect(s.value('limits_queue_wait_seconds_count', db)).toBe(0);
    expect(s.value('limits_queue_wait_seconds_sum', db)).toBe(0);
    expect(s.value('limits_lease_duration_seconds_count', db)).toBe(4);
    expect(s.value('limits_lease_duration_seconds_sum', db)).toBeCloseTo(10.22, 9);
    expect(buckets(s, 'limits_lease_duration_seconds', db)).toEqual({
      '0.001': 0,
      '0.0025': 0,
      '0.005': 0,
      '0.01': 0,
      '0.025': 1,
      '0.05': 1,
      '0.1': 1,
      '0.25': 2,
      '0.5': 2,
      '1': 2,
      '2.5': 2,
      '5': 3,
      '10': 4,
      '+Inf': 4,
    });
    // Every series carries the limiter label.
    for (const key of s.samples.keys()) expect(key).toContain('limiter="db"');
    await crossCheck(registry, s);

    // The queued waiter gets a's slot after 1.5 s in the queue; the gauges follow on the next scrape.
    a.success();
    (await queued).ignore();
    const t = await server.scrape();
    expect(t.value('limits_inflight', db)).toBe(1);
    expect(t.value('limits_queued', db)).toBe(0);
    expect(t.value('limits_queued_bytes', db)).toBe(0);
    expect(t.value('limits_queue_oldest_wait_seconds', db)).toBe(0);
    expect(t.value('limits_requests_total', { ...db, result: 'admitted' })).toBe(7);
    expect(t.value('limits_queue_wait_seconds_count', db)).toBe(1);
    expect(t.value('limits_queue_wait_seconds_sum', db)).toBe(1.5);
    expect(t.value('limits_queue_wait_seconds_bucket', { ...db, le: '1' })).toBe(0);
    expect(t.value('limits_queue_wait_seconds_bucket', { ...db, le: '2.5' })).toBe(1);
    expect(t.value('limits_outcomes_total', { ...db, outcome: 'success' })).toBe(4);
    expect(t.value('limits_outcomes_total', { ...db, outcome: 'ignore' })).toBe(1);
    b.success();
    handle.close();
  });

  it('two limiters share each metric family, told apart by the limiter label; a second "db" is refused', async () => {
    const registry = new Registry();
    const db = new Limiter({ limit: 3 });
    const search = new Limiter({ limit: 5 });
    const dbMetrics = registerMetrics(registry, db, { limiter: 'db' });
    const searchMetrics = registerMetrics(registry, search, { limiter: 'search' });
    const third = new Limiter({ limit: 1 });
    expect(() => registerMetrics(registry, third, { limiter: 'db' })).toThrow(
      new RangeError(
        'limits: option "limiter" must be unique per registry: "db" is already registered (close its handle first, or give this source another name)',
      ),
    );
    expect(third.listenerCount('release')).toBe(0);
    const server = await serve(registry);
    const p = db.tryAcquire() as Permit;

    let s = await server.scrape();
    expect(s.value('limits_limit', { limiter: 'db' })).toBe(3);
    expect(s.value('limits_limit', { limiter: 'search' })).toBe(5);
    expect(s.value('limits_inflight', { limiter: 'db' })).toBe(1);
    expect(s.value('limits_inflight', { limiter: 'search' })).toBe(0);
    expect((await registry.getMetricsAsJSON()).map((m) => m.name)).toEqual(LIMITER_NAMES);
    await crossCheck(registry, s);

    // Closing one removes its series only; the last one out removes the families.
    dbMetrics.close();
    p.success();
    s = await server.scrape();
    for (const key of s.samples.keys()) expect(key).toContain('limiter="search"');
    expect(s.value('limits_limit', { limiter: 'search' })).toBe(5);
    expect(db.listenerCount('release')).toBe(0);
    // The name is free again.
    registerMetrics(registry, third, { limiter: 'db' })[Symbol.dispose]();
    searchMetrics.close();
    expect(await registry.getMetricsAsJSON()).toEqual([]);
  });

  it('close removes every listener and every series, and leaves a limiter nobody watches on its untimed path', async () => {
    const limiter = new Limiter({ limit: 2 });
    const registry = new Registry();
    const other = new promClient.Gauge({ name: 'other', help: 'not ours', registers: [registry] });
    other.set(7);
    const handle = registerMetrics(registry, limiter, { limiter: 'db' });
    for (const e of ['acquire', 'release', 'reject'] as const) {
      expect(limiter.listenerCount(e)).toBe(1);
    }
    handle.close();
    handle.close(); // idempotent
    for (const e of ['acquire', 'release', 'reject'] as const) {
      expect(limiter.listenerCount(e)).toBe(0);
    }
    const server = await serve(registry);
    expect([...(await server.scrape()).names()]).toEqual(['other']);
    // No listener: the limiter does not time calls any more (a permit's release reports rtt NaN).
    const rtts: number[] = [];
    const p = limiter.tryAcquire() as Permit;
    limiter.on('release', (e) => rtts.push(e.rtt));
    p.success();
    expect(rtts).toEqual([Number.NaN]);
  });

  it('takes custom buckets and an explicit prom-client module; a later source must give the same buckets', async () => {
    const clock = manualClock();
    const limiter = new Limiter({ limit: 1, clock });
    const registry = new Registry();
    registerMetrics(registry, limiter, { limiter: 'a', buckets: [0.5, 2], client: promClient });
    expect(() => registerMetrics(registry, new Limiter({ limit: 1 }), { limiter: 'b' })).toThrow(
      'option "buckets" must be the registry\'s histogram buckets [0.5, 2] (every source of a registry shares them), got [0.001,',
    );
    const server = await serve(registry);
    const p = limiter.tryAcquire() as Permit;
    clock.advance(1000);
    p.success();
    const s = await server.scrape();
    const a = { limiter: 'a' };
    expect(s.value('limits_lease_duration_seconds_bucket', { ...a, le: '0.5' })).toBe(0);
    expect(s.value('limits_lease_duration_seconds_bucket', { ...a, le: '2' })).toBe(1);
    expect(s.value('limits_lease_duration_seconds_bucket', { ...a, le: '+Inf' })).toBe(1);
  });
});

describe('registerMetrics on a PartitionedLimiter', () => {
  it('labels every series with its partition: /recommendations saturated and shedding while /login is admitted', async () => {
    const clock = manualClock();
    const bulkheads = new PartitionedLimiter({
      limit: 4,
      clock,
      partitions: {
        login: { reserved: 1 },
        recs: { reserved: 1, maxBorrow: 2, maxQueued: 1 },
      },
    });
    const registry = new Registry();
    const handle = registerMetrics(registry, bulkheads, { limiter: 'api' });
    expect(handle.names).toEqual([
      ...LIMITER_NAMES,
      'limits_partition_reserved',
      'limits_partition_borrowed',
    ]);
    const server = await serve(registry);
    const recs = bulkheads.partition('recs');
    const login = bulkheads.partition('login');

    const held = [1, 2, 3].map(() => recs.tryAcquire() as Permit);
    expect(recs.tryAcquire()).toBeUndefined();
    const waiting = recs.acquire({ bytes: 64 });
    await expect(recs.acquire()).rejects.toMatchObject({ reason: 'queue_full' });
    await expect(recs.acquire()).rejects.toMatchObject({ reason: 'queue_full' });
    const l1 = login.tryAcquire() as Permit;
    clock.advance(50);
    l1.success();
    const l2 = login.tryAcquire() as Permit; // login is still admitted

    const s = await server.scrape();
    const at = (name: string, partition: string, extra: Record<string, string> = {}) =>
      s.value(`limits_${name}`, { limiter: 'api', partition, ...extra });
    expect(at('inflight', 'recs')).toBe(3);
    expect(at('inflight', 'login')).toBe(1);
    expect(at('queued', 'recs')).toBe(1);
    expect(at('queued', 'login')).toBe(0);
    expect(at('queued_bytes', 'recs')).toBe(64);
    // The ledger: recs runs 3 on a reserve of 1, so it borrows 2 from the shared pool.
    expect(at('partition_reserved', 'recs')).toBe(1);
    expect(at('partition_reserved', 'login')).toBe(1);
    expect(at('partition_borrowed', 'recs')).toBe(2);
    expect(at('partition_borrowed', 'login')).toBe(0);
    for (const p of ['login', 'recs']) {
      expect(at('limit', p)).toBe(4);
      expect(at('queue_oldest_wait_seconds', p)).toBe(p === 'recs' ? 0.05 : 0);
      for (const o of OUTCOMES)
        expect(at('outcomes_total', p, { outcome: o })).toBe(
          p === 'login' && o === 'success' ? 1 : 0,
        );
      for (const r of REJECT_REASONS)
        expect(at('requests_total', p, { result: 'refused', reason: r })).toBe(
          p === 'recs' && r === 'queue_full' ? 2 : 0,
        );
      expect(at('requests_total', p, { result: 'admitted' })).toBe(p === 'recs' ? 3 : 2);
    }
    expect(at('lease_duration_seconds_count', 'login')).toBe(1);
    expect(at('lease_duration_seconds_sum', 'login')).toBe(0.05);
    expect(at('lease_duration_seconds_count', 'recs')).toBe(0);
    // Every series carries a partition label (no unlabelled aggregate to double count).
    for (const key of s.samples.keys()) expect(key).toMatch(/partition="(login|recs)"/);
    await crossCheck(registry, s);

    for (const p of held) p.success();
    (await waiting).success();
    l2.success();
    handle.close();
  });
});

describe('registerMetrics on a guard', () => {
  it("adds the circuit state, fallbacks by reason and the breaker's outcomes to its limiter's series", async () => {
    const clock = manualClock();
    let release: (value: string) => void = () => {};
    const g = guard(
      (_ctx: unknown, what: number | 'fail' | 'hold') => {
        if (what === 'fail') return Promise.reject(new Error('boom'));
        if (what === 'hold') return new Promise<string>((resolve) => (release = resolve));
        clock.advance(what);
        return 'ok';
      },
      { limiter: { limit: 1, maxQueued: 0 }, timeoutMs: false, clock },
    );
    cleanups.push(() => g.shutdown());
    const before = [g.breaker.listenerCount('success'), g.breaker.listenerCount('failure')];
    const registry = new Registry();
    const handle = registerMetrics(registry, g, { limiter: 'pay' });
    expect(handle.names).toEqual([
      ...LIMITER_NAMES,
      'limits_breaker_state',
      'limits_breaker_calls_total',
      'limits_fallbacks_total',
    ]);
    const server = await serve(registry);
    const pay = { limiter: 'pay' };

    await expect(g.fire(20)).resolves.toBe('ok');
    await expect(g.fire(200)).resolves.toBe('ok');
    await expect(g.fire('fail')).rejects.toThrow('boom');
    const held = g.fire('hold');
    await expect(g.fire(1)).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED', reason: 'at_limit' });

    let s = await server.scrape();
    expect(s.value('limits_inflight', pay)).toBe(1);
    expect(s.value('limits_breaker_state', { ...pay, state: 'closed' })).toBe(1);
    expect(s.value('limits_breaker_state', { ...pay, state: 'open' })).toBe(0);
    expect(s.value('limits_breaker_state', { ...pay, state: 'half_open' })).toBe(0);

    release('late');
    await expect(held).resolves.toBe('late');
    g.breaker.open();
    await expect(g.fire(1)).rejects.toMatchObject({ code: 'CIRCUIT_OPEN' });
    await new Promise((resolve) => setImmediate(resolve)); // opossum reports on a later tick

    s = await server.scrape();
    expect(s.value('limits_breaker_state', { ...pay, state: 'open' })).toBe(1);
    expect(s.value('limits_breaker_state', { ...pay, state: 'closed' })).toBe(0);
    expect(s.value('limits_inflight', pay)).toBe(0);
    expect(s.value('limits_outcomes_total', { ...pay, outcome: 'success' })).toBe(3);
    expect(s.value('limits_outcomes_total', { ...pay, outcome: 'failure' })).toBe(1);
    expect(
      s.value('limits_requests_total', { ...pay, result: 'refused', reason: 'at_limit' }),
    ).toBe(1);
    expect(s.value('limits_requests_total', { ...pay, result: 'admitted' })).toBe(4);
    expect(s.value('limits_fallbacks_total', { ...pay, reason: 'error' })).toBe(1);
    expect(s.value('limits_fallbacks_total', { ...pay, reason: 'limiter' })).toBe(1);
    expect(s.value('limits_fallbacks_total', { ...pay, reason: 'open' })).toBe(1);
    expect(s.value('limits_fallbacks_total', { ...pay, reason: 'timeout' })).toBe(0);
    expect(s.value('limits_breaker_calls_total', { ...pay, outcome: 'success' })).toBe(3);
    expect(s.value('limits_breaker_calls_total', { ...pay, outcome: 'failure' })).toBe(1);
    expect(s.value('limits_lease_duration_seconds_sum', pay)).toBeCloseTo(0.22, 9);
    await crossCheck(registry, s);

    handle.close();
    expect(g.listenerCount('fallback')).toBe(0);
    expect([g.breaker.listenerCount('success'), g.breaker.listenerCount('failure')]).toEqual(
      before,
    );
    for (const e of ['acquire', 'release', 'reject'] as const) {
      expect(g.limiter.listenerCount(e)).toBe(0);
    }
    expect(await registry.getMetricsAsJSON()).toEqual([]);
  });
});

describe('registerMetrics with a quota, a retry policy and a retry budget', () => {
  it("counts the quota's refusals and alerts by axis, its store's failures, retries and budget refusals", async () => {
    const quota = new Quota<{ user: string }>({
      windowMs: 60_000,
      axes: [
        { name: 'account', key: (c) => c.user, limit: 2, alertAt: 0.5 },
        { name: 'global', key: () => 'all', limit: 3, status: 503 },
      ],
    });
    const clock = manualClock();
    const budget = new RetryBudget({ ratio: 0, minPerSecond: 0.1, windowMs: 10_000, clock });
    const retry = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 0, budget });
    const registry = new Registry();
    const handle = registerMetrics(registry, new Limiter({ limit: 1 }), {
      limiter: 'jobs',
      quota,
      retry,
      retryBudget: budget,
    });
    expect(handle.names).toEqual([
      ...LIMITER_NAMES,
      'limits_quota_refusals_total',
      'limits_quota_alerts_total',
      'limits_quota_failures_total',
      'limits_retry_budget_available',
      'limits_retries_total',
      'limits_retry_budget_exhausted_total',
    ]);
    const server = await serve(registry);
    const jobs = { limiter: 'jobs' };

    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true }); // a: 1 of 2 → alert
    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    expect((await quota.consume({ user: 'a' })).ok).toBe(false); // account full
    expect(await quota.consume({ user: 'b' })).toEqual({ ok: true }); // b alert; global 3 of 3
    expect((await quota.consume({ user: 'c' })).ok).toBe(false); // global full

    let s = await server.scrape();
    expect(s.value('limits_retry_budget_available', jobs)).toBe(1);
    // The budget allows one retry in the window: the second call's retry is refused.
    let n = 0;
    await expect(
      retry.run(async () => {
        n++;
        throw new Error(`attempt ${n}`);
      }),
    ).rejects.toThrow('attempt 2');
    s = await server.scrape();
    expect(s.value('limits_quota_refusals_total', { ...jobs, axis: 'account' })).toBe(1);
    expect(s.value('limits_quota_refusals_total', { ...jobs, axis: 'global' })).toBe(1);
    expect(s.value('limits_quota_alerts_total', { ...jobs, axis: 'account' })).toBe(2);
    expect(s.value('limits_quota_alerts_total', { ...jobs, axis: 'global' })).toBe(1);
    expect(s.value('limits_quota_failures_total', { ...jobs, policy: 'open' })).toBe(0);
    expect(s.value('limits_quota_failures_total', { ...jobs, policy: 'closed' })).toBe(0);
    expect(s.value('limits_retries_total', jobs)).toBe(1);
    expect(s.value('limits_retry_budget_exhausted_total', jobs)).toBe(1);
    expect(s.value('limits_retry_budget_available', jobs)).toBe(0);
    await crossCheck(registry, s);

    handle.close();
    for (const e of ['refuse', 'alert', 'failure'] as const) expect(quota.listenerCount(e)).toBe(0);
    expect(retry.listenerCount('retry') + retry.listenerCount('budget_exhausted')).toBe(0);
  });
});

describe('registerMetrics refuses bad input before registering anything', () => {
  it.each([
    [
      {},
      TypeError,
      'option "limiter" (the value of the "limiter" label) must be a string, got undefined',
    ],
    [
      { limiter: '' },
      RangeError,
      'option "limiter" must be 1 to 64 characters of [a-zA-Z0-9_.:-], starting with a letter or "_", got ""',
    ],
    [{ limiter: 'a b' }, RangeError, 'got "a b"'],
    [{ limiter: '9lives' }, RangeError, 'got "9lives"'],
    [{ limiter: 'x'.repeat(65) }, RangeError, 'option "limiter" must be 1 to 64 characters'],
    [
      { limiter: 7 },
      TypeError,
      'option "limiter" (the value of the "limiter" label) must be a string, got 7',
    ],
    [{ limiter: 'db', prefix: 'a_' }, TypeError, 'unknown option "prefix"'],
    [{ limiter: 'db', buckets: [1, 1] }, RangeError, 'got [1, 1]'],
    [{ limiter: 'db', buckets: [] }, RangeError, 'option "buckets" must be 1 to 50'],
    [{ limiter: 'db', buckets: [0.1, Number.NaN] }, RangeError, 'got [0.1, NaN]'],
    [
      { limiter: 'db', buckets: '1,2' },
      TypeError,
      'option "buckets" must be an array of numbers, got "1,2"',
    ],
    [{ limiter: 'db', client: {} }, TypeError, 'option "client" must be the prom-client module'],
    [{ limiter: 'db', quota: {} }, TypeError, 'option "quota" must be a Quota, got an object'],
    [{ limiter: 'db', retry: 1 }, TypeError, 'option "retry" must be a RetryPolicy, got 1'],
    [{ limiter: 'db', retryBudget: {} }, TypeError, 'option "retryBudget" must be a RetryBudget'],
  ])('refuses options %o', (options, type, message) => {
    const limiter = new Limiter({ limit: 1 });
    const registry = new Registry();
    expect(() => registerMetrics(registry, limiter, options as never)).toThrow(type);
    expect(() => registerMetrics(registry, limiter, options as never)).toThrow(message);
    expect(registry.getMetricsAsArray()).toEqual([]);
    expect(limiter.listenerCount('release')).toBe(0);
  });

  it('leaves no metric and no listener behind when the client throws half way', () => {
    const limiter = new Limiter({ limit: 1 });
    const registry = new Registry();
    const client = {
      Gauge: promClient.Gauge,
      Counter: promClient.Counter,
      Histogram: class {
        constructor() {
          throw new Error('no histograms here');
        }
      },
    };
    expect(() =>
      registerMetrics(registry, limiter, { limiter: 'db', client: client as never }),
    ).toThrow('no histograms here');
    expect(registry.getMetricsAsArray()).toEqual([]);
    expect(limiter.listenerCount('release') + limiter.listenerCount('reject')).toBe(0);
    // The registry is usable afterwards.
    registerMetrics(registry, limiter, { limiter: 'db' }).close();
  });

  it('refuses a registry that has a metric of the same name from elsewhere', () => {
    const registry = new Registry();
    new promClient.Gauge({ name: 'limits_limit', help: 'not ours', registers: [registry] });
    const limiter = new Limiter({ limit: 1 });
    expect(() => registerMetrics(registry, limiter, { limiter: 'db' })).toThrow(
      new RangeError(
        'limits: the registry already has a metric named "limits_limit" that limits did not register: remove it, or use another registry',
      ),
    );
    expect(registry.getMetricsAsArray()).toHaveLength(1);
    expect(limiter.listenerCount('release')).toBe(0);
  });

  it('refuses something that is not a registry, not options or not a source', () => {
    const limiter = new Limiter({ limit: 1 });
    expect(() => registerMetrics({} as never, limiter, { limiter: 'db' })).toThrow(
      new TypeError('limits: registerMetrics needs a prom-client Registry, got an object'),
    );
    expect(() => registerMetrics(new Registry(), limiter, undefined as never)).toThrow(
      new TypeError(
        'limits: registerMetrics options must be an object with "limiter" (the name of the source), got undefined',
      ),
    );
    expect(() =>
      registerMetrics(new Registry(), { limiter: 1 } as never, { limiter: 'db' }),
    ).toThrow(
      new TypeError(
        'limits: registerMetrics needs a Limiter, a PartitionedLimiter, a guard or a loadShed, got an object',
      ),
    );
  });
});
