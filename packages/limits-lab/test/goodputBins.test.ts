import { describe, expect, it } from 'vitest';
import { BIN_MS, GoodputBins } from '../src/sim/GoodputBins.js';
import { LatencyHistogram } from '../src/sim/LatencyHistogram.js';

/** Bins filled with `perBin(t)` successes in the bin starting at t, for `durationMs`. */
function bins(durationMs: number, perBin: (t: number) => number): GoodputBins {
  const b = new GoodputBins();
  for (let t = 0; t < durationMs; t += BIN_MS) {
    for (let i = 0; i < perBin(t); i++) b.add(t + 1);
  }
  return b;
}

describe('recovery after a spike', () => {
  const spike = { fromMs: 5_000, toMs: 8_000 };

  it('is the time from the spike end to the start of the first bin from which goodput holds 90 % for 1 s', () => {
    // 25 per bin (100/s) before, 0 during, 10 per bin for 500 ms after, then 23 (92 %).
    const b = bins(12_000, (t) => (t < 5_000 ? 25 : t < 8_000 ? 0 : t < 8_500 ? 10 : 23));
    expect(b.recoveries([spike], 12_000)).toEqual([
      { fromMs: 5_000, toMs: 8_000, beforePerS: 100, duringPerS: 0, recoveryMs: 500 },
    ]);
  });

  it('needs every bin of the second to hold, and the whole second within the run', () => {
    // One bin at 80 % 250 ms after the recovery starts restarts the count.
    const b = bins(12_000, (t) => (t < 5_000 ? 25 : t < 8_000 ? 0 : t === 8_250 ? 20 : 25));
    expect(b.recoveries([spike], 12_000)[0]?.recoveryMs).toBe(500);
    // Recovered only 750 ms before the end: never within the run.
    const late = bins(12_000, (t) => (t < 5_000 ? 25 : t < 11_250 ? 0 : 25));
    expect(late.recoveries([spike], 12_000)[0]?.recoveryMs).toBeNull();
  });

  it('measures each spike against the goodput before it, after the previous one settled', () => {
    // 100/s, then a spike; 200/s after it, and a second spike from 12 s.
    const b = bins(20_000, (t) =>
      t < 5_000 ? 25 : t < 8_000 ? 0 : t < 12_000 ? 50 : t < 14_000 ? 0 : 50,
    );
    const [first, second] = b.recoveries([{ fromMs: 12_000, toMs: 14_000 }, spike], 20_000);
    expect(first).toMatchObject({ beforePerS: 100, recoveryMs: 0 });
    // Before the second: from 9 s (1 s after the first ended) to 12 s, all at 200/s.
    expect(second).toMatchObject({ fromMs: 12_000, beforePerS: 200, recoveryMs: 0 });
  });
});

describe('LatencyHistogram', () => {
  it('reports nearest-rank quantiles within 1 % below the true value, exact mean and max', () => {
    const h = new LatencyHistogram();
    expect(h.quantile(0.5)).toBeNaN();
    for (let i = 1; i <= 1_000; i++) h.record(i);
    h.record(0);
    expect(h.count).toBe(1_001);
    expect(h.mean).toBeCloseTo(500_500 / 1_001, 9);
    expect(h.max).toBe(1_000);
    for (const q of [0.5, 0.9, 0.99]) {
      const exact = Math.ceil(q * 1_001) - 1;
      expect(h.quantile(q)).toBeLessThanOrEqual(exact);
      expect(h.quantile(q)).toBeGreaterThanOrEqual(exact * 0.99);
    }
    expect(h.quantile(0.0001)).toBe(0);
    expect(h.quantile(1)).toBe(1_000);
  });
});
