import { describe, expect, test } from 'vitest';
import { AimdLimit } from '../src/algorithms/AimdLimit.js';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import type { LimitAlgorithm } from '../src/algorithms/LimitAlgorithm.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';
import { seededRandom } from '../src/internal/random.js';
import {
  type DownstreamModel,
  type Step,
  simulateTraced,
  type Traced,
} from './support/simulate.js';

// The simulated downstream of DESIGN.md: capacity C, base latency B, rtt = B × max(1, n / C) with
// ±5 % seeded noise; the caller always has more work than the limit.
const C = 50;
const B = 50;

/**
 * Band statistics over [from, end): probe dips are deliberate, short and bounded (`ProbeSchedule`), so
 * the band is judged on the other steps, and the share of dip steps is reported and bounded apart.
 */
function band(t: Traced, from: number) {
  let min = Infinity;
  let max = -Infinity;
  let dips = 0;
  let lastOut = -1;
  for (let i = 0; i < t.steps.length; i++) {
    const limit = (t.steps[i] as Step).limit;
    const dip = t.reasons[i] === 'probe';
    if (dip) {
      if (i >= from) dips++;
      continue;
    }
    if (limit < 0.7 * C || limit > 1.3 * C) lastOut = i;
    if (i >= from) {
      min = Math.min(min, limit);
      max = Math.max(max, limit);
    }
  }
  return { min, max, lastOut, dipShare: dips / (t.steps.length - from) };
}

const algorithms: Array<[string, (initial: number) => LimitAlgorithm, DownstreamModel, number]> = [
  [
    'Vegas',
    (initial) => new VegasLimit({ initialLimit: initial, random: seededRandom(7) }),
    { capacity: C, baseLatencyMs: B },
    3000,
  ],
  [
    'Gradient',
    (initial) => new GradientLimit({ initialLimit: initial, random: seededRandom(7) }),
    { capacity: C, baseLatencyMs: B },
    3000,
  ],
  // AIMD's only signal is a drop: a request slower than 1.25 × B times out.
  [
    'AIMD',
    (initial) => new AimdLimit({ initialLimit: initial }),
    { capacity: C, baseLatencyMs: B, timeoutMs: 1.25 * B },
    5000,
  ],
];

describe.each(algorithms)(
  '%s on the simulated downstream (C = 50, B = 50 ms)',
  (_name, make, model, settle) => {
    test.each([10, 500])(
      'converges to within 30 percent of C from an initial limit of %i and stays there',
      (initial) => {
        const t = simulateTraced(make(initial), model, settle + 5000);
        const b = band(t, settle);
        // Every non-dip step after `settle` samples lies in [35, 65].
        expect(b.lastOut).toBeLessThan(settle);
        expect(b.min).toBeGreaterThanOrEqual(0.7 * C);
        expect(b.max).toBeLessThanOrEqual(1.3 * C);
        // Probe dips take a small share of the samples.
        expect(b.dipShare).toBeLessThan(0.1);
      },
    );
  },
);

describe.each([
  ['Vegas', () => new VegasLimit({ initialLimit: 50, random: seededRandom(7) })],
  ['Gradient', () => new GradientLimit({ initialLimit: 50, random: seededRandom(7) })],
] as const)('%s under a 60× latency spike', (_name, make) => {
  // Base latency goes 50 ms → 3,000 ms for requests started after sample 3,000 and back to 50 ms for
  // requests started after sample 3,250; callers time out after 1 s (20 × B), so spiked calls are
  // dropped samples, as they would be behind any real client timeout.
  const spikeAt = 3000;
  const backAt = 3250;
  const model: DownstreamModel = {
    capacity: C,
    baseLatencyMs: (k) => (k >= spikeAt && k < backAt ? 60 * B : B),
    timeoutMs: 1000,
  };

  test('cuts the limit to ≤ 25 % within 100 samples and regains ≥ 90 % within 200 after recovery', () => {
    const t = simulateTraced(make(), model, 4500);
    let p = spikeAt - 1;
    while (t.reasons[p]?.startsWith('probe')) p--;
    const prior = (t.steps[p] as Step).limit;
    // Calls admitted before the spike still finish fast: count from the first spiked sample.
    let first = spikeAt;
    while ((t.steps[first] as Step).sample.rtt < 10 * B) first++;
    let cut = first;
    while ((t.steps[cut] as Step).limit > 0.25 * prior) cut++;
    let regain = backAt;
    while ((t.steps[regain] as Step).limit < 0.9 * prior) regain++;
    expect(cut - first).toBeLessThanOrEqual(100);
    expect(regain - backAt).toBeLessThanOrEqual(200);
  });
});
