import { describe, expect, test } from 'vitest';
import { BASELINE_MAX_AGE_MS, Baseline, type ProbeDepth } from '../src/algorithms/Baseline.js';
import { probing, sample as s } from './support/probes.js';

// The rule of src/algorithms/Baseline.ts, driven directly: samples on explicit times, and a probe's
// measurement handed in as the probe schedule hands it.

/** A dip to half the limit, a normal one (¾), the deepest one, and an open probe (no dip). */
const HALF: ProbeDepth = { open: false, depth: 0.5, deepest: false };
const SHALLOW: ProbeDepth = { open: false, depth: 0.75, deepest: false };
const DEEPEST: ProbeDepth = { open: false, depth: 0.125, deepest: true };
const OPEN: ProbeDepth = { open: true, depth: 1, deepest: false };

/**
 * A baseline of `value` ms: 80 samples of it outside probes, started at 0…79 ms (the average RTT at
 * the full limit is then within 1 % of it, and the last fresh sample ends at `79 + value`).
 */
function at(value: number, fresh?: number): Baseline {
  const b = new Baseline(fresh);
  for (let t = 0; t < 80; t++) b.observe(s(value, 10, false, t), false);
  return b;
}

/** The baseline after one probe from `value` that measured `candidate` with `spread`. */
function afterProbe(value: number, candidate: number, spread: number, probe: ProbeDepth) {
  const b = at(value);
  b.probeStarted(10, false);
  b.probeEnded();
  const result = b.measured(candidate, spread, 20, probe);
  return { value: b.value, result, collapsed: b.collapsed };
}

describe('the first baseline', () => {
  test('is the first positive, finite RTT; an RTT of 0 or a dropped sample never sets it', () => {
    const b = new Baseline();
    b.observe(s(0, 1, false, 0), false); // a millisecond clock's fast call
    b.observe(s(5, 1, true, 1), false); // a drop
    expect(b.value).toBe(Infinity);
    b.observe(s(80, 1, false, 2), false);
    expect(b.value).toBe(80);
  });
});

describe('between probes the baseline only falls, to the second lowest RTT, by 20 % or more', () => {
  test('one lucky low sample does not drag the baseline down; two do', () => {
    const b = probing({ probeMultiplier: 1000, recheckMultiplier: 1000 });
    for (let i = 0; i < 20; i++) b.observe(s(100, 10), 10, 1);
    expect(b.baseline.value).toBe(100);
    b.observe(s(5, 10), 10, 1); // a cached or short-circuited reply
    expect(b.baseline.value).toBe(100);
    b.observe(s(6, 10), 10, 1);
    expect(b.baseline.value).toBe(6);
  });

  test('two lows less than 20 % below the baseline are noise: it stays; two at 21 % below lower it', () => {
    const b = at(100);
    b.observe(s(85, 10, false, 2), false);
    b.observe(s(85, 10, false, 3), false);
    expect(b.value).toBe(100);
    b.observe(s(79, 10, false, 4), false);
    expect(b.value).toBe(100); // the second lowest is still 85
    b.observe(s(79, 10, false, 5), false);
    expect(b.value).toBe(79);
  });

  test('slower samples never raise it, nor do dropped fast ones lower it', () => {
    const b = at(100);
    for (let i = 0; i < 50; i++) b.observe(s(400, 10, false, 2 + i), false);
    expect(b.value).toBe(100);
    b.observe(s(10, 10, true, 60), false);
    b.observe(s(10, 10, true, 61), false);
    expect(b.value).toBe(100);
  });

  test('samples during a probe lower it by the same rule', () => {
    const b = at(100);
    b.observe(s(50, 10, false, 2), true);
    b.observe(s(50, 10, false, 3), true);
    expect(b.value).toBe(50);
  });

  test("a probe's end starts the lows over: the first low sample after it counts alone", () => {
    const ended = at(100);
    ended.probeStarted(10, false);
    ended.probeEnded();
    ended.observe(s(70, 10, false, 20), false);
    expect(ended.value).toBe(70);
    // Without a probe's end the lows are 70 and 100: the second lowest keeps the baseline.
    const kept = at(100);
    kept.observe(s(70, 10, false, 20), false);
    expect(kept.value).toBe(100);
  });
});

describe("a probe's measurement", () => {
  test('more than 10 % below, and beyond the spread of its samples, lowers the baseline', () => {
    expect(afterProbe(100, 85, 5, SHALLOW)).toMatchObject({ value: 85, result: 'moved' });
    // Within the spread of its own samples (noise): kept, and a shallow dip does not refresh it.
    expect(afterProbe(100, 85, 20, SHALLOW)).toMatchObject({ value: 100, result: 'kept' });
    // Within 10 %, either way: not a move.
    expect(afterProbe(100, 91, 0, HALF)).toMatchObject({ value: 91, result: 'kept' });
    expect(afterProbe(100, 109, 0, HALF)).toMatchObject({ value: 109, result: 'kept' });
  });

  test('beyond a quarter of the baseline it is a move whatever the spread, and a far one', () => {
    expect(afterProbe(100, 74, 1000, SHALLOW)).toMatchObject({ value: 74, result: 'moved_far' });
    expect(afterProbe(100, 76, 0, SHALLOW)).toMatchObject({ value: 76, result: 'moved' });
    expect(afterProbe(100, 126, 1000, HALF)).toMatchObject({ value: 126, result: 'moved_far' });
    expect(afterProbe(100, 124, 0, HALF)).toMatchObject({ value: 124, result: 'moved' });
  });

  test('a fall to two thirds or less is a collapse (the limit was judged against queueing)', () => {
    expect(afterProbe(90, 60, 0, HALF)).toMatchObject({ value: 60, collapsed: true });
    expect(afterProbe(90, 61, 0, HALF)).toMatchObject({ value: 61, collapsed: false });
    expect(afterProbe(90, 85, 0, HALF)).toMatchObject({ value: 85, collapsed: false });
    // A collapse is the last probe's: the next probe's end forgets it.
    const b = at(90);
    b.probeStarted(10, false);
    b.probeEnded();
    b.measured(50, 0, 20, HALF);
    expect(b.collapsed).toBe(true);
    b.probeStarted(30, false);
    b.probeEnded();
    expect(b.collapsed).toBe(false);
  });

  test('a rise is capped at ×2 per probe, unless the deepest dip measured it', () => {
    expect(afterProbe(100, 1000, 0, HALF)).toMatchObject({ value: 200, result: 'moved_far' });
    expect(afterProbe(100, 1000, 0, DEEPEST)).toMatchObject({ value: 1000, result: 'moved_far' });
  });

  test('an open probe (no dip) never raises the baseline, but lowers it', () => {
    expect(afterProbe(100, 150, 0, OPEN)).toMatchObject({ value: 100, result: 'rise_refused' });
    expect(afterProbe(100, 80, 0, OPEN)).toMatchObject({ value: 80, result: 'moved' });
  });

  test('within 10 % it refreshes the baseline after a dip to half or deeper, or when it is the RTT of the full limit', () => {
    expect(afterProbe(100, 105, 0, HALF)).toMatchObject({ value: 105, result: 'kept' });
    // A shallow dip (¾) that measured less than the full limit's RTT (100, about 16 samples'
    // average) still queued a little: kept as it was.
    expect(afterProbe(100, 95, 0, SHALLOW)).toMatchObject({ value: 100, result: 'kept' });
    // The full limit's RTT rose to about 108 meanwhile: a candidate of 105 (≥ 97 % of it) saw no
    // queue to drain, and refreshes the baseline.
    const b = at(100);
    for (let i = 0; i < 80; i++) b.observe(s(108, 10, false, 100 + i), false);
    b.probeStarted(30, false);
    b.probeEnded();
    expect(b.measured(105, 0, 40, SHALLOW)).toBe('kept');
    expect(b.value).toBe(105);
  });

  test("the full limit's RTT is an average over about 16 samples outside probes", () => {
    // After 80 samples of 100 it is about 99.4; one of 150 adds a sixteenth of the gap (about
    // 102.6): a candidate of 100 is then at 97 % of it or more, and refreshes the baseline.
    const b = at(99);
    b.observe(s(150, 10, false, 100), false);
    b.probeStarted(300, false);
    b.probeEnded();
    expect(b.measured(100, 0, 400, SHALLOW)).toBe('kept');
    expect(b.value).toBe(100);
    // Samples during a probe are not part of it.
    const c = at(99);
    for (let i = 0; i < 20; i++) c.observe(s(300, 10, false, 100 + i), true);
    c.probeStarted(300, false);
    c.probeEnded();
    c.measured(100, 0, 400, SHALLOW);
    expect(c.value).toBe(100);
  });

  test('is judged against the baseline the probe started from', () => {
    const b = at(100);
    b.probeStarted(10, false);
    expect(b.atProbe).toBe(100);
    // The dip's own clean samples lower the baseline meanwhile.
    b.observe(s(60, 5, false, 11), true);
    b.observe(s(60, 5, false, 12), true);
    expect(b.value).toBe(60);
    b.probeEnded();
    // 95 is within 10 % of 100 (the baseline at the start): not a rise from 60.
    expect(b.measured(95, 0, 20, HALF)).toBe('kept');
    expect(b.value).toBe(95);
  });
});

describe('the baseline goes stale', () => {
  /** Feeds `rtt` every 100 ms from `from` (ms) while before `until`; returns the first stale time. */
  function staleAt(b: Baseline, rtt: number, from: number, until: number): number | undefined {
    for (let t = from; t < until; t += 100) {
      if (b.observe(s(rtt, 10, false, t), false)) return t + rtt;
    }
    return undefined;
  }

  test('when no sample came near it for BASELINE_MAX_AGE_MS, counted from the last fresh one', () => {
    // Fresh until 179 (the last near sample's end): stale at the first end 10 s after it.
    expect(BASELINE_MAX_AGE_MS).toBe(10_000);
    expect(staleAt(at(100), 200, 100, 20_000)).toBe(10_200);
  });

  test('a sample within the freshness factor keeps it fresh; one beyond does not', () => {
    const near = at(100);
    expect(staleAt(near, 125, 100, 30_000)).toBeUndefined(); // × 1.25 is near
    const beyond = at(100);
    expect(staleAt(beyond, 126, 100, 30_000)).toBeDefined();
  });

  test("the freshness factor is the algorithm's (Gradient passes its tolerance)", () => {
    const b = at(100, 1.1);
    expect(staleAt(b, 115, 100, 30_000)).toBeDefined();
    expect(staleAt(at(100, 1.1), 110, 100, 30_000)).toBeUndefined();
  });

  test('one sample at the low edge does not keep it fresh while the average RTT has left it', () => {
    const b = at(100);
    let stale = false;
    // Every tenth call is fast; the others take 3× the baseline: the average stays far above it.
    for (let t = 100; t < 30_000 && !stale; t += 100) {
      stale = b.observe(s(t % 1000 === 0 ? 100 : 300, 10, false, t), false);
    }
    expect(stale).toBe(true);
  });

  test('never during a probe; a probe that measured, or the start of the deepest probe, makes it fresh again', () => {
    const b = at(100);
    // During a probe no sample counts toward staleness.
    for (let t = 100; t < 30_000; t += 100)
      expect(b.observe(s(400, 10, false, t), true)).toBe(false);
    // Stale at the first sample outside it …
    expect(b.observe(s(400, 10, false, 30_000), false)).toBe(true);
    // … and a measurement at 30 s makes it fresh for a full age.
    b.probeStarted(30_000, false);
    b.probeEnded();
    b.measured(100, 0, 30_000, HALF);
    expect(b.observe(s(400, 10, false, 30_000 + BASELINE_MAX_AGE_MS - 500), false)).toBe(false);
    expect(b.observe(s(400, 10, false, 30_000 + BASELINE_MAX_AGE_MS - 400), false)).toBe(true);
    // The deepest probe's start makes it fresh from then, whatever it finds.
    b.probeStarted(50_000, true);
    expect(b.observe(s(400, 10, false, 50_000 + BASELINE_MAX_AGE_MS - 500), false)).toBe(false);
    // A probe that is not the deepest one does not.
    b.probeStarted(70_000, false);
    expect(b.observe(s(400, 10, false, 70_000), false)).toBe(true);
  });
});
