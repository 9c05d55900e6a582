import { describe, expect, test } from 'vitest';
import { AimdLimit } from '../src/algorithms/AimdLimit.js';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import type { LimitAlgorithm, Sample } from '../src/algorithms/LimitAlgorithm.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';

// Conformance vectors: short sample sequences whose limits are worked out by hand from the formulas
// documented on each class. Probes are pushed out of reach (multipliers of 1,000 rounds) so each
// vector exercises the decision rules alone.
const noProbe = { probeMultiplier: 1000, recheckMultiplier: 1000 };

function s(rtt: number, inflight: number, dropped = false, startTime = 0): Sample {
  return { startTime, rtt, inflight, dropped };
}

function feed(alg: LimitAlgorithm, samples: Sample[]) {
  return samples.map((sample) => {
    const limit = alg.update(sample);
    return { limit, reason: alg.lastDecision?.reason };
  });
}

describe('VegasLimit conformance', () => {
  test('follows queue = ceil(L × (1 − base/avg)) with per-round steps, slow start and drops', () => {
    const vegas = new VegasLimit({ initialLimit: 10, ...noProbe });
    const out = feed(vegas, [s(100, 10), s(100, 11), s(150, 12), s(400, 13), s(1000, 12, true)]);
    // 1: base = 100, avg = 100 (w = 1) → queue = ceil(10 × 0) = 0 ≤ threshold 1. Initial slow start:
    //    step = max(L, beta·L10) = max(10, 6) = 10 → L = 10 + 10/10 = 11.
    expect(out[0]).toEqual({ limit: 11, reason: 'increase' });
    // 2: avg = 100 (w = 2) → queue 0 → step = max(11, 6) = 11 → L = 11 + 11/11 = 12.
    expect(out[1]).toEqual({ limit: 12, reason: 'increase' });
    // 3: avg = 100 + (150 − 100)/3 = 116.667 → queue = ceil(12 × (1 − 100/116.667)) = ceil(1.714) = 2.
    //    2 < alpha 3 → growth; still slow start → step = max(12, L10) = 12 → L = 12 + 12/12 = 13.
    expect(out[2]).toEqual({ limit: 13, reason: 'increase' });
    // 4: avg = 116.667 + (400 − 116.667)/4 = 187.5 → queue = ceil(13 × (1 − 100/187.5)) = ceil(6.067) = 7.
    //    7 > beta 6 → L = 13 − max(L10, 7 − 6)/13 = 13 − 1/13 = 12.923077 (slow start ends).
    expect(out[3]?.reason).toBe('queueing');
    expect(out[3]?.limit).toBeCloseTo(13 - 1 / 13, 9);
    // 5: dropped → L − L10 = 12.923077 − 1 = 11.923077.
    expect(out[4]?.reason).toBe('drop');
    expect(out[4]?.limit).toBeCloseTo(12 - 1 / 13, 9);
    expect(vegas.lastDecision).toMatchObject({ baselineRttMs: 100 });
  });

  test('stays put inside [alpha, beta] and scales the thresholds with log10 of the limit', () => {
    // L = 200 → L10 = 2: alpha = 6, beta = 12. After slow start ends, a queue of 8 is steady.
    const vegas = new VegasLimit({ initialLimit: 200, ...noProbe });
    // avg = 100 → queue 0 → slow start: L = 200 + max(200, 12)/200 = 201.
    expect(feed(vegas, [s(100, 200)])[0]).toEqual({ limit: 201, reason: 'increase' });
    // avg = 100 + (130 − 100)/2 = 115 → queue = ceil(201 × (1 − 100/115)) = ceil(26.2) = 27 > 12
    //  → L = 201 − max(2, 27 − 12)/201 = 201 − 15/201.
    const second = feed(vegas, [s(130, 201)])[0];
    expect(second?.reason).toBe('queueing');
    expect(second?.limit).toBeCloseTo(201 - 15 / 201, 9);
    // avg = 115 + (100 − 115)/3 = 110 → queue = ceil(200.925 × (1 − 100/110)) = ceil(18.27) = 19 > 12
    //  → L = 200.925 − 7/200.925.
    const L = 201 - 15 / 201;
    const third = feed(vegas, [s(100, 201)])[0];
    expect(third?.limit).toBeCloseTo(L - 7 / L, 9);
  });
});

describe('GradientLimit conformance', () => {
  test('follows next = n × clamp(tolerance × long/short, 0.25, tolerance) + allowance, smoothed', () => {
    const gradient = new GradientLimit({
      initialLimit: 20,
      shortWindow: 2,
      longWindow: 4,
      warmupSamples: 0,
      ...noProbe,
    });
    const out = feed(gradient, [s(100, 20), s(100, 24), s(200, 28), s(1000, 30, true), s(100, 5)]);
    // 1: short = long = base = 100 → g = clamp(1.1 × 100/100) = 1.1; n = 20 → next = 20 × 1.1 + 4 = 26;
    //    initial slow start, g ≥ 1 → next = max(26, 2n = 40) = 40 → L = 20 + 0.2 × (40 − 20) = 24.
    expect(out[0]?.reason).toBe('increase');
    expect(out[0]?.limit).toBeCloseTo(24, 9);
    // 2: g = 1.1; n = 24 → max(24 × 1.1 + 4, 48) = 48 → L = 24 + 0.2 × 24 = 28.8.
    expect(out[1]?.limit).toBeCloseTo(28.8, 9);
    // 3: short = 100 + (200 − 100)/2 = 150; long = 100 + 100/3 = 133.3, capped at 1 × base = 100;
    //    g = 1.1 × 100/150 = 0.7333; n = 28 → next = 28 × 0.7333 + 4 = 24.533 < L: queueing (slow start ends)
    //    → L = 28.8 + 0.2 × (24.533 − 28.8) = 27.946667.
    expect(out[2]?.reason).toBe('queueing');
    expect(out[2]?.limit).toBeCloseTo(28.8 + 0.2 * (28 * (1.1 / 1.5) + 4 - 28.8), 9);
    // 4: dropped → the lowest gradient: next = min(n, L) × 0.25 + 4 = 27.9467 × 0.25 + 4 = 10.9867
    //    → L = 27.946667 + 0.2 × (10.986667 − 27.946667) = 24.554667.
    expect(out[3]?.reason).toBe('drop');
    expect(out[3]?.limit).toBeCloseTo(24.554667, 6);
    // 5: short = 150 + (100 − 150)/2 = 125; long = 133.3 + (100 − 133.3)/4 = 125 → capped 100;
    //    g = 1.1 × 100/125 = 0.88; n = 5 → next = 5 × 0.88 + 4 = 8.4: queueing even at low in-flight,
    //    and falls apply while app-limited → L = 24.554667 + 0.2 × (8.4 − 24.554667) = 21.323733.
    expect(out[4]?.reason).toBe('queueing');
    expect(out[4]?.limit).toBeCloseTo(21.323733, 6);
  });

  test('a sample without queueing never lowers the limit', () => {
    const gradient = new GradientLimit({ initialLimit: 40, warmupSamples: 0, ...noProbe });
    // g = 1.1 but n = 5 → 5 × 1.1 + 4 = 9.5 < 40: kept at 40 (light traffic is no congestion).
    expect(feed(gradient, [s(100, 5)])[0]).toEqual({ limit: 40, reason: 'steady' });
  });
});

describe('AimdLimit conformance', () => {
  test('grows per sample in slow start, per round after, and backs off once per round', () => {
    const aimd = new AimdLimit({ initialLimit: 10, timeoutMs: 500 });
    const out = feed(aimd, [
      s(100, 10, false, 0), // slow start: 10 + 1 = 11
      s(100, 11, false, 10), // 11 + 1 = 12
      s(100, 12, true, 50), // drop: 12 × 0.9 = 10.8; the round ends at 50 + 100 = 150
      s(100, 12, true, 100), // drop from a call started (100) before that decrease: ignored
      s(600, 10, false, 200), // 600 ms > timeoutMs: a drop of the next round → 10.8 × 0.9 = 9.72
      s(100, 9, false, 900), // congestion avoidance: 9.72 + 1/9.72
      s(100, 4, false, 1000), // 2 × 4 < 9.8: app-limited, unchanged
    ]);
    expect(out.map((o) => o.reason)).toEqual([
      'increase',
      'increase',
      'drop',
      'drop',
      'drop',
      'increase',
      'app_limited',
    ]);
    expect(out[0]?.limit).toBe(11);
    expect(out[1]?.limit).toBe(12);
    expect(out[2]?.limit).toBeCloseTo(10.8, 9);
    expect(out[3]?.limit).toBeCloseTo(10.8, 9);
    expect(out[4]?.limit).toBeCloseTo(9.72, 9);
    expect(out[5]?.limit).toBeCloseTo(9.72 + 1 / 9.72, 9);
    expect(out[6]?.limit).toBeCloseTo(9.72 + 1 / 9.72, 9);
  });
});
