import { describe, expect, test } from 'vitest';
import { fitDownstream, type TraceRecord } from '../src/index.js';
import { InFlight } from '../src/trace/InFlight.js';
import { type KneeModel, kneeTrace } from './support/kneeTrace.js';
import { seeded } from './support/random.js';

/** Load swinging between `low` and `high` calls/s every 20 s. */
const swinging = (low: number, high: number) => (tMs: number) =>
  (low + high) / 2 + ((high - low) / 2) * Math.sin((2 * Math.PI * tMs) / 20_000);

// Concurrency swings from ~4 to ~80 around the knee; a 5 s spike of 5× the base latency.
const MODERATE: KneeModel = {
  baseMs: (t) => (t >= 30_000 && t < 35_000 ? 100 : 20),
  knee: 20,
  exponent: 0.5,
  sigma: 0.1,
  ratePerS: swinging(200, 2000),
  durationMs: 60_000,
  seed: 1,
};

// A steeper curve past a higher knee (concurrency ~5 to ~80), no spike.
const STEEP: KneeModel = {
  baseMs: () => 10,
  knee: 50,
  exponent: 0.8,
  sigma: 0.2,
  ratePerS: swinging(500, 5500),
  durationMs: 60_000,
  seed: 1,
};

describe('fitDownstream recovers a known downstream from a synthetic trace', () => {
  // Tolerances: the knee within 20 % (the grid's steps are 15.5 %), the exponent within 0.05, the
  // jitter within 20 %, for each of three seeds.
  test.each([
    ['moderate', MODERATE, 1],
    ['moderate', MODERATE, 2],
    ['moderate', MODERATE, 3],
    ['steep', STEEP, 1],
    ['steep', STEEP, 2],
    ['steep', STEEP, 3],
  ] as const)('%s model, seed %d: knee, exponent and jitter', (_, model, seed) => {
    const { fit } = fitDownstream(kneeTrace({ ...model, seed }));
    expect(fit.knee).toBeGreaterThanOrEqual(model.knee / 1.2);
    expect(fit.knee).toBeLessThanOrEqual(model.knee * 1.2);
    expect(Math.abs(fit.exponent - model.exponent)).toBeLessThanOrEqual(0.05);
    expect(fit.sigma / model.sigma).toBeGreaterThan(0.8);
    expect(fit.sigma / model.sigma).toBeLessThan(1.2);
    expect(fit.exponentT).toBeGreaterThanOrEqual(4);
  });

  test('the base latency follows the spike, and the spike is reported as its span', () => {
    const { fit, report } = fitDownstream(kneeTrace(MODERATE));
    expect(fit.bucketMs).toBe(250);
    expect(fit.medianBaseMs).toBeGreaterThan(18);
    expect(fit.medianBaseMs).toBeLessThan(22);
    expect(fit.spikes).toHaveLength(1);
    const [spike] = fit.spikes;
    expect(spike?.fromMs).toBeGreaterThanOrEqual(30_000 - 250);
    expect(spike?.fromMs).toBeLessThanOrEqual(30_000);
    expect(spike?.toMs).toBeGreaterThanOrEqual(35_000);
    expect(spike?.toMs).toBeLessThanOrEqual(35_000 + 250);
    expect(spike?.peakMs).toBeGreaterThan(90);
    expect(spike?.peakMs).toBeLessThan(115);
    // Outside the spike the base is the model's 20 ms.
    const calm = fit.baseMs.filter((_, i) => i * 250 < 29_000 || i * 250 > 36_000);
    expect(Math.min(...calm)).toBeGreaterThan(17);
    expect(Math.max(...calm)).toBeLessThan(23);
    expect(report).toMatch(
      /Spikes \(base above 3 × median\): 30\.00 s to 35\.00 s \(peak \d+ ms\)\./,
    );
    expect(report).toMatch(/Knee: \d+\.\d calls in flight, exponent 0\.\d\d \(t \d+\.\d\)/);
    expect(report).toMatch(/R²: 0\.9\d\d on log latency/);
  });

  test('a latency spike that drives concurrency up is not taken for a concurrency effect', () => {
    // The S1 shape: 100 calls/s, 50 ms, then 3,000 ms for 8 s, no limit (concurrency up to ~300).
    const s1: KneeModel = {
      baseMs: (t) => (t >= 5000 && t < 13_000 ? 3000 : 50),
      knee: Number.POSITIVE_INFINITY,
      exponent: 0,
      sigma: 0.05,
      ratePerS: () => 100,
      durationMs: 21_000,
      seed: 4,
    };
    const { fit, report } = fitDownstream(kneeTrace(s1));
    expect(fit.peakConcurrency).toBeGreaterThan(250);
    expect(fit.knee).toBe(Number.POSITIVE_INFINITY);
    expect(fit.exponent).toBe(0);
    expect(report).toMatch(/Knee: none \(latency does not grow with concurrency/);
    expect(fit.spikes).toHaveLength(1);
    expect(fit.spikes[0]?.fromMs).toBeLessThanOrEqual(5000);
    expect(fit.spikes[0]?.toMs).toBeGreaterThanOrEqual(13_000);
  });

  test('refused calls do not load the downstream: the same fit with half the calls refused', () => {
    const all = fitDownstream(
      kneeTrace({ ...MODERATE, ratePerS: swinging(400, 4000), refusedShare: 0.5 }),
    );
    expect(all.fit.records.refused).toBeGreaterThan(50_000);
    expect(all.fit.knee).toBeGreaterThanOrEqual(20 / 1.2);
    expect(all.fit.knee).toBeLessThanOrEqual(20 * 1.2);
    expect(Math.abs(all.fit.exponent - 0.5)).toBeLessThanOrEqual(0.05);
    expect(all.report).toMatch(/refused: not counted as load on the downstream/);
  });

  test('overload and failure rates per bucket, carried over buckets without calls', () => {
    const records: TraceRecord[] = [];
    for (let t = 0; t < 4000; t += 10) {
      if (t >= 2000 && t < 3000) continue; // no calls for 1 s
      const overload = t >= 1000 && t < 1250 && (t / 10) % 5 === 0; // 5 of the bucket's 25
      const failure = t >= 3000 && (t / 10) % 5 === 0;
      records.push({
        startMs: t,
        durationMs: 5,
        outcome: overload ? 'overload' : failure ? 'failure' : 'success',
      });
    }
    const { fit, report } = fitDownstream(records);
    expect(fit.overloadRate.slice(3, 6)).toEqual([0, 0.2, 0]);
    expect(fit.overloadRate.slice(8, 12)).toEqual([0, 0, 0, 0]); // the gap repeats the last bucket
    expect(fit.failureRate.slice(12)).toEqual([0.2, 0.2, 0.2, 0.2]);
    expect(fit.baseMs.every((v) => Math.abs(v - 5) < 1e-9)).toBe(true);
    expect(fit.knee).toBe(Number.POSITIVE_INFINITY); // every call took 5 ms, whatever the concurrency
    expect(report).toMatch(
      /failure 6\.7 % \(highest 20\.0 % at 3\.00 s\), overload 1\.7 % \(highest 20\.0 % at 1\.00 s\)/,
    );
  });
});

describe('the fitted downstream', () => {
  test('answers base × max(1, n / knee)^exponent, jittered, from a seeded random source', () => {
    const { downstream, fit } = fitDownstream(kneeTrace(MODERATE));
    const median = (atMs: number, n: number) => {
      const random = seeded(9);
      const v = Array.from({ length: 2001 }, () => downstream.call(atMs, n, random).serviceMs);
      return v.sort((a, b) => a - b)[1000] as number;
    };
    const base = fit.baseMs[40] as number; // t = 10 s
    expect(median(10_000, 1) / base).toBeCloseTo(1, 1);
    expect(median(10_000, fit.knee) / base).toBeCloseTo(1, 1);
    expect(median(10_000, 4 * fit.knee) / base).toBeCloseTo(4 ** fit.exponent, 1);
    // The same seed, the same answers.
    const a = seeded(3);
    const b = seeded(3);
    for (let i = 0; i < 100; i++)
      expect(downstream.call(i * 100, i, a)).toEqual(downstream.call(i * 100, i, b));
  });

  test('draws outcomes at the bucket rates; before the first bucket the first applies, after the last the last', () => {
    const records: TraceRecord[] = [];
    for (let t = 0; t < 1000; t += 1) {
      records.push({
        startMs: 1000 + t,
        durationMs: 10,
        outcome: t >= 500 && t % 4 === 0 ? 'overload' : 'success',
      });
    }
    const { downstream, fit } = fitDownstream(records);
    expect(fit.sigma).toBeLessThan(1e-6); // every call took 10 ms: no jitter but rounding
    expect(fit.originMs).toBe(1000);
    const random = seeded(11);
    const count = (atMs: number) => {
      let overload = 0;
      for (let i = 0; i < 4000; i++) {
        const call = downstream.call(atMs, 1, random);
        expect(call.serviceMs).toBeCloseTo(10, 4);
        if (call.outcome === 'overload') overload++;
      }
      return overload / 4000;
    };
    expect(count(0)).toBe(0);
    expect(count(1100)).toBe(0);
    expect(count(1800)).toBeGreaterThan(0.22);
    expect(count(1800)).toBeLessThan(0.28);
    expect(count(1e9)).toBeGreaterThan(0.22);
  });
});

test('fits 1,000,000 records from a generator in bounded state: at most 4,096 buckets, widened as the trace grows', () => {
  // 100 calls/s for 10,000 s, 40 ms each (concurrency ~4); 400 s at 400 ms from t = 5,000 s.
  function* million(): Generator<TraceRecord> {
    for (let i = 0; i < 1_000_000; i++) {
      const startMs = i * 10;
      const spike = startMs >= 5_000_000 && startMs < 5_400_000;
      yield { startMs, durationMs: spike ? 400 : 40, outcome: 'success' };
    }
  }
  const { fit, report } = fitDownstream(million());
  expect(fit.records.success).toBe(1_000_000);
  expect(fit.bucketMs).toBe(4000); // 250 ms doubled 4 times: 10,000 s in 2,500 buckets
  expect(fit.baseMs).toHaveLength(2500);
  expect(fit.knee).toBe(Number.POSITIVE_INFINITY);
  expect(fit.spikes).toEqual([
    { fromMs: 5_000_000, toMs: 5_400_000, peakMs: expect.closeTo(400, 6) },
  ]);
  expect(report).toMatch(/2500 buckets of 4,000 ms/);
});

describe('fitDownstream refuses what it cannot fit', () => {
  const ok = { startMs: 0, durationMs: 1, outcome: 'success' } as const;
  test.each([
    [
      'not iterable',
      5,
      TypeError,
      /fitDownstream's records must be an iterable of trace records, got 5/,
    ],
    ['empty', [], RangeError, /fitDownstream: no records to fit/],
    [
      'without a success',
      [
        { ...ok, outcome: 'refused' },
        { ...ok, outcome: 'overload' },
      ],
      RangeError,
      /no successful call to fit latency from \(0 failure, 1 overload, 1 refused\)/,
    ],
    [
      'out of start order',
      [ok, { ...ok, startMs: 10 }, { ...ok, startMs: 9 }],
      RangeError,
      /records\[2\]\.startMs \(9\) is before records\[1\]\.startMs \(10\); records must come in start order/,
    ],
    [
      'a negative duration',
      [{ ...ok, durationMs: -1 }],
      RangeError,
      /records\[0\]\.durationMs must be a finite number ≥ 0, got -1/,
    ],
    [
      'a NaN start',
      [{ ...ok, startMs: Number.NaN }],
      RangeError,
      /records\[0\]\.startMs must be a finite number, got NaN/,
    ],
    [
      'a missing start',
      [{ durationMs: 1, outcome: 'success' }],
      TypeError,
      /records\[0\]\.startMs must be a finite number, got undefined/,
    ],
    [
      'an unknown outcome',
      [{ ...ok, outcome: 'ok' }],
      RangeError,
      /records\[0\]\.outcome must be one of "success", "failure", "overload", "refused", got "ok"/,
    ],
    [
      'a record that is not an object',
      [ok, null],
      TypeError,
      /records\[1\] must be a trace record, got null/,
    ],
  ])('%s', (_, records, Kind, message) => {
    expect(() => fitDownstream(records as Iterable<TraceRecord>)).toThrow(Kind);
    expect(() => fitDownstream(records as Iterable<TraceRecord>)).toThrow(message);
  });
});

test('InFlight counts the calls in flight as each starts, itself included; a call ending as another starts does not meet it', () => {
  const inFlight = new InFlight();
  expect(inFlight.enter(0, 10)).toBe(1);
  expect(inFlight.enter(2, 5)).toBe(2);
  expect(inFlight.enter(4, 30)).toBe(3);
  expect(inFlight.enter(5, 6)).toBe(3); // the call ending at 5 is gone
  expect(inFlight.enter(10, 11)).toBe(2); // 0–10 and 5–6 gone: 4–30 and itself
  expect(inFlight.enter(30, 31)).toBe(1);
  expect(inFlight.peak).toBe(3);
});
