import { describe, expect, test } from 'vitest';
import { GradientLimit, type GradientLimitOptions } from '../src/algorithms/GradientLimit.js';
import type { LimitAlgorithm } from '../src/algorithms/LimitAlgorithm.js';
import { VegasLimit, type VegasLimitOptions } from '../src/algorithms/VegasLimit.js';
import { seededRandom } from '../src/internal/random.js';
import {
  type DownstreamModel,
  type Step,
  simulateTraced,
  type Traced,
} from './support/simulate.js';

// The delay-based algorithms (Vegas, Gradient) on the simulated downstream of DESIGN.md (capacity C,
// base latency B, rtt = B × max(1, n/C) ± 5 % seeded noise). Every property is checked on many seeds (noise and probe spacing); `tickMs: 25`
// simulates the ticks of a Limiter's stall detector (its default, `stallThresholdMs` 50), which report
// calls still in flight past the algorithm's `lateAfterMs` through `onLate`.
const C = 50;
const B = 50;
const SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);
const TICK = 25;

type Make = (initial: number, seed: number, extra?: object) => LimitAlgorithm;
const ALGORITHMS: Array<[string, Make]> = [
  [
    'Vegas',
    (initial, seed, extra = {}) =>
      new VegasLimit({
        initialLimit: initial,
        random: seededRandom(seed),
        ...extra,
      } as VegasLimitOptions),
  ],
  [
    'Gradient',
    (initial, seed, extra = {}) =>
      new GradientLimit({
        initialLimit: initial,
        random: seededRandom(seed),
        ...extra,
      } as GradientLimitOptions),
  ],
];

const limitAt = (t: Traced, i: number) => (t.steps[i] as Step).limit;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

describe.each(ALGORITHMS)('%s on the simulated downstream', (_name, make) => {
  test.each([10, 500])(
    'from an initial limit of %i, at least 98 % of the last 500 of 3,000 samples (probe dips included) lie within ±30 % of C, on every seed',
    (initial) => {
      for (const seed of SEEDS) {
        const t = simulateTraced(
          make(initial, seed),
          { capacity: C, baseLatencyMs: B, seed, tickMs: TICK },
          3000,
        );
        let inBand = 0;
        for (let i = 2500; i < 3000; i++) {
          const l = limitAt(t, i);
          if (l >= 0.7 * C && l <= 1.3 * C) inBand++;
        }
        expect(inBand / 500, `seed ${seed}`).toBeGreaterThanOrEqual(0.98);
      }
    },
  );

  test.each([
    ['a 1 s client timeout', 1000],
    ['no client timeout', Infinity],
  ])(
    'a 60× latency spike with %s is cut to ≤ 25 % within 100 samples and regained to ≥ 90 % within 100 samples of recovery, on every seed',
    (_label, timeoutMs) => {
      for (const seed of SEEDS) {
        // Requests started within 8 s of the 3,000th completion take 60 × B (the spike of seed 004).
        let t0 = Infinity;
        const model: DownstreamModel = {
          capacity: C,
          baseLatencyMs: (k, start) => {
            if (k >= 3000 && t0 === Infinity) t0 = start;
            return start >= t0 && start < t0 + 8000 ? 60 * B : B;
          },
          timeoutMs,
          seed,
          tickMs: TICK,
        };
        const t = simulateTraced(make(50, seed), model, 6000);
        let p = 2999;
        while (t.reasons[p]?.startsWith('probe')) p--;
        const prior = limitAt(t, p);
        let cut = 3000;
        while (cut < 6000 && limitAt(t, cut) > 0.25 * prior) cut++;
        // Recovery: the first completion of a call started after the spike.
        let back = 3000;
        while (back < 6000 && (t.steps[back] as Step).sample.startTime < t0 + 8000) back++;
        let regain = back;
        while (regain < 6000 && limitAt(t, regain) < 0.9 * prior) regain++;
        expect(cut - 3000, `seed ${seed}: samples to ≤ 25 %`).toBeLessThanOrEqual(100);
        expect(regain - back, `seed ${seed}: samples to ≥ 90 % after recovery`).toBeLessThanOrEqual(
          100,
        );
      }
    },
  );

  test('the spike is cut by calls still in flight, before the first spiked call completes', () => {
    for (const seed of SEEDS) {
      let t0 = Infinity;
      const model: DownstreamModel = {
        capacity: C,
        baseLatencyMs: (k, start) => {
          if (k >= 3000 && t0 === Infinity) t0 = start;
          return start >= t0 ? 60 * B : B;
        },
        seed,
        tickMs: TICK,
      };
      const t = simulateTraced(make(50, seed), model, 3200);
      let first = 3000;
      while ((t.steps[first] as Step).sample.startTime < t0) first++;
      // Limit after the first spiked completion (3 s after the spike began): late calls already cut it.
      expect(limitAt(t, first), `seed ${seed}`).toBeLessThanOrEqual(0.25 * limitAt(t, 2999));
      expect(t.reasons[first], `seed ${seed}`).toBe('reported-late');
    }
  });

  test('in steady saturation at most 2 % of samples (pooled over seeds; ≤ 3 % on any) sit below 70 % of the settled limit', () => {
    let below = 0;
    let total = 0;
    for (const seed of SEEDS) {
      const t = simulateTraced(
        make(50, seed),
        { capacity: C, baseLatencyMs: B, seed, tickMs: TICK },
        12000,
      );
      const limits = t.steps.slice(2000).map((s) => s.limit);
      const settled = median(limits);
      const n = limits.filter((l) => l < 0.7 * settled).length;
      expect(n / limits.length, `seed ${seed}`).toBeLessThanOrEqual(0.03);
      below += n;
      total += limits.length;
    }
    expect(below / total).toBeLessThanOrEqual(0.02);
  });

  test('while the caller uses 5 of a limit of 20, the limit decays to 7.5–11 (1.5× the use, about 2× while the initial slow start is on) and grows back to 90 % of C within 100 samples when demand returns', () => {
    const regrowth: number[] = [];
    for (const seed of SEEDS) {
      const model: DownstreamModel = {
        capacity: C,
        baseLatencyMs: B,
        seed,
        tickMs: TICK,
        demand: (k) => (k < 2000 ? 5 : Infinity),
      };
      const t = simulateTraced(make(20, seed), model, 3000);
      let p = 1999;
      while (t.reasons[p]?.startsWith('probe')) p--;
      const decayed = limitAt(t, p);
      expect(decayed, `seed ${seed}`).toBeLessThanOrEqual(11);
      expect(decayed, `seed ${seed}`).toBeGreaterThanOrEqual(7.5);
      let g = 2000;
      while (g < 3000 && limitAt(t, g) < 0.9 * C) g++;
      regrowth.push(g - 2000);
    }
    expect(Math.max(...regrowth)).toBeLessThanOrEqual(100);
  });

  test('a limit validated at full use decays while app-limited and slow start brings it back to 90 % of C within 100 samples', () => {
    for (const seed of SEEDS) {
      const model: DownstreamModel = {
        capacity: C,
        baseLatencyMs: B,
        seed,
        tickMs: TICK,
        demand: (k) => (k >= 2000 && k < 4000 ? 5 : Infinity),
      };
      const t = simulateTraced(make(20, seed), model, 5000);
      let p = 3999;
      while (t.reasons[p]?.startsWith('probe')) p--;
      expect(limitAt(t, p), `seed ${seed}`).toBeLessThanOrEqual(11);
      let g = 4000;
      while (g < 5000 && limitAt(t, g) < 0.9 * C) g++;
      expect(g - 4000, `seed ${seed}`).toBeLessThanOrEqual(100);
    }
  });

  test('the app-limited decay never goes below minLimit', () => {
    const t = simulateTraced(
      make(40, 1, { minLimit: 6 }),
      { capacity: C, baseLatencyMs: B, demand: 1 },
      3000,
    );
    expect(Math.min(...t.steps.map((s) => s.limit))).toBeGreaterThanOrEqual(6);
    expect(limitAt(t, 2999)).toBeCloseTo(6, 1);
  });
});

describe("Vegas regains after a spike even without the limiter's late reports", () => {
  test('fed directly (no ticks) and without a client timeout, it regains 90 % of the prior limit within 100 samples of recovery (median over seeds)', () => {
    const regains: number[] = [];
    for (const seed of SEEDS) {
      let t0 = Infinity;
      const model: DownstreamModel = {
        capacity: C,
        baseLatencyMs: (k, start) => {
          if (k >= 3000 && t0 === Infinity) t0 = start;
          return start >= t0 && start < t0 + 8000 ? 60 * B : B;
        },
        seed,
      };
      const t = simulateTraced(
        new VegasLimit({ initialLimit: 50, random: seededRandom(seed) }),
        model,
        6000,
      );
      let p = 2999;
      while (t.reasons[p]?.startsWith('probe')) p--;
      const prior = limitAt(t, p);
      let back = 3000;
      while (back < 6000 && (t.steps[back] as Step).sample.startTime < t0 + 8000) back++;
      let regain = back;
      while (regain < 6000 && limitAt(t, regain) < 0.9 * prior) regain++;
      regains.push(regain - back);
    }
    expect(median(regains)).toBeLessThanOrEqual(100);
  });
});

/**
 * From 500 against C = 50 with `burst`: the 500 first requests meet the downstream together, so even
 * the first samples take 10 × B (the first sample must not stay the baseline). Returns the last
 * sample above 1.3 C, the last outside ±30 % of C (probe dips aside) and the final baseline.
 */
function burstStart(alg: LimitAlgorithm & { baselineRttMs: number }, seed: number) {
  const t = simulateTraced(
    alg,
    { capacity: C, baseLatencyMs: B, seed, tickMs: TICK, burst: true },
    3000,
  );
  let lastOut = -1;
  let lastHigh = -1;
  for (let i = 0; i < 3000; i++) {
    const l = limitAt(t, i);
    if (l > 1.3 * C) lastHigh = i;
    if (t.reasons[i] !== 'probe' && (l > 1.3 * C || l < 0.7 * C)) lastOut = i;
  }
  return { lastHigh, lastOut, baseline: alg.baselineRttMs };
}

describe('Vegas and Gradient started far above the capacity', () => {
  test('Vegas from 500 against C = 50, with the first samples all overloaded, is within ±30 % of C from sample 1,600 on and its baseline is the no-load RTT', () => {
    for (const seed of SEEDS) {
      const r = burstStart(new VegasLimit({ initialLimit: 500, random: seededRandom(seed) }), seed);
      expect(r.lastHigh, `seed ${seed}: last sample above 1.3 C`).toBeLessThan(1600);
      expect(r.lastOut, `seed ${seed}: last sample outside ±30 % of C`).toBeLessThan(2000);
      expect(r.baseline, `seed ${seed}`).toBeLessThan(1.1 * B);
    }
  });

  test('Gradient from 500 the same way: the last 300 of 3,000 samples are within ±30 % of C on every seed and its baseline is the no-load RTT', () => {
    for (const seed of SEEDS) {
      const alg = new GradientLimit({ initialLimit: 500, random: seededRandom(seed) });
      const r = burstStart(alg, seed);
      // Seed 18 kept a baseline 28 % high (limit ≈ 1.5 C to the end) when late calls cut the recheck
      // of its first probe's move and the next probe came a normal spacing later.
      expect(r.lastOut, `seed ${seed}: last sample outside ±30 % of C`).toBeLessThan(2700);
      expect(r.baseline, `seed ${seed}`).toBeLessThan(1.1 * B);
    }
  });
});

describe('Vegas in front of a small pool', () => {
  test('a database with 4 slots of 100 ms, Vegas capped at 8: the limit stays near the pool (mean ≤ 6.5) and no call waits past 250 ms', () => {
    for (const seed of SEEDS) {
      const t = simulateTraced(
        new VegasLimit({ maxLimit: 8, random: seededRandom(seed) }),
        { capacity: 4, baseLatencyMs: 100, seed, tickMs: TICK },
        3000,
      );
      const late = t.steps.slice(1000);
      const mean = late.reduce((a, s) => a + s.limit, 0) / late.length;
      expect(mean, `seed ${seed}`).toBeLessThanOrEqual(6.5);
      expect(late.filter((s) => s.sample.rtt > 250)).toHaveLength(0);
    }
  });

  test.each([4, 8, 20, 200])(
    'from a limit of %i, a standing queue of half the limit (average RTT twice the baseline) reads as queueing, never steady',
    (limit) => {
      const vegas = new VegasLimit({
        initialLimit: limit,
        probeMultiplier: 1000,
        recheckMultiplier: 1000,
      });
      // Baseline 100 ms, then every call takes 205 ms: once the round's average has settled on it
      // (it averages over a round of `limit` samples), the queue is half the limit, standing.
      vegas.update({ startTime: 0, rtt: 100, inflight: limit, dropped: false });
      let t = 1;
      const reasons = new Set<string | undefined>();
      for (let i = 0; i < 40 * limit; i++) {
        vegas.update({
          startTime: t++,
          rtt: 205,
          inflight: Math.ceil(vegas.limit),
          dropped: false,
        });
        const reason = vegas.lastDecision?.reason;
        if (i >= 10 * limit && !reason?.startsWith('probe')) reasons.add(reason);
      }
      expect([...reasons]).toEqual(['queueing']);
    },
  );
});

describe('Gradient reaches maxLimit', () => {
  test('with no queueing and maxLimit 200, the limit reaches exactly 200 (the target is smoothed, then clamped)', () => {
    const gradient = new GradientLimit({
      initialLimit: 20,
      maxLimit: 200,
      random: seededRandom(1),
    });
    const t = simulateTraced(gradient, { capacity: 1000, baseLatencyMs: B }, 10000);
    expect(limitAt(t, 9999)).toBe(200);
    expect(gradient.limit).toBe(200);
  });
});
