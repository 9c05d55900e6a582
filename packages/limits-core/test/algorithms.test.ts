import { describe, expect, test } from 'vitest';
import { AimdLimit } from '../src/algorithms/AimdLimit.js';
import { FixedLimit } from '../src/algorithms/FixedLimit.js';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import type { Sample } from '../src/algorithms/LimitAlgorithm.js';
import { ProbeSchedule } from '../src/algorithms/ProbeSchedule.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';
import { WindowedLimit } from '../src/algorithms/WindowedLimit.js';
import * as core from '../src/index.js';
import { seededRandom } from '../src/internal/random.js';
import { simulateTraced, undipped } from './support/simulate.js';

const noProbe = { probeMultiplier: 1000, recheckMultiplier: 1000 };
const s = (rtt: number, inflight: number, dropped = false, startTime = 0): Sample => ({
  startTime,
  rtt,
  inflight,
  dropped,
});

describe('option validation', () => {
  test.each([
    [
      () => new VegasLimit({ alpha: -1 }),
      /"vegas.alpha" must be a number in \[0, Infinity\), got -1/,
    ],
    [
      () => new VegasLimit({ alpha: 7, beta: 6 }),
      /"vegas.alpha" \(7\) must be ≤ "vegas.beta" \(6\)/,
    ],
    [
      () => new VegasLimit({ initialLimit: 5000, maxLimit: 1000 }),
      /"vegas.initialLimit" must be in \[1, 1000\]/,
    ],
    [
      () => new VegasLimit({ smoothing: 0 }),
      /"vegas.smoothing" must be a number in \(0, 1\], got 0/,
    ],
    [
      () => new GradientLimit({ tolerance: 0.5 }),
      /"gradient.tolerance" must be a number in \[1, Infinity\)/,
    ],
    [
      () => new GradientLimit({ minLimit: 10, maxLimit: 5 }),
      /"gradient.minLimit" \(10\) must be ≤ "gradient.maxLimit" \(5\)/,
    ],
    [() => new GradientLimit({ shortWindow: 1.5 }), /"gradient.shortWindow" must be an integer/],
    [
      () => new AimdLimit({ backoffRatio: 1 }),
      /"aimd.backoffRatio" must be a number in \[0.5, 1\), got 1/,
    ],
    [() => new AimdLimit({ timeoutMs: 0 }), /"aimd.timeoutMs" must be a number in \(0, Infinity\]/],
    [() => new FixedLimit(0), /"limit" must be an integer in \[1, Infinity\), got 0/],
    [
      () => new ProbeSchedule({ probeDepth: 2 }),
      /"probe.probeDepth" must be a number in \(0, 1\], got 2/,
    ],
    [
      () => new WindowedLimit(new FixedLimit(1), { minSamples: 200, maxSamples: 100 }),
      /"windowed.minSamples" must be an integer in \[1, 100\]/,
    ],
  ])('bad options throw an error naming the option and the range (%#)', (make, message) => {
    expect(make).toThrow(message);
  });

  test('a wrong type is a TypeError', () => {
    expect(() => new VegasLimit({ alpha: '3' as unknown as number })).toThrow(TypeError);
    expect(() => new GradientLimit({ queueAllowance: 'x' as unknown as number })).toThrow(
      TypeError,
    );
  });
});

describe('every algorithm reacts to a dropped sample', () => {
  test.each([
    ['Vegas', () => new VegasLimit({ initialLimit: 50, ...noProbe })],
    ['Gradient', () => new GradientLimit({ initialLimit: 50, warmupSamples: 0, ...noProbe })],
    ['AIMD', () => new AimdLimit({ initialLimit: 50 })],
  ])('%s lowers its limit on a drop, with reason "drop"', (_name, make) => {
    const alg = make();
    alg.update(s(100, 50));
    const before = alg.limit;
    alg.update(s(100, 50, true, 1));
    expect(alg.limit).toBeLessThan(before);
    expect(alg.lastDecision?.reason).toBe('drop');
  });
});

describe('app-limited guard', () => {
  test('Vegas does not grow while in-flight is under half the limit, but still falls on queueing', () => {
    const vegas = new VegasLimit({ initialLimit: 40, ...noProbe });
    vegas.update(s(100, 5));
    expect(vegas.limit).toBe(40);
    expect(vegas.lastDecision?.reason).toBe('app_limited');
    // A slow sample at low in-flight: avg = 100 + (500 − 100)/2 = 300 → queue = ceil(40 × 2/3) = 27 > 6.
    vegas.update(s(500, 5));
    expect(vegas.limit).toBeLessThan(40);
    expect(vegas.lastDecision?.reason).toBe('queueing');
  });

  test('AIMD does not grow while app-limited and still backs off on a drop', () => {
    const aimd = new AimdLimit({ initialLimit: 40 });
    aimd.update(s(100, 5));
    expect(aimd.limit).toBe(40);
    aimd.update(s(100, 5, true));
    expect(aimd.limit).toBeCloseTo(36, 9);
  });
});

describe('WindowedLimit', () => {
  test('feeds each sample at once with its own start, in-flight and drop, and the aggregate RTT of its window so far', () => {
    const seen: Sample[] = [];
    const delegate = {
      limit: 10,
      update(sample: Sample) {
        seen.push(sample);
        return this.limit;
      },
    };
    const w = new WindowedLimit(delegate, {
      windowMs: 1000,
      maxSamples: 4,
      minSamples: 2,
      aggregate: 0.5,
    });
    w.update(s(10, 3, false, 0)); // one sample, under minSamples and no window before: its own RTT
    w.update(s(30, 5, true, 1)); // p50 of [10, 30] = 10
    w.update(s(20, 4, false, 2)); // p50 of [10, 20, 30] = 20
    w.update(s(40, 2, false, 3)); // p50 of [10, 20, 30, 40] = 20
    expect(seen).toEqual([
      { startTime: 0, rtt: 10, inflight: 3, dropped: false },
      { startTime: 1, rtt: 10, inflight: 5, dropped: true },
      { startTime: 2, rtt: 20, inflight: 4, dropped: false },
      { startTime: 3, rtt: 20, inflight: 2, dropped: false },
    ]);
    // The window held 4 (maxSamples): the next sample starts a new one, under minSamples: it is
    // handed the last window's aggregate.
    w.update(s(99, 1, false, 4));
    expect(seen[4]).toEqual({ startTime: 4, rtt: 20, inflight: 1, dropped: false });
  });

  test('starts a new window by time; while it is young, the last full window speaks for it', () => {
    const seen: Sample[] = [];
    const delegate = {
      limit: 10,
      update(x: Sample) {
        seen.push(x);
        return 10;
      },
    };
    const w = new WindowedLimit(delegate, { windowMs: 100, minSamples: 3 });
    w.update(s(10, 1, false, 0)); // ends at 10: a window starts
    w.update(s(12, 1, false, 1));
    w.update(s(14, 1, false, 2)); // 3 samples: their average, 12
    expect(seen.map((x) => x.rtt)).toEqual([10, 12, 12]);
    w.update(s(50, 1, false, 200)); // ends at 250, 240 ms after the window began: a new one
    expect(seen[3]?.rtt).toBe(12);
    w.update(s(60, 1, false, 201));
    w.update(s(70, 1, false, 202)); // 3 samples again: (50 + 60 + 70) / 3
    expect(seen[5]?.rtt).toBeCloseTo(60, 9);
  });
});

describe('Vegas and Gradient relearn a lasting latency shift', () => {
  test.each([
    ['Vegas', () => new VegasLimit({ initialLimit: 20, random: seededRandom(3) })],
    ['Gradient', () => new GradientLimit({ initialLimit: 20, random: seededRandom(3) })],
  ])(
    '%s: when base latency doubles for good, the baseline follows and the limit returns to C',
    (_n, make) => {
      // Same capacity (C = 50 in flight), base latency 50 ms, then 100 ms from sample 3,000 on. With a
      // baseline stuck at 50 ms every sample would read as queueing and the limit would sink.
      const alg = make();
      const t = simulateTraced(
        alg,
        { capacity: 50, baseLatencyMs: (k) => (k < 3000 ? 50 : 100) },
        9000,
      );
      expect(alg.baselineRttMs).toBeGreaterThan(90);
      const late = undipped(t, 8000);
      expect(Math.max(...late)).toBeLessThanOrEqual(65);
      expect(Math.min(...late)).toBeGreaterThanOrEqual(35);
    },
  );
});

describe('Gradient relearns a latency that moved up many times over', () => {
  test('20 ms → 500 ms for good (C = 20): the limit is back near C within about 1,000 samples, as Vegas', () => {
    for (const seed of [1, 2, 3]) {
      const alg = new GradientLimit({ random: seededRandom(seed) });
      const t = simulateTraced(
        alg,
        { capacity: 20, baseLatencyMs: (k) => (k < 1000 ? 20 : 500), seed },
        4000,
      );
      expect(alg.baselineRttMs).toBeGreaterThan(450);
      // Before, the long average (a 600-sample lag) stayed far under the relearned baseline and held
      // the gradient at its floor: a mean limit of about 5 over samples 1,000–2,000.
      const limits = t.steps.slice(1000, 2000).map((x) => x.limit);
      expect(limits.reduce((a, b) => a + b, 0) / limits.length, `seed ${seed}`).toBeGreaterThan(15);
    }
  });
});

describe('the package exports the algorithms, not their helpers', () => {
  test('the baseline, the probe schedule, slow start, the app-limited rule and log10Scale are not exported; the algorithms are', () => {
    const names = Object.keys(core);
    for (const internal of [
      'Baseline',
      'ProbeSchedule',
      'SlowStart',
      'AppLimitedDecay',
      'log10Scale',
      'ProbingLimit',
    ]) {
      expect(names).not.toContain(internal);
    }
    for (const algorithm of [
      'FixedLimit',
      'AimdLimit',
      'VegasLimit',
      'GradientLimit',
      'WindowedLimit',
    ]) {
      expect(names).toContain(algorithm);
    }
  });

  test('Vegas and Gradient answer the same getters from their shared base', () => {
    for (const a of [
      new VegasLimit({ initialLimit: 7, maxLimit: 9 }),
      new GradientLimit({ initialLimit: 7, maxLimit: 9 }),
    ]) {
      expect([a.limit, a.maxLimit, a.baselineRttMs, a.lastDecision]).toEqual([
        7,
        9,
        Infinity,
        undefined,
      ]);
      a.update(s(10, 7));
      expect(a.baselineRttMs).toBe(10);
      expect(a.lastDecision?.baselineRttMs).toBe(10);
    }
  });
});
