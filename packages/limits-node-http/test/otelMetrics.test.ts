import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { metrics as otelApi } from '@opentelemetry/api';
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricData,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { guard } from 'limits-breaker';
import { type Clock, Limiter, OUTCOMES, type Permit, Quota, REJECT_REASONS } from 'limits-core';
import { afterEach, describe, expect, it } from 'vitest';
import { loadShed, METRICS, type MetricsHandle, registerOtelMetrics } from '../src/index.js';
import { closeServers, deferred, listen } from './support/loadShedServers.js';

/** A clock that moves only by `advance`, firing the timers that fall due. */
function steppedClock(start = 1000): Clock & { advance(ms: number): void } {
  let now = start;
  let next = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  return {
    now: () => now,
    setTimeout(fn, ms) {
      timers.set(++next, { at: now + ms, fn });
      return next;
    },
    clearTimeout(id) {
      timers.delete(id as number);
    },
    advance(ms) {
      now += ms;
      for (const [id, t] of [...timers].sort((a, b) => a[1].at - b[1].at)) {
        if (t.at > now) continue;
        timers.delete(id);
        t.fn();
      }
    },
  };
}

/** An SDK MeterProvider whose metrics land in an in-memory exporter, exported on `collect()`. */
function sdk() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  // An hour: nothing is exported but by `forceFlush`.
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  return {
    meter: provider.getMeter('limits-test'),
    async collect(): Promise<Map<string, MetricData>> {
      exporter.reset();
      await reader.forceFlush();
      const out = new Map<string, MetricData>();
      for (const rm of exporter.getMetrics())
        for (const sm of rm.scopeMetrics) for (const m of sm.metrics) out.set(m.descriptor.name, m);
      return out;
    },
    shutdown: () => provider.shutdown(),
  };
}

type Attrs = Record<string, string>;

/** The value of the data point of `metric` whose attributes are exactly `attrs`. */
function pointValue(metric: MetricData | undefined, attrs: Attrs): unknown {
  const point = metric?.dataPoints.find(
    (p) =>
      Object.keys(p.attributes).length === Object.keys(attrs).length &&
      Object.entries(attrs).every(([k, v]) => p.attributes[k] === v),
  );
  if (point === undefined) throw new Error(`no data point ${JSON.stringify(attrs)}`);
  return point.value;
}

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await closeServers();
});

describe('registerOtelMetrics on an OpenTelemetry SDK meter', () => {
  it('reports every refusal reason and every outcome of a limiter, a loadShed on a real server and a guard, with the names, units and attributes of the scheme', async () => {
    const otel = sdk();
    cleanups.push(() => otel.shutdown());
    const handles: MetricsHandle[] = [];
    const register = (
      ...args: Parameters<typeof registerOtelMetrics> extends [unknown, ...infer R] ? R : never
    ) => {
      const h = registerOtelMetrics(otel.meter, ...args);
      handles.push(h);
      return h;
    };

    // 1. A limiter through seven of the nine reasons, the four outcomes and a measured queue wait.
    const clock = steppedClock();
    const jobs = new Limiter({
      limit: 1,
      maxQueued: 1,
      maxQueuedBytes: 10,
      maxQueueWaitMs: 100,
      clock,
    });
    register(jobs, { limiter: 'jobs' });
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => 'granted',
        (e: { reason: string }) => e.reason,
      );
    const held = jobs.tryAcquire() as Permit;
    expect(await refusal(jobs.acquire({ bytes: 20 }))).toBe('queue_bytes');
    expect(await refusal(jobs.acquire({ cost: 5 }))).toBe('too_large');
    expect(await refusal(jobs.acquire({ deadline: 999 }))).toBe('deadline');
    const expiring = refusal(jobs.acquire());
    expect(await refusal(jobs.acquire())).toBe('queue_full');
    clock.advance(150);
    expect(await expiring).toBe('expired');
    const abort = new AbortController();
    const aborting = refusal(jobs.acquire({ signal: abort.signal }));
    abort.abort(new Error('caller left'));
    expect(await aborting).toBe('aborted');
    // A queued request served after 40 ms.
    const waiting = jobs.acquire();
    clock.advance(40);
    held.success();
    const served = await waiting;
    clock.advance(10);
    served.dropped();
    (jobs.tryAcquire() as Permit).failure();
    (jobs.tryAcquire() as Permit).ignore();

    // 2. Shed: a shedding limiter makes room in its full queue for a more important request.
    const ranked = new Limiter({ limit: 1, maxQueued: 1, shedding: {} });
    register(ranked, { limiter: 'ranked' });
    const top = ranked.tryAcquire() as Permit;
    const low = refusal(ranked.acquire({ criticality: 'sheddable' }));
    const high = ranked.acquire({ criticality: 'critical' });
    expect(await low).toBe('shed');
    top.success();
    (await high).success();

    // 3. A loadShed (with a quota in front) on a node:http server on 127.0.0.1: at_limit, a quota
    // refusal, and the server requests' durations as lease durations.
    const quota = new Quota<{ account: string }>({
      windowMs: 60_000,
      axes: [{ name: 'account', key: (c) => c.account, limit: 1 }],
    });
    const shed = loadShed({
      limiter: new Limiter({ limit: 1, maxQueued: 0 }),
      quota,
      quotaContext: (req) => ({ account: String(req.headers['x-account']) }),
    });
    register(shed, { limiter: 'api' });
    const gate = deferred();
    const url = await listen(
      createServer(
        shed.wrap(async (_req, res) => {
          await gate.promise;
          res.end('ok');
        }),
      ),
    );
    const get = (account: string) => fetch(url, { headers: { 'x-account': account } });
    const first = get('a');
    await new Promise<void>((resolve) =>
      (shed.limiter as Limiter).once('acquire', () => resolve()),
    );
    const busy = await get('b');
    expect(busy.status).toBe(503);
    expect(await busy.json()).toEqual({ error: 'overloaded', reason: 'at_limit' });
    gate.resolve();
    expect((await first).status).toBe(200);
    expect((await get('a')).status).toBe(429); // a's second request this window: the quota's

    // 4. Closed.
    await jobs.close();
    expect(await refusal(jobs.acquire())).toBe('closed');

    // 5. A guard: a failure answered by the fallback, then a success.
    const g = guard(
      async (_ctx: unknown, fail: boolean) => {
        if (fail) throw new Error('down');
        return 'up';
      },
      { limiter: { limit: 2 }, timeoutMs: false, fallback: () => 'cached' },
    );
    cleanups.push(() => g.shutdown());
    register(g, { limiter: 'pay' });
    expect(await g.fire(false)).toBe('up');
    expect(await g.fire(true)).toBe('cached');
    await new Promise((resolve) => setImmediate(resolve)); // opossum reports on a later tick

    const got = await otel.collect();

    // Every reason and every outcome was seen, somewhere.
    const requests = got.get('limits.requests') as MetricData;
    const seen = (label: string, result?: string) =>
      new Set(
        requests.dataPoints
          .filter(
            (p) =>
              (p.value as number) > 0 && (result === undefined || p.attributes.result === result),
          )
          .map((p) => p.attributes[label]),
      );
    expect([...seen('reason', 'refused')].sort()).toEqual([...REJECT_REASONS].sort());
    const outcomes = got.get('limits.outcomes') as MetricData;
    expect(
      new Set(
        outcomes.dataPoints.filter((p) => (p.value as number) > 0).map((p) => p.attributes.outcome),
      ),
    ).toEqual(new Set(OUTCOMES));

    // Names, units, kinds: those of the scheme.
    for (const spec of Object.values(METRICS)) {
      if (spec.group === 'partition' || spec.group === 'retry') continue;
      const m = got.get(spec.otel);
      expect(m, spec.otel).toBeDefined();
      expect(m?.descriptor.unit, spec.otel).toBe(spec.unit);
      expect(m?.descriptor.description, spec.otel).toBe(spec.help);
      expect(m?.dataPointType, spec.otel).toBe(
        spec.kind === 'gauge'
          ? DataPointType.GAUGE
          : spec.kind === 'counter'
            ? DataPointType.SUM
            : DataPointType.HISTOGRAM,
      );
    }

    // The limiter's exact counts.
    const j = { limiter: 'jobs' };
    expect(pointValue(requests, { ...j, result: 'admitted' })).toBe(4);
    for (const reason of REJECT_REASONS) {
      expect(pointValue(requests, { ...j, result: 'refused', reason }), reason).toBe(
        ['at_limit', 'shed'].includes(reason) ? 0 : 1,
      );
    }
    for (const outcome of OUTCOMES) expect(pointValue(outcomes, { ...j, outcome })).toBe(1);
    const wait = pointValue(got.get('limits.queue.wait'), j) as {
      count: number;
      sum: number;
      buckets: { boundaries: number[]; counts: number[] };
    };
    expect(wait.count).toBe(1); // the one request that queued
    expect(wait.sum).toBeCloseTo(0.04, 9);
    expect(wait.buckets.boundaries).toEqual([
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]);
    const lease = pointValue(got.get('limits.lease.duration'), j) as { count: number; sum: number };
    expect(lease.count).toBe(4);
    // The first permit was held 150 + 40 ms, the served one 10 ms, the last two 0.
    expect(lease.sum).toBeCloseTo(0.2, 9);
    expect(pointValue(got.get('limits.limit'), j)).toBe(1);
    expect(pointValue(got.get('limits.inflight'), j)).toBe(0);

    // The loadShed: its limiter's refusal, its quota's, and its requests' durations.
    const api = { limiter: 'api' };
    expect(pointValue(requests, { ...api, result: 'refused', reason: 'at_limit' })).toBe(1);
    expect(pointValue(requests, { ...api, result: 'admitted' })).toBe(1);
    expect(pointValue(got.get('limits.quota.refusals'), { ...api, axis: 'account' })).toBe(1);
    expect((pointValue(got.get('limits.lease.duration'), api) as { count: number }).count).toBe(1);
    expect(pointValue(outcomes, { ...api, outcome: 'success' })).toBe(1);

    // The guard.
    const pay = { limiter: 'pay' };
    expect(pointValue(got.get('limits.fallbacks'), { ...pay, reason: 'error' })).toBe(1);
    expect(pointValue(got.get('limits.breaker.calls'), { ...pay, outcome: 'failure' })).toBe(1);
    expect(pointValue(got.get('limits.breaker.calls'), { ...pay, outcome: 'success' })).toBe(1);
    expect(g.state).toBe('CLOSED');
    expect(pointValue(got.get('limits.breaker.state'), { ...pay, state: 'closed' })).toBe(1);
    expect(pointValue(got.get('limits.breaker.state'), { ...pay, state: 'open' })).toBe(0);
    expect(pointValue(got.get('limits.breaker.state'), { ...pay, state: 'half_open' })).toBe(0);

    // Closing: no listener left anywhere, and the gauges' callback is gone.
    for (const h of handles) h.close();
    for (const l of [jobs, ranked, shed.limiter as Limiter, g.limiter]) {
      for (const e of ['acquire', 'release', 'reject'] as const) expect(l.listenerCount(e)).toBe(0);
    }
    for (const e of ['refuse', 'alert', 'failure'] as const) expect(quota.listenerCount(e)).toBe(0);
    expect(g.listenerCount('fallback')).toBe(0);
    // The gauges are read no more: a permit taken now does not show (the SDK may repeat the last
    // cumulative value it saw, never a new one).
    const late = ranked.tryAcquire() as Permit;
    const after = await otel.collect();
    const inflight = after
      .get('limits.inflight')
      ?.dataPoints.filter((p) => p.attributes.limiter === 'ranked')
      .map((p) => p.value);
    expect(inflight === undefined || inflight.every((v) => v === 0)).toBe(true);
    late.success();
  });

  it('refuses a second registration under one name on a meter, and bad input, before registering anything', () => {
    const otel = sdk();
    cleanups.push(() => otel.shutdown());
    const a = new Limiter({ limit: 1 });
    const b = new Limiter({ limit: 1 });
    const handle = registerOtelMetrics(otel.meter, a, { limiter: 'db' });
    expect(() => registerOtelMetrics(otel.meter, b, { limiter: 'db' })).toThrow(
      new RangeError(
        'limits: option "limiter" must be unique per meter: "db" is already registered (close its handle first, or give this source another name)',
      ),
    );
    expect(b.listenerCount('release')).toBe(0);
    expect(() => registerOtelMetrics({} as never, b, { limiter: 'x' })).toThrow(
      new TypeError(
        'limits: registerOtelMetrics needs an OpenTelemetry Meter (metrics.getMeter(name)), got an object',
      ),
    );
    expect(() => registerOtelMetrics(otel.meter, b, { limiter: 'bad name' })).toThrow(RangeError);
    expect(() => registerOtelMetrics(otel.meter, b, { limiter: 'x', buckets: [] })).toThrow(
      'option "buckets" must be 1 to 50',
    );
    expect(b.listenerCount('release')).toBe(0);
    handle[Symbol.dispose]();
    registerOtelMetrics(otel.meter, b, { limiter: 'db' }).close();
  });

  it('works on the API’s no-op meter (no SDK installed): the limiter runs as before, and close takes every listener away', async () => {
    const limiter = new Limiter({ limit: 2 });
    const handle = registerOtelMetrics(otelApi.getMeter('noop'), limiter, { limiter: 'db' });
    expect(handle.names).toEqual(
      Object.values(METRICS)
        .filter((s) => s.group === 'limiter')
        .map((s) => s.otel),
    );
    await expect(limiter.run(async () => 7)).resolves.toBe(7);
    handle.close();
    expect(limiter.listenerCount('acquire') + limiter.listenerCount('release')).toBe(0);
  });

  it('the package never imports @opentelemetry (only the meter it is given is used)', () => {
    const src = join(import.meta.dirname, '..', 'src');
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.ts'),
    );
    expect(files.length).toBeGreaterThan(20);
    for (const f of files) {
      const text = readFileSync(join(src, f), 'utf8');
      // Code lines, not comments (the TSDoc examples show the user's own import).
      expect(text, f).not.toMatch(/^\s*import[^\n]*from '@opentelemetry/m);
      expect(text, f).not.toMatch(/^[^*\n]*(import|require)\('@opentelemetry/m);
    }
  });
});
