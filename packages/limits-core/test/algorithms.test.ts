import { describe, expect, test } from 'vitest';
import { AimdLimit } from '../src/algorithms/AimdLimit.js';
import { FixedLimit } from '../src/algorithms/FixedLimit.js';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import type { Sample } from '../src/algorithms/LimitAlgorithm.js';
import { BASELINE_MAX_AGE_MS, NoLoadRtt } from '../src/algorithms/NoLoadRtt.js';
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
      () => new NoLoadRtt({ probeDepth: 2 }),
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

describe('NoLoadRtt (the baseline of Vegas and Gradient)', () => {
  test('one lucky low sample does not drag the baseline down; two do', () => {
    const b = new NoLoadRtt(noProbe);
    for (let i = 0; i < 20; i++) b.observe(s(100, 10), 10, 1);
    expect(b.value).toBe(100);
    b.observe(s(5, 10), 10, 1); // a cached or short-circuited reply
    expect(b.value).toBe(100);
    b.observe(s(6, 10), 10, 1);
    expect(b.value).toBe(6);
  });

  test('a probe dips the limit, measures clean samples, and keeps the baseline when it is right', () => {
    const b = new NoLoadRtt({ random: () => 0, recheckMultiplier: 2, probeDepth: 0.5 });
    // Spacing = 0.5 rounds of 10 samples → the 5th sample starts a dip to floor(10 × 0.5) = 5.
    const states = [];
    for (let i = 0; i < 5; i++) states.push(b.observe(s(100, 10, false, i), 10, 1));
    expect(states).toEqual(['none', 'none', 'none', 'none', 'dip']);
    expect(b.dipLimit).toBe(5);
    // Samples started before the dip (startTime < 104) or above the dip limit do not count.
    expect(b.observe(s(100, 10, false, 50), 10, 1)).toBe('dip');
    for (let i = 0; i < 4; i++) expect(b.observe(s(101, 5, false, 200 + i), 10, 1)).toBe('dip');
    expect(b.observe(s(101, 5, false, 210), 10, 1)).toBe('end');
    expect(b.value).toBe(101); // within ±10 %: refreshed to the probe's median, not moved
  });

  test('a due probe waits for a limit it can dip (at the floor it would only hold the limit)', () => {
    const b = new NoLoadRtt({ random: () => 0, recheckMultiplier: 2, probeDepth: 0.5 });
    // Due after half a round; at a limit of 1 (the floor) no dip starts, however many samples.
    for (let i = 0; i < 20; i++) expect(b.observe(s(100, 1, false, i), 1, 1)).toBe('none');
    expect(b.observe(s(100, 4, false, 20), 4, 1)).toBe('dip');
    expect(b.dipLimit).toBe(2);
    // A limit that falls to the dip calls it off (drops, late calls): no result, no hold.
    expect(b.observe(s(100, 2, false, 30), 2, 1)).toBe('none');
    expect(b.probing).toBe(false);
  });

  test("a probe's median within the spread of its own samples is not a move (±10 % jitter)", () => {
    const b = new NoLoadRtt({ random: () => 0, recheckMultiplier: 2, probeDepth: 0.5 });
    const states = [];
    for (let i = 0; i < 5; i++) states.push(b.observe(s(45, 10, false, i), 10, 1));
    expect(states.at(-1)).toBe('dip');
    expect(b.value).toBe(45);
    // Median 52 is 15 % above 45, but the samples spread over 9 ms (46…55): noise, not a move.
    const rtts = [46, 50, 52, 54, 55];
    const end = rtts.map((rtt, i) => b.observe(s(rtt, 5, false, 100 + i), 10, 1));
    expect(end.at(-1)).toBe('end');
    // Not moved: the next probe is a normal spacing away (15 rounds), not a recheck (1 round).
    for (let i = 0; i < 30; i++) expect(b.observe(s(50, 10, false, 200 + i), 10, 1)).toBe('none');
  });

  test('a move within a quarter of the baseline is rechecked at half the limit, not deeper; a larger one at a quarter', () => {
    // S1: with ±10 % jitter a normal probe now and then reads a move of 10–17 % (a median of 5
    // samples against the last one); a recheck at a quarter of the limit (2 of 9) would refuse about
    // 14 calls of the load that has just come back.
    const probeTo = (rtt: number) => {
      const b = new NoLoadRtt({ random: () => 0, recheckMultiplier: 2 });
      let t = 0;
      const until = (state: string, r: number, inflight: number) => {
        for (let i = 0; i < 1000; i++, t += 10) {
          if (b.observe(s(r, inflight, false, t), 10, 1) === state) return;
        }
        throw new Error(`no ${state}`);
      };
      until('dip', 50, 10); // the first probe, at half: baseline 50
      until('end', 50, 5);
      expect(b.value).toBe(50);
      until('dip', 50, 10); // a normal probe, at three quarters of the limit
      expect(b.dipLimit).toBe(7);
      until('end', rtt, 7); // it reads a move to `rtt`
      until('dip', rtt, 10); // the recheck, a round later
      return { value: b.value, dip: b.dipLimit };
    };
    expect(probeTo(40)).toEqual({ value: 40, dip: 5 }); // −20 %: half the limit
    expect(probeTo(60)).toEqual({ value: 60, dip: 5 }); // +20 %: half the limit
    expect(probeTo(30)).toEqual({ value: 30, dip: 2 }); // −40 %, a collapse: a quarter
    expect(probeTo(80)).toEqual({ value: 80, dip: 2 }); // +60 %: a quarter
  });

  test('a probe that comes due while the load leaves the limit well unused is open: no dip; it refreshes or lowers the baseline, never raises it', () => {
    // S1: at half the limit a dip to half would refuse a cluster of calls of a healthy downstream
    // (about 0.5 % of them).
    const run = (rtt: number) => {
      const b = new NoLoadRtt({ random: () => 0, recheckMultiplier: 2 });
      let t = 0;
      const until = (state: string, r: number, inflight: number, appLimited: boolean) => {
        for (let i = 0; i < 1000; i++, t += 10) {
          if (b.observe(s(r, inflight, false, t), 10, 1, true, appLimited) === state) return;
        }
        throw new Error(`no ${state}`);
      };
      until('dip', 50, 10, false); // the first probe (the load used the limit): a dip to half
      expect(b.open).toBe(false);
      expect(b.dipLimit).toBe(5);
      until('end', 50, 5, false);
      until('dip', 50, 4, true); // due while 4 of 10 are used: open
      const open = { open: b.open, dipLimit: b.dipLimit };
      until('end', rtt, 4, true);
      const value = b.value;
      until('dip', rtt, 4, true); // the next probe
      return { open, value, next: { open: b.open, dipLimit: b.dipLimit } };
    };
    // Within ±10 %: refreshed to the median, and the next one is open again (a normal spacing).
    expect(run(52)).toEqual({
      open: { open: true, dipLimit: Infinity },
      value: 52,
      next: { open: true, dipLimit: Infinity },
    });
    // A fall is taken (recheck at half the limit at most; still open at a light load).
    expect(run(40).value).toBe(40);
    // A rise is not taken (the load may queue): the next probe dips, even at a light load.
    expect(run(80)).toEqual({
      open: { open: true, dipLimit: Infinity },
      value: 50,
      next: { open: false, dipLimit: 7 },
    });
  });

  test('queueing at a shallow dip cannot inflate the baseline more than 2× per probe', () => {
    const b = new NoLoadRtt({ random: () => 0, recheckMultiplier: 1, probeSamples: 1 });
    b.observe(s(100, 10, false, 0), 10, 1);
    let t = 1;
    const probeOnce = (rtt: number) => {
      while (b.observe(s(rtt, 1, false, t), 10, 1) !== 'end') t += rtt;
    };
    probeOnce(1000); // a shallow dip (depth 0.5) sees 10× the baseline: capped at 2×
    expect(b.value).toBe(200);
  });

  test('a lasting shift is relearned within a few probes (the deepest dip is trusted)', () => {
    const b = new NoLoadRtt({ random: () => 0, recheckMultiplier: 1, probeSamples: 1 });
    b.observe(s(50, 10, false, 0), 10, 1);
    let t = 1;
    let probes = 0;
    while (b.value < 3000 && probes < 10) {
      while (b.observe(s(3000, 1, false, t), 10, 1) !== 'end') t += 3000;
      probes++;
    }
    // A dip whose samples take 60× the baseline outlasts 20 baselines and is called off without a
    // result; the baseline, left stale for BASELINE_MAX_AGE_MS, gets the deepest probe, trusted in
    // full (3000).
    expect(b.value).toBe(3000);
    expect(probes).toBe(1);
    expect(t).toBeGreaterThanOrEqual(BASELINE_MAX_AGE_MS);
  });

  test('a moderate lasting shift is relearned by probes within a few of them (the deepest dip is trusted)', () => {
    const b = new NoLoadRtt({ random: () => 0, recheckMultiplier: 1, probeSamples: 1 });
    b.observe(s(50, 10, false, 0), 10, 1);
    let t = 1;
    let probes = 0;
    while (b.value < 400 && probes < 10) {
      while (b.observe(s(400, 1, false, t), 10, 1) !== 'end') t += 40;
      probes++;
    }
    // Depth 0.5 → ×2 (100), 0.25 → ×2 (200), 0.125 is the deepest → trusted in full (400).
    expect(b.value).toBe(400);
    expect(probes).toBe(3);
    expect(t).toBeLessThan(BASELINE_MAX_AGE_MS);
  });

  test('a baseline no sample came near for BASELINE_MAX_AGE_MS is replaced by the deepest probe at once', () => {
    // The first probes far away (no probe due), baseline 20 ms; then every call takes 500 ms.
    const b = new NoLoadRtt({ random: () => 1, probeMultiplier: 1e6, recheckMultiplier: 1e6 });
    b.observe(s(20, 1, false, 0), 1, 1);
    let t = 100;
    const states: string[] = [];
    // 500 ms calls back to back at a limit of 1: stale 10 s after the last fresh sample (t = 20).
    for (; t + 500 - 20 < BASELINE_MAX_AGE_MS; t += 500)
      states.push(b.observe(s(500, 1, false, t), 1, 1));
    expect(states.every((x) => x === 'none')).toBe(true);
    expect(b.value).toBe(20);
    expect(b.observe(s(500, 1, false, t), 1, 1)).toBe('dip');
    let state = 'dip';
    for (let i = 0; i < 10 && state !== 'end'; i++) {
      t += 500;
      state = b.observe(s(500, 1, false, t), 1, 1);
    }
    expect(state).toBe('end');
    expect(b.value).toBe(500); // the deepest dip is trusted in full, not ×2
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
  test('NoLoadRtt, SlowStart and log10Scale are not exported; the algorithms are', () => {
    const names = Object.keys(core);
    for (const internal of ['NoLoadRtt', 'SlowStart', 'log10Scale', 'ProbingLimit']) {
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
