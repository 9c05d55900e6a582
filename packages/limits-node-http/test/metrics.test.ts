import { guard } from 'limits-breaker';
import { Limiter, PartitionedLimiter, type Permit } from 'limits-core';
import * as promClient from 'prom-client';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultRttBuckets, registerMetrics } from '../src/index.js';
import { type Exposition, manualClock, metricsServer, seriesKey } from './support/metricsScrape.js';

const OUTCOMES = ['success', 'dropped', 'failure', 'ignore'];
const REASONS = [
  'at_limit',
  'queue_full',
  'queue_bytes',
  'too_large',
  'deadline',
  'expired',
  'aborted',
  'closed',
];
const GAUGES = ['limit', 'capacity', 'inflight', 'queued', 'queued_bytes', 'oldest_queued_seconds'];

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
function buckets(scraped: Exposition, name: string, labels: Record<string, string> = {}) {
  return Object.fromEntries(
    [...defaultRttBuckets.map(String), '+Inf'].map((le) => [
      le,
      scraped.value(`${name}_bucket`, { ...labels, le }),
    ]),
  );
}

describe('registerMetrics on a Limiter', () => {
  it('exports every documented series with the right values after 3 successes, 1 dropped, 2 queue_full refusals', async () => {
    const clock = manualClock();
    const limiter = new Limiter({ limit: 2, maxQueued: 1, clock });
    const registry = new Registry();
    const handle = registerMetrics(registry, limiter, { prefix: 'db_' });
    const server = await serve(registry);

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
    expect(handle.names).toEqual([
      ...GAUGES.map((g) => `db_${g}`),
      'db_calls_total',
      'db_rejections_total',
      'db_rtt_seconds',
    ]);
    expect(s.value('db_limit')).toBe(2);
    expect(s.value('db_capacity')).toBe(2);
    expect(s.value('db_inflight')).toBe(2);
    expect(s.value('db_queued')).toBe(1);
    expect(s.value('db_queued_bytes')).toBe(100);
    expect(s.value('db_oldest_queued_seconds')).toBe(1.5);
    for (const g of GAUGES) expect(s.types.get(`db_${g}`)).toBe('gauge');
    expect(s.types.get('db_calls_total')).toBe('counter');
    expect(s.types.get('db_rejections_total')).toBe('counter');
    expect(s.types.get('db_rtt_seconds')).toBe('histogram');
    expect(
      Object.fromEntries(OUTCOMES.map((o) => [o, s.value('db_calls_total', { outcome: o })])),
    ).toEqual({
      success: 3,
      dropped: 1,
      failure: 0,
      ignore: 0,
    });
    for (const r of REASONS)
      expect(s.value('db_rejections_total', { reason: r }), r).toBe(r === 'queue_full' ? 2 : 0);
    expect(s.value('db_rtt_seconds_count')).toBe(4);
    expect(s.value('db_rtt_seconds_sum')).toBeCloseTo(10.22, 9);
    expect(buckets(s, 'db_rtt_seconds')).toEqual({
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
    await crossCheck(registry, s);

    // The queued waiter gets a's slot; the gauges follow on the next scrape.
    a.success();
    (await queued).ignore();
    const t = await server.scrape();
    expect(t.value('db_inflight')).toBe(1);
    expect(t.value('db_queued')).toBe(0);
    expect(t.value('db_queued_bytes')).toBe(0);
    expect(t.value('db_oldest_queued_seconds')).toBe(0);
    expect(t.value('db_calls_total', { outcome: 'success' })).toBe(4);
    expect(t.value('db_calls_total', { outcome: 'ignore' })).toBe(1);
    b.success();
  });

  it('unregister removes every listener and every series, and leaves a limiter nobody watches on its untimed path', async () => {
    const limiter = new Limiter({ limit: 2 });
    const registry = new Registry();
    const other = new promClient.Gauge({ name: 'other', help: 'not ours', registers: [registry] });
    other.set(7);
    const handle = registerMetrics(registry, limiter);
    expect(limiter.listenerCount('release')).toBe(1);
    expect(limiter.listenerCount('reject')).toBe(1);
    const server = await serve(registry);
    expect(
      [...(await server.scrape()).names()].filter((n) => n.startsWith('limits_')),
    ).toHaveLength(
      GAUGES.length + 2 + 3, // + calls, rejections, rtt _bucket/_sum/_count
    );

    handle.unregister();
    handle.unregister(); // idempotent
    expect(limiter.listenerCount('release')).toBe(0);
    expect(limiter.listenerCount('reject')).toBe(0);
    const s = await server.scrape();
    expect([...s.names()]).toEqual(['other']);
    expect((await registry.getMetricsAsJSON()).map((m) => m.name)).toEqual(['other']);
    // No listener: the limiter does not time calls any more (a permit's release reports rtt NaN).
    const rtts: number[] = [];
    const p = limiter.tryAcquire() as Permit;
    limiter.on('release', (e) => rtts.push(e.rtt));
    p.success();
    expect(rtts).toEqual([Number.NaN]);
    // The same prefix can be registered again.
    registerMetrics(registry, limiter).unregister();
  });

  it('takes custom RTT buckets and an explicit prom-client module', async () => {
    const clock = manualClock();
    const limiter = new Limiter({ limit: 1, clock });
    const registry = new Registry();
    registerMetrics(registry, limiter, { prefix: '', rttBuckets: [0.5, 2], client: promClient });
    const server = await serve(registry);
    const p = limiter.tryAcquire() as Permit;
    clock.advance(1000);
    p.success();
    const s = await server.scrape();
    expect(s.value('rtt_seconds_bucket', { le: '0.5' })).toBe(0);
    expect(s.value('rtt_seconds_bucket', { le: '2' })).toBe(1);
    expect(s.value('rtt_seconds_bucket', { le: '+Inf' })).toBe(1);
    expect(s.value('inflight')).toBe(0);
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
    registerMetrics(registry, bulkheads, { prefix: 'api_' });
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
      s.value(`api_${name}`, { partition, ...extra });
    expect(at('inflight', 'recs')).toBe(3);
    expect(at('inflight', 'login')).toBe(1);
    expect(at('queued', 'recs')).toBe(1);
    expect(at('queued', 'login')).toBe(0);
    expect(at('queued_bytes', 'recs')).toBe(64);
    expect(at('queued_bytes', 'login')).toBe(0);
    // The ledger: recs runs 3 on a reserve of 1, so it borrows 2 from the shared pool.
    expect(at('reserved', 'recs')).toBe(1);
    expect(at('reserved', 'login')).toBe(1);
    expect(at('borrowed', 'recs')).toBe(2);
    expect(at('borrowed', 'login')).toBe(0);
    expect(s.types.get('api_borrowed')).toBe('gauge');
    for (const p of ['login', 'recs']) {
      expect(at('limit', p)).toBe(4);
      expect(at('capacity', p)).toBe(4);
      expect(at('oldest_queued_seconds', p)).toBe(p === 'recs' ? 0.05 : 0);
      for (const o of OUTCOMES)
        expect(at('calls_total', p, { outcome: o })).toBe(p === 'login' && o === 'success' ? 1 : 0);
      for (const r of REASONS)
        expect(at('rejections_total', p, { reason: r })).toBe(
          p === 'recs' && r === 'queue_full' ? 2 : 0,
        );
    }
    expect(at('rtt_seconds_count', 'login')).toBe(1);
    expect(at('rtt_seconds_sum', 'login')).toBe(0.05);
    expect(at('rtt_seconds_bucket', 'login', { le: '0.05' })).toBe(1);
    expect(at('rtt_seconds_bucket', 'login', { le: '0.025' })).toBe(0);
    expect(at('rtt_seconds_count', 'recs')).toBe(0);
    // Every series carries a partition label (no unlabelled aggregate to double count).
    for (const key of s.samples.keys()) expect(key).toMatch(/partition="(login|recs)"/);
    await crossCheck(registry, s);

    for (const p of held) p.success();
    (await waiting).success();
    l2.success();
  });
});

describe('registerMetrics on a guard', () => {
  it("adds the circuit state, fallbacks by reason and the breaker's outcomes to its limiter's series", async () => {
    const clock = manualClock();
    let release: (value: string) => void = () => {};
    const g = guard(
      (_ctx, what: number | 'fail' | 'hold') => {
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
    const handle = registerMetrics(registry, g, { prefix: 'pay_' });
    expect(handle.names).toContain('pay_circuit_state');
    const server = await serve(registry);

    await expect(g.fire(20)).resolves.toBe('ok');
    await expect(g.fire(200)).resolves.toBe('ok');
    await expect(g.fire('fail')).rejects.toThrow('boom');
    const held = g.fire('hold');
    await expect(g.fire(1)).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED', reason: 'at_limit' });

    let s = await server.scrape();
    expect(s.value('pay_inflight')).toBe(1);
    expect(s.value('pay_capacity')).toBe(1);
    expect(s.value('pay_circuit_state', { state: 'CLOSED' })).toBe(1);
    expect(s.value('pay_circuit_state', { state: 'OPEN' })).toBe(0);
    expect(s.value('pay_circuit_state', { state: 'HALF_OPEN' })).toBe(0);

    release('late');
    await expect(held).resolves.toBe('late');
    g.breaker.open();
    await expect(g.fire(1)).rejects.toMatchObject({ code: 'CIRCUIT_OPEN' });
    await new Promise((resolve) => setImmediate(resolve)); // opossum reports on a later tick

    s = await server.scrape();
    expect(s.value('pay_circuit_state', { state: 'OPEN' })).toBe(1);
    expect(s.value('pay_circuit_state', { state: 'CLOSED' })).toBe(0);
    expect(s.value('pay_inflight')).toBe(0);
    expect(s.value('pay_calls_total', { outcome: 'success' })).toBe(3);
    expect(s.value('pay_calls_total', { outcome: 'failure' })).toBe(1);
    expect(s.value('pay_calls_total', { outcome: 'dropped' })).toBe(0);
    expect(s.value('pay_rejections_total', { reason: 'at_limit' })).toBe(1);
    expect(s.value('pay_fallbacks_total', { reason: 'error' })).toBe(1);
    expect(s.value('pay_fallbacks_total', { reason: 'limiter' })).toBe(1);
    expect(s.value('pay_fallbacks_total', { reason: 'open' })).toBe(1);
    expect(s.value('pay_fallbacks_total', { reason: 'timeout' })).toBe(0);
    expect(s.value('pay_breaker_outcomes_total', { outcome: 'success' })).toBe(3);
    expect(s.value('pay_breaker_outcomes_total', { outcome: 'failure' })).toBe(1);
    expect(s.value('pay_rtt_seconds_sum')).toBeCloseTo(0.22, 9);
    await crossCheck(registry, s);

    handle.unregister();
    expect(g.listenerCount('fallback')).toBe(0);
    expect([g.breaker.listenerCount('success'), g.breaker.listenerCount('failure')]).toEqual(
      before,
    );
    expect(g.limiter.listenerCount('release')).toBe(0);
    expect(g.limiter.listenerCount('reject')).toBe(0);
    expect(await registry.getMetricsAsJSON()).toEqual([]);
  });
});

describe('registerMetrics refuses bad input before registering anything', () => {
  it('refuses a second source under the same prefix, naming the metric and the prefix', () => {
    const limiter = new Limiter({ limit: 1 });
    const registry = new Registry();
    registerMetrics(registry, limiter, { prefix: 'x_' });
    const other = new Limiter({ limit: 1 });
    expect(() => registerMetrics(registry, other, { prefix: 'x_' })).toThrow(
      new RangeError(
        'limits: the registry already has a metric named "x_limit": give each source its own option "prefix", got "x_"',
      ),
    );
    expect(other.listenerCount('release')).toBe(0);
    expect(registry.getMetricsAsArray()).toHaveLength(GAUGES.length + 3);
  });

  it.each([
    [{ prefix: 'bad-prefix' }, RangeError, 'option "prefix" must match'],
    [{ prefix: 7 }, TypeError, 'option "prefix" must be a string, got 7'],
    [{ prefx: 'a_' }, TypeError, 'did you mean "prefix"?'],
    [{ rttBuckets: [1, 1] }, RangeError, 'got [1, 1]'],
    [{ rttBuckets: [] }, RangeError, 'option "rttBuckets" must be 1 to 50'],
    [{ rttBuckets: [0.1, Number.NaN] }, RangeError, 'got [0.1, NaN]'],
    [
      { rttBuckets: '1,2' },
      TypeError,
      'option "rttBuckets" must be an array of numbers, got "1,2"',
    ],
    [{ client: {} }, TypeError, 'option "client" must be the prom-client module'],
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
    expect(() => registerMetrics(registry, limiter, { client: client as never })).toThrow(
      'no histograms here',
    );
    expect(registry.getMetricsAsArray()).toEqual([]);
    expect(limiter.listenerCount('release') + limiter.listenerCount('reject')).toBe(0);
  });

  it('refuses something that is not a registry or not a source', () => {
    const limiter = new Limiter({ limit: 1 });
    expect(() => registerMetrics({} as never, limiter)).toThrow(
      new TypeError('limits: registerMetrics needs a prom-client Registry, got an object'),
    );
    expect(() => registerMetrics(new Registry(), { limiter: 1 } as never)).toThrow(
      new TypeError(
        'limits: registerMetrics needs a Limiter, a PartitionedLimiter or a guard, got an object',
      ),
    );
  });
});
