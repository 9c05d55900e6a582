import { describe, expect, test } from 'vitest';
import { AimdLimit } from '../src/algorithms/AimdLimit.js';
import { FixedLimit } from '../src/algorithms/FixedLimit.js';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import type { LimitAlgorithm, Sample } from '../src/algorithms/LimitAlgorithm.js';
import { ProbeSchedule } from '../src/algorithms/ProbeSchedule.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';
import { WindowedLimit } from '../src/algorithms/WindowedLimit.js';
import { CostEstimator } from '../src/fairness/CostEstimator.js';
import { seededRandom } from '../src/internal/random.js';
import { Limiter } from '../src/limiter/Limiter.js';
import { FakeClock, flush } from './support/FakeClock.js';
import { probing } from './support/probes.js';

const bounds = { minLimit: 2, maxLimit: 64, initialLimit: 16 };
const fast = { probeMultiplier: 2, recheckMultiplier: 1, random: seededRandom(7) };

const algorithms: [string, () => LimitAlgorithm & { maxLimit?: number | undefined }][] = [
  ['FixedLimit', () => new FixedLimit(16)],
  ['AimdLimit', () => new AimdLimit({ ...bounds, timeoutMs: 1 })],
  ['VegasLimit', () => new VegasLimit({ ...bounds, ...fast })],
  ['GradientLimit', () => new GradientLimit({ ...bounds, ...fast })],
  [
    'WindowedLimit(Vegas)',
    () =>
      new WindowedLimit(new VegasLimit({ ...bounds, ...fast }), { minSamples: 1, maxSamples: 3 }),
  ],
  [
    'WindowedLimit(Gradient, p90)',
    () =>
      new WindowedLimit(new GradientLimit({ ...bounds, ...fast }), {
        minSamples: 1,
        maxSamples: 4,
        aggregate: 0.9,
      }),
  ],
];

/** RTT streams a millisecond clock (or sub-ms calls on an injected clock) produces. */
const streams: [string, (i: number, r: () => number) => number][] = [
  ['all 0', () => 0],
  ['all 1e-9', () => 1e-9],
  ['0 and 1e-9 mixed', (_, r) => (r() < 0.5 ? 0 : 1e-9)],
  ['0, 1 and 2 ms (Date.now)', (_, r) => Math.floor(r() * 3)],
  ['0 then 50 ms then 0', (i) => (i % 700 < 300 ? 0 : 50)],
  ['sub-microsecond noise', (_, r) => r() * 1e-6],
];

function expectInBounds(a: LimitAlgorithm, min: number, max: number): void {
  expect(Number.isFinite(a.limit)).toBe(true);
  expect(a.limit).toBeGreaterThanOrEqual(min);
  expect(a.limit).toBeLessThanOrEqual(max);
}

describe('algorithms accept rtt 0 and sub-microsecond rtts', () => {
  for (const [name, make] of algorithms) {
    for (const [streamName, rtt] of streams) {
      test(`${name} keeps a finite limit within its bounds for 5,000 samples of ${streamName}`, () => {
        const a = make();
        const r = seededRandom(11);
        const min = name === 'FixedLimit' ? 16 : 2;
        const max = name === 'FixedLimit' ? 16 : 64;
        let t = 0;
        for (let i = 0; i < 5000; i++) {
          const inflight = 1 + Math.floor(r() * Math.max(1, a.limit));
          const x = rtt(i, r);
          const returned = a.update({ startTime: t, rtt: x, inflight, dropped: r() < 0.02 });
          t += x;
          expect(Number.isFinite(returned)).toBe(true);
          expectInBounds(a, min, max);
        }
        const d = a.lastDecision;
        if (d !== undefined) {
          for (const v of Object.values(d)) if (typeof v === 'number') expect(v).not.toBeNaN();
        }
      });
    }
  }

  test('a GradientLimit fed rtt 0 recovers its limit instead of turning NaN', () => {
    const g = new GradientLimit({ initialLimit: 20 });
    for (let i = 0; i < 50; i++) g.update({ startTime: i, rtt: 0, inflight: 20, dropped: false });
    expect(g.limit).not.toBeNaN();
    for (let i = 0; i < 50; i++)
      g.update({ startTime: 100 + i, rtt: 10, inflight: 20, dropped: false });
    expect(Number.isFinite(g.limit)).toBe(true);
    expect(g.limit).toBeGreaterThanOrEqual(1);
  });

  for (const [name, make] of algorithms) {
    test(`${name} ignores negative, NaN and infinite rtts, start times and in-flight counts`, () => {
      const a = make();
      const min = name === 'FixedLimit' ? 16 : 2;
      const max = name === 'FixedLimit' ? 16 : 64;
      const bad: Partial<Sample>[] = [
        { rtt: -1 },
        { rtt: Number.NaN },
        { rtt: Infinity },
        { rtt: -Infinity },
        { startTime: Number.NaN },
        { startTime: Infinity },
        { inflight: Number.NaN },
        { inflight: -3 },
        { inflight: Infinity },
      ];
      for (let i = 0; i < 3000; i++) {
        const sample: Sample = { startTime: i, rtt: i % 3, inflight: 8, dropped: i % 97 === 0 };
        Object.assign(sample, bad[i % bad.length]);
        a.update(sample);
        expectInBounds(a, min, max);
      }
      // Still adapts on good samples afterwards.
      for (let i = 0; i < 500; i++)
        a.update({ startTime: 4000 + i, rtt: 5, inflight: 8, dropped: false });
      expectInBounds(a, min, max);
    });
  }

  test('the baseline never becomes 0 from probes of zero rtts', () => {
    const n = probing({ probeMultiplier: 1, recheckMultiplier: 1, random: () => 0 });
    n.observe({ startTime: 0, rtt: 10, inflight: 1, dropped: false }, 10, 1);
    for (let i = 0; i < 500; i++)
      n.observe({ startTime: 100 + i, rtt: 0, inflight: 1, dropped: false }, 10, 1);
    expect(n.baseline.value).toBeGreaterThan(0);
  });

  for (const [name, make] of algorithms) {
    test(`a Limiter with ${name} on a millisecond clock serves 3,000 queued zero-length calls`, async () => {
      const clock = new FakeClock(1_700_000_000_000);
      const limiter = new Limiter({ algorithm: make(), maxQueued: Infinity, clock });
      let done = 0;
      const runs: Promise<void>[] = [];
      for (let i = 0; i < 3000; i++) {
        runs.push(
          limiter.run(async () => {
            // Half the calls take 0 ms, half 1 ms: what Date.now() shows for sub-ms calls.
            if (i % 2 === 0) await clock.advance(1);
            done++;
          }),
        );
      }
      for (let i = 0; i < 3000 && done < 3000; i++) await clock.advance(1);
      await flush();
      expect(done).toBe(3000);
      await Promise.all(runs);
      expect(limiter.queued).toBe(0);
      expect(Number.isFinite(limiter.limit)).toBe(true);
    });
  }
});

describe('defaults fit the bounds the user gave', () => {
  test.each([
    ['VegasLimit { maxLimit: 8 }', () => new VegasLimit({ maxLimit: 8 }), 8],
    ['GradientLimit { maxLimit: 8 }', () => new GradientLimit({ maxLimit: 8 }), 8],
    ['AimdLimit { maxLimit: 8 }', () => new AimdLimit({ maxLimit: 8 }), 8],
    ['VegasLimit { minLimit: 50 }', () => new VegasLimit({ minLimit: 50 }), 50],
    ['AimdLimit { minLimit: 5000 }', () => new AimdLimit({ minLimit: 5000 }), 5000],
    ['GradientLimit { initialLimit: 5000 }', () => new GradientLimit({ initialLimit: 5000 }), 5000],
  ])('%s starts at the default initial limit clamped into the given bounds', (_, make, limit) => {
    expect(make().limit).toBe(limit);
  });

  test('a default maxLimit grows to fit an explicit minLimit or initialLimit', () => {
    expect(new AimdLimit({ minLimit: 5000 }).maxLimit).toBe(5000);
    expect(new VegasLimit({ initialLimit: 3000 }).maxLimit).toBe(3000);
  });

  test('other defaults fit explicit values too', () => {
    expect(() => new VegasLimit({ alpha: 7 })).not.toThrow(); // beta default 6 → 7
    expect(() => new VegasLimit({ beta: 2 })).not.toThrow(); // alpha 3 → 2, threshold 1
    expect(() => new VegasLimit({ threshold: 4 })).not.toThrow(); // alpha 3 → 4, beta 6
    expect(() => new GradientLimit({ longWindow: 3 })).not.toThrow(); // shortWindow 5 → 3
    expect(() => new GradientLimit({ shortWindow: 1000 })).not.toThrow(); // longWindow 600 → 1000
    expect(() => new ProbeSchedule({ probeDepth: 0.1 })).not.toThrow(); // minProbeDepth 0.125 → 0.1
    expect(() => new WindowedLimit(new FixedLimit(1), { maxSamples: 5 })).not.toThrow();
    expect(() => new WindowedLimit(new FixedLimit(1), { minSamples: 200 })).not.toThrow();
    expect(() => new CostEstimator({ floor: 100_000 })).not.toThrow(); // ceiling 60000 → floor
    expect(() => new CostEstimator({ ceiling: 0.5 })).not.toThrow(); // floor 1 → 0.5
  });

  test.each([
    [
      () => new VegasLimit({ minLimit: 10, maxLimit: 5 }),
      /"vegas.minLimit" \(10\) must be ≤ "vegas.maxLimit" \(5\)/,
    ],
    [
      () => new AimdLimit({ initialLimit: 50, maxLimit: 8 }),
      /"aimd.initialLimit" must be in \[1, 8\]/,
    ],
    [
      () => new GradientLimit({ initialLimit: 2, minLimit: 4 }),
      /"gradient.initialLimit" must be in \[4, /,
    ],
    [
      () => new VegasLimit({ alpha: 7, beta: 6 }),
      /"vegas.alpha" \(7\) must be ≤ "vegas.beta" \(6\)/,
    ],
    [() => new GradientLimit({ shortWindow: 9, longWindow: 3 }), /"gradient.shortWindow" \(9\)/],
    [() => new CostEstimator({ floor: 10, ceiling: 5 }), /"costs.ceiling"/],
  ])('two explicit values that contradict each other are still refused (%#)', (make, message) => {
    expect(make).toThrow(RangeError);
    expect(make).toThrow(message);
  });
});
