import { describe, expect, test } from 'vitest';
import { AppLimitedDecay, appLimited } from '../src/algorithms/AppLimited.js';
import { SlowStart } from '../src/algorithms/SlowStart.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';

// The rule of src/algorithms/AppLimited.ts, driven directly: samples' in-flight counts and decisions
// at an explicit limit.

describe('a sample is app-limited', () => {
  test('when the limit is more than 1.5× the units it was admitted under', () => {
    expect(appLimited(false, 9, 15)).toBe(true); // 13.5 < 15
    expect(appLimited(false, 10, 15)).toBe(false); // 15 is not < 15
  });

  test('2× while slow start doubles per round', () => {
    expect(appLimited(true, 7, 15)).toBe(true); // 14 < 15
    expect(appLimited(true, 8, 15)).toBe(false);
    expect(appLimited(false, 8, 15)).toBe(true); // 12 < 15
  });

  test('never when it used every whole unit the limit lets through', () => {
    expect(appLimited(false, 1, 1.9)).toBe(false); // 1.5 < 1.9, but floor(1.9) = 1 unit, and it took it
    expect(appLimited(false, 1, 2)).toBe(true);
  });

  test('it never raises the limit of an algorithm, but falls still apply', () => {
    const noProbe = { probeMultiplier: 1000, recheckMultiplier: 1000 };
    const vegas = new VegasLimit({ initialLimit: 40, ...noProbe });
    vegas.update({ startTime: 0, rtt: 100, inflight: 5, dropped: false });
    expect(vegas.limit).toBe(40);
    expect(vegas.lastDecision?.reason).toBe('app_limited');
    vegas.update({ startTime: 1, rtt: 500, inflight: 5, dropped: false });
    expect(vegas.limit).toBeLessThan(40);
    expect(vegas.lastDecision?.reason).toBe('queueing');
  });
});

/** A decay over a slow start that is not doubling (its initial run paused). */
function decay(minLimit = 1): { d: AppLimitedDecay; slowStart: SlowStart } {
  const slowStart = new SlowStart(1000);
  const d = new AppLimitedDecay(minLimit, slowStart);
  return { d, slowStart };
}

describe('an unused limit decays', () => {
  test('not before a whole round (L samples) of app-limited samples', () => {
    const { d } = decay();
    for (let i = 0; i < 19; i++) expect(d.idle(20, 20, 2, i, 'app_limited')).toBe(20);
  });

  test('then toward 1.5× the peak in-flight of that round, half the gap per round (1/L of it per sample)', () => {
    const { d } = decay();
    for (let i = 0; i < 19; i++) d.idle(20, 20, i === 5 ? 4 : 2, i, 'steady');
    // Target 1.5 × 4 = 6: 20 − (20 − 6) × 0.5 / 20.
    expect(d.idle(20, 20, 2, 19, 'steady')).toBeCloseTo(19.65, 12);
    // The next sample closes its share of the gap again.
    expect(d.idle(19.65, 20, 2, 20, 'steady')).toBeCloseTo(19.65 - (13.65 * 0.5) / 20, 12);
    // A limit at or under the target does not move (the decay never raises it).
    expect(d.idle(6, 20, 2, 21, 'steady')).toBe(6);
    expect(d.idle(5, 20, 2, 22, 'steady')).toBe(5);
  });

  test('never below minLimit', () => {
    const { d } = decay(5);
    for (let i = 0; i < 9; i++) d.idle(10, 10, 1, i, 'app_limited');
    // 1.5 × 1 = 1.5 is under minLimit: the target is 5.
    expect(d.idle(10, 10, 1, 9, 'app_limited')).toBeCloseTo(10 - (5 * 0.5) / 10, 12);
  });

  test('each further whole round sets the target afresh', () => {
    const { d } = decay();
    for (let i = 0; i < 10; i++) d.idle(10, 10, 2, i, 'steady'); // target 3
    // Still target 3 until the next round is whole: 10 − (10 − 3) × 0.5 / 10.
    expect(d.idle(10, 10, 6, 10, 'steady')).toBeCloseTo(9.65, 12);
    for (let i = 1; i < 9; i++) d.idle(10, 10, 6, 10 + i, 'steady');
    // Then 1.5 × 6 = 9.
    expect(d.idle(10, 10, 6, 19, 'steady')).toBeCloseTo(10 - (1 * 0.5) / 10, 12);
  });

  test('only app_limited and steady decisions count: a fall by the rule is left as it is', () => {
    const { d } = decay();
    for (let i = 0; i < 9; i++) d.idle(10, 10, 2, i, 'steady');
    expect(d.idle(9, 10, 2, 9, 'queueing')).toBe(9); // not counted, no decay
    expect(d.idle(10, 10, 2, 10, 'steady')).toBeLessThan(10); // the tenth that counts
  });

  test('the initial slow start pauses at the end of each whole unused round', () => {
    const { d, slowStart } = decay();
    expect(slowStart.active).toBe(true);
    for (let i = 0; i < 9; i++) d.idle(10, 10, 2, i, 'app_limited');
    expect(slowStart.active).toBe(true);
    d.idle(10, 10, 2, 9, 'app_limited');
    expect(slowStart.active).toBe(false);
  });
});

describe('a sample at use stops the decay', () => {
  test('it forgets the target and the round', () => {
    const { d } = decay();
    for (let i = 0; i < 10; i++) d.idle(10, 10, 2, i, 'steady'); // target 3
    d.used();
    // No target: no decay, and a whole new round is needed (9 samples are not one).
    for (let i = 0; i < 9; i++) expect(d.idle(10, 10, 2, 20 + i, 'steady')).toBe(10);
    expect(d.idle(10, 10, 2, 29, 'steady')).toBeLessThan(10);
  });

  test('the peak of a round it cut short is forgotten', () => {
    const { d } = decay();
    d.idle(20, 10, 6, 0, 'steady'); // a peak of 6 …
    d.used(); // … then a sample at use
    for (let i = 0; i < 9; i++) d.idle(20, 10, 2, 1 + i, 'steady');
    // Target 1.5 × 2 = 3, not 9: 20 − (20 − 3) × 0.5 / 10.
    expect(d.idle(20, 10, 2, 10, 'steady')).toBeCloseTo(19.15, 12);
  });
});

describe('in an algorithm', () => {
  test('a dropped sample neither counts into the round nor stops the decay', () => {
    const vegas = new VegasLimit({
      initialLimit: 20,
      probeMultiplier: 1000,
      recheckMultiplier: 1000,
    });
    // A whole round at 2 of 20 (app-limited even at slow start's 2×): the target is 3.
    for (let i = 0; i < 20; i++)
      vegas.update({ startTime: i, rtt: 100, inflight: 2, dropped: false });
    expect(vegas.limit).toBeLessThan(20);
    // A drop at full use lowers the limit by the rule …
    vegas.update({ startTime: 20, rtt: 100, inflight: 20, dropped: true });
    const afterDrop = vegas.limit;
    // … and the next unused sample still decays it.
    vegas.update({ startTime: 21, rtt: 100, inflight: 2, dropped: false });
    expect(vegas.limit).toBeLessThan(afterDrop);
    expect(vegas.lastDecision?.reason).toBe('app_limited');
  });

  test('a sample at use stops it', () => {
    const vegas = new VegasLimit({
      initialLimit: 20,
      probeMultiplier: 1000,
      recheckMultiplier: 1000,
    });
    for (let i = 0; i < 20; i++)
      vegas.update({ startTime: i, rtt: 100, inflight: 2, dropped: false });
    vegas.update({ startTime: 20, rtt: 100, inflight: 19, dropped: false });
    const atUse = vegas.limit;
    vegas.update({ startTime: 21, rtt: 100, inflight: 2, dropped: false });
    expect(vegas.limit).toBe(atUse);
  });
});
