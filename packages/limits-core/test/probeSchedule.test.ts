import { describe, expect, test } from 'vitest';
import { BASELINE_MAX_AGE_MS, Baseline } from '../src/algorithms/Baseline.js';
import { PROBE_MAX_RTTS, ProbeSchedule } from '../src/algorithms/ProbeSchedule.js';
import { probing, sample as s } from './support/probes.js';

// The rule of src/algorithms/ProbeSchedule.ts, driven directly: samples on explicit times at an
// explicit limit (the schedule over a real Baseline, fed as ProbingLimit feeds them).

/**
 * Feeds `rtt` samples under `inflight` at `limit`, one every `step` ms from `t.now`, until the
 * schedule answers `state`; returns how many samples that took (the last one included), with
 * `t.now` left at the start of the last one.
 */
function until(
  b: ReturnType<typeof probing>,
  t: { now: number },
  state: string,
  rtt: number,
  inflight: number,
  limit = 10,
  step = 10,
): number {
  for (let i = 1; i <= 10_000; i++, t.now += step) {
    if (b.observe(s(rtt, inflight, false, t.now), limit, 1) === state) return i;
  }
  throw new Error(`no ${state}`);
}

describe('the probe schedule (the dips that relearn the baseline)', () => {
  test('a probe dips the limit, measures clean samples, and keeps the baseline when it is right', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 2, probeDepth: 0.5 });
    // Spacing = 0.5 rounds of 10 samples → the 5th sample starts a dip to floor(10 × 0.5) = 5.
    const states = [];
    for (let i = 0; i < 5; i++) states.push(b.observe(s(100, 10, false, i), 10, 1));
    expect(states).toEqual(['none', 'none', 'none', 'none', 'dip']);
    expect(b.schedule.dipLimit).toBe(5);
    // Samples started before the dip (startTime < 104) or above the dip limit do not count.
    expect(b.observe(s(100, 10, false, 50), 10, 1)).toBe('dip');
    for (let i = 0; i < 4; i++) expect(b.observe(s(101, 5, false, 200 + i), 10, 1)).toBe('dip');
    expect(b.observe(s(101, 5, false, 210), 10, 1)).toBe('end');
    expect(b.baseline.value).toBe(101); // within ±10 %: refreshed to the probe's median, not moved
  });

  test('a due probe waits for a limit it can dip (at the floor it would only hold the limit)', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 2, probeDepth: 0.5 });
    // Due after half a round; at a limit of 1 (the floor) no dip starts, however many samples.
    for (let i = 0; i < 20; i++) expect(b.observe(s(100, 1, false, i), 1, 1)).toBe('none');
    expect(b.observe(s(100, 4, false, 20), 4, 1)).toBe('dip');
    expect(b.schedule.dipLimit).toBe(2);
    // A limit that falls to the dip calls it off (drops, late calls): no result, no hold.
    expect(b.observe(s(100, 2, false, 30), 2, 1)).toBe('none');
    expect(b.schedule.probing).toBe(false);
  });

  test("a probe's median within the spread of its own samples is not a move (±10 % jitter)", () => {
    const b = probing({ random: () => 0, recheckMultiplier: 2, probeDepth: 0.5 });
    const states = [];
    for (let i = 0; i < 5; i++) states.push(b.observe(s(45, 10, false, i), 10, 1));
    expect(states.at(-1)).toBe('dip');
    expect(b.baseline.value).toBe(45);
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
      const b = probing({ random: () => 0, recheckMultiplier: 2 });
      let t = 0;
      const until = (state: string, r: number, inflight: number) => {
        for (let i = 0; i < 1000; i++, t += 10) {
          if (b.observe(s(r, inflight, false, t), 10, 1) === state) return;
        }
        throw new Error(`no ${state}`);
      };
      until('dip', 50, 10); // the first probe, at half: baseline 50
      until('end', 50, 5);
      expect(b.baseline.value).toBe(50);
      until('dip', 50, 10); // a normal probe, at three quarters of the limit
      expect(b.schedule.dipLimit).toBe(7);
      until('end', rtt, 7); // it reads a move to `rtt`
      until('dip', rtt, 10); // the recheck, a round later
      return { value: b.baseline.value, dip: b.schedule.dipLimit };
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
      const b = probing({ random: () => 0, recheckMultiplier: 2 });
      let t = 0;
      const until = (state: string, r: number, inflight: number, appLimited: boolean) => {
        for (let i = 0; i < 1000; i++, t += 10) {
          if (b.observe(s(r, inflight, false, t), 10, 1, true, appLimited) === state) return;
        }
        throw new Error(`no ${state}`);
      };
      until('dip', 50, 10, false); // the first probe (the load used the limit): a dip to half
      expect(b.schedule.open).toBe(false);
      expect(b.schedule.dipLimit).toBe(5);
      until('end', 50, 5, false);
      until('dip', 50, 4, true); // due while 4 of 10 are used: open
      const open = { open: b.schedule.open, dipLimit: b.schedule.dipLimit };
      until('end', rtt, 4, true);
      const value = b.baseline.value;
      until('dip', rtt, 4, true); // the next probe
      return { open, value, next: { open: b.schedule.open, dipLimit: b.schedule.dipLimit } };
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
    const b = probing({ random: () => 0, recheckMultiplier: 1, probeSamples: 1 });
    b.observe(s(100, 10, false, 0), 10, 1);
    let t = 1;
    const probeOnce = (rtt: number) => {
      while (b.observe(s(rtt, 1, false, t), 10, 1) !== 'end') t += rtt;
    };
    probeOnce(1000); // a shallow dip (depth 0.5) sees 10× the baseline: capped at 2×
    expect(b.baseline.value).toBe(200);
  });

  test('a lasting shift is relearned within a few probes (the deepest dip is trusted)', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 1, probeSamples: 1 });
    b.observe(s(50, 10, false, 0), 10, 1);
    let t = 1;
    let probes = 0;
    while (b.baseline.value < 3000 && probes < 10) {
      while (b.observe(s(3000, 1, false, t), 10, 1) !== 'end') t += 3000;
      probes++;
    }
    // A dip whose samples take 60× the baseline outlasts 20 baselines and is called off without a
    // result; the baseline, left stale for BASELINE_MAX_AGE_MS, gets the deepest probe, trusted in
    // full (3000).
    expect(b.baseline.value).toBe(3000);
    expect(probes).toBe(1);
    expect(t).toBeGreaterThanOrEqual(BASELINE_MAX_AGE_MS);
  });

  test('a moderate lasting shift is relearned by probes within a few of them (the deepest dip is trusted)', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 1, probeSamples: 1 });
    b.observe(s(50, 10, false, 0), 10, 1);
    let t = 1;
    let probes = 0;
    while (b.baseline.value < 400 && probes < 10) {
      while (b.observe(s(400, 1, false, t), 10, 1) !== 'end') t += 40;
      probes++;
    }
    // Depth 0.5 → ×2 (100), 0.25 → ×2 (200), 0.125 is the deepest → trusted in full (400).
    expect(b.baseline.value).toBe(400);
    expect(probes).toBe(3);
    expect(t).toBeLessThan(BASELINE_MAX_AGE_MS);
  });

  test('a baseline no sample came near for BASELINE_MAX_AGE_MS is replaced by the deepest probe at once', () => {
    // The first probes far away (no probe due), baseline 20 ms; then every call takes 500 ms.
    const b = probing({ random: () => 1, probeMultiplier: 1e6, recheckMultiplier: 1e6 });
    b.observe(s(20, 1, false, 0), 1, 1);
    let t = 100;
    const states: string[] = [];
    // 500 ms calls back to back at a limit of 1: stale 10 s after the last fresh sample (t = 20).
    for (; t + 500 - 20 < BASELINE_MAX_AGE_MS; t += 500)
      states.push(b.observe(s(500, 1, false, t), 1, 1));
    expect(states.every((x) => x === 'none')).toBe(true);
    expect(b.baseline.value).toBe(20);
    expect(b.observe(s(500, 1, false, t), 1, 1)).toBe('dip');
    let state = 'dip';
    for (let i = 0; i < 10 && state !== 'end'; i++) {
      t += 500;
      state = b.observe(s(500, 1, false, t), 1, 1);
    }
    expect(state).toBe('end');
    expect(b.baseline.value).toBe(500); // the deepest dip is trusted in full, not ×2
  });
});

describe('when a probe starts', () => {
  test('the first within half a recheck spacing; then every U[0.5, 1) × probeMultiplier rounds of the limit', () => {
    // random 0: the shortest spacing. The first: 0.5 × 4 / 2 = 1 round = 10 samples.
    const b = probing({ random: () => 0, recheckMultiplier: 4, probeMultiplier: 6 });
    const t = { now: 0 };
    expect(until(b, t, 'dip', 100, 10)).toBe(10);
    until(b, t, 'end', 100, 5);
    // It confirmed the baseline: the next is 0.5 × 6 = 3 rounds (30 samples) away.
    expect(until(b, t, 'dip', 100, 10)).toBe(30);
    // random → 1: the longest spacing, 1 × 6 rounds (60 samples).
    const late = probing({ random: () => 0.999_999, recheckMultiplier: 4, probeMultiplier: 6 });
    const u = { now: 0 };
    expect(until(late, u, 'dip', 100, 10)).toBe(20);
    until(late, u, 'end', 100, 5);
    expect(until(late, u, 'dip', 100, 10)).toBe(60);
  });

  test('a round is the limit: at a limit of 20 the same spacing takes twice the samples', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 4 });
    expect(until(b, { now: 0 }, 'dip', 100, 20, 20)).toBe(20);
  });

  test('after a probe that moved the baseline, the next one is a recheck spacing away', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 4, probeMultiplier: 6 });
    const t = { now: 0 };
    until(b, t, 'dip', 100, 10);
    until(b, t, 'end', 60, 5); // a move to 60
    expect(b.baseline.value).toBe(60);
    expect(until(b, t, 'dip', 60, 10)).toBe(20); // 0.5 × 4 rounds
  });

  test('a due probe waits while the algorithm may not start one, and starts at the first sample that may', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 2 });
    for (let i = 0; i < 30; i++) {
      expect(b.observe(s(100, 10, false, i), 10, 1, false)).toBe('none');
    }
    expect(b.observe(s(100, 10, false, 30), 10, 1, true)).toBe('dip');
  });

  test('a stale baseline starts the deepest probe at once, even at the floor and not yet due', () => {
    const schedule = new ProbeSchedule({ random: () => 0, probeMultiplier: 1e6 });
    expect(schedule.observe(s(100, 1, false, 0), false, 1, 1)).toBe('none');
    expect(schedule.observe(s(100, 1, false, 10), true, 1, 1)).toBe('dip');
    expect(schedule.dipLimit).toBe(1);
    // At a limit of 100 it dips to minProbeDepth (0.125 by default), and an app-limited load
    // does not make it open.
    const deep = new ProbeSchedule({ random: () => 0, probeMultiplier: 1e6 });
    expect(deep.observe(s(100, 10, false, 0), true, 100, 1, true, true)).toBe('dip');
    expect(deep.open).toBe(false);
    expect(deep.dipLimit).toBe(12);
  });
});

describe('an open probe', () => {
  test('that reads a rise makes the next probe a dip, a recheck spacing away', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 4, probeMultiplier: 6 });
    const t = { now: 0 };
    until(b, t, 'dip', 100, 10);
    until(b, t, 'end', 100, 5);
    const open = (rtt: number) => {
      for (let i = 0; i < 1000; i++, t.now += 10) {
        if (b.observe(s(rtt, 4, false, t.now), 10, 1, true, true) === 'dip') return i + 1;
      }
      throw new Error('no dip');
    };
    expect(open(100)).toBe(30); // due a normal spacing away: open (4 of 10 used)
    expect(b.schedule.open).toBe(true);
    t.now += 200;
    for (let i = 0; i < 5; i++, t.now += 10) b.observe(s(150, 4, false, t.now), 10, 1, true, true);
    expect(b.baseline.value).toBe(100); // the rise is not applied
    expect(open(150)).toBe(20); // 0.5 × 4 rounds, not 0.5 × 6
    expect(b.schedule.open).toBe(false);
  });
});

describe('how deep a probe dips', () => {
  test('the first and every fourth probe dip to half at most; the others to probeDepth', () => {
    const b = probing({ random: () => 0 });
    const t = { now: 0 };
    const dips: number[] = [];
    for (let i = 0; i < 6; i++) {
      until(b, t, 'dip', 100, 100, 100);
      dips.push(b.schedule.dipLimit);
      until(b, t, 'end', 100, 10, 100);
    }
    expect(dips).toEqual([50, 75, 75, 75, 50, 75]);
  });

  test('never below minLimit', () => {
    const schedule = new ProbeSchedule({ random: () => 0 });
    expect(schedule.observe(s(100, 10, false, 0), true, 10, 4)).toBe('dip');
    expect(schedule.dipLimit).toBe(4); // floor(10 × 0.125) = 1, held at minLimit
  });

  test('moves keep halving the depth, down to minProbeDepth', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 1, minProbeDepth: 0.2 });
    const t = { now: 0 };
    until(b, t, 'dip', 100, 100, 100);
    const dips: number[] = [b.schedule.dipLimit];
    // Each probe reads a far move (×2, the cap): the next dips half as deep, not below 0.2.
    for (let rtt = 300; dips.length < 4; rtt *= 3) {
      until(b, t, 'end', rtt, 1, 100);
      until(b, t, 'dip', rtt, 100, 100);
      dips.push(b.schedule.dipLimit);
    }
    expect(dips).toEqual([50, 25, 20, 20]);
  });
});

describe('how a probe measures', () => {
  test('it ends at probeSamples clean samples; their median is the candidate', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 2, probeSamples: 3 });
    const t = { now: 0 };
    until(b, t, 'dip', 100, 10); // the dip starts when that sample ends, 100 ms after it started
    const start = t.now + 100;
    // Samples that started before the dip, or above its limit (5), are not clean.
    expect(b.observe(s(10, 5, false, start - 1), 10, 1)).toBe('dip');
    expect(b.observe(s(10, 6, false, start), 10, 1)).toBe('dip');
    expect(b.observe(s(70, 5, false, start), 10, 1)).toBe('dip');
    expect(b.observe(s(60, 5, false, start + 1), 10, 1)).toBe('dip');
    expect(b.observe(s(75, 5, false, start + 2), 10, 1)).toBe('end');
    // The median of 60, 70 and 75 (the two samples of 10 ms lowered the baseline meanwhile, through
    // the between-probes rule; the move is judged against the baseline at the dip's start, 100).
    expect(b.baseline.value).toBe(70);
  });

  test('with no clean sample it ends after 2 × limit + 20 samples, without a result', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 2 });
    const t = { now: 0 };
    until(b, t, 'dip', 100, 10);
    const start = t.now + 100; // when the sample that started the dip ended
    // Every sample admitted above the dip (6 of a dip to 5; more than half the limit): no result.
    for (let i = 1; i < 40; i++) expect(b.observe(s(300, 6, false, start + i), 10, 1)).toBe('dip');
    expect(b.observe(s(300, 6, false, start + 40), 10, 1)).toBe('end');
    expect(b.baseline.value).toBe(100);
  });

  test('a dip no sample came in under takes those admitted under the fewest calls, when at most half the limit', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 2, probeDepth: 0.3 });
    const t = { now: 0 };
    // The first probe, at half the limit: a dip to 5, ended by samples at 5.
    until(b, t, 'dip', 100, 10);
    until(b, t, 'end', 100, 5);
    // The next, a dip to 3 (0.3): its samples come under 5, 4 and 4 calls: 4 is the fewest, at most
    // half the limit; their RTTs (300, 300) are the candidate (capped at ×2: 200).
    until(b, t, 'dip', 100, 10);
    expect(b.schedule.dipLimit).toBe(3);
    const start = t.now + 100; // when the sample that started the dip ended
    b.observe(s(500, 5, false, start), 10, 1);
    b.observe(s(300, 4, false, start + 1), 10, 1);
    b.observe(s(300, 4, false, start + 2), 10, 1);
    b.observe(s(100, 3, false, start - 1), 10, 1); // started before the dip: not counted
    let state = 'dip';
    for (let i = 3; state === 'dip'; i++) state = b.observe(s(500, 6, false, start + i), 10, 1);
    expect(state).toBe('end');
    expect(b.baseline.value).toBe(200);
  });

  test('the deepest probe for a stale baseline takes the samples under the fewest calls, however many', () => {
    const b = probing({ random: () => 0, probeMultiplier: 1e6 });
    for (let i = 0; i < 3; i++) b.baseline.observe(s(100, 10, false, i), false);
    // Stale: a dip to 1 (10 × 0.125, at least minLimit); every sample comes under 8 calls.
    expect(b.schedule.observe(s(100, 10, false, 10), true, 10, 1)).toBe('dip');
    expect(b.schedule.dipLimit).toBe(1);
    let state = 'dip';
    for (let i = 0; state === 'dip' && i < 100; i++) {
      state = b.observe(s(i % 2 === 0 ? 400 : 500, 8, false, 200 + i), 10, 1);
    }
    expect(state).toBe('end');
    expect(b.baseline.value).toBe(400); // the median of 400s and 500s, trusted in full
  });

  test('within 10 %, a dip to half refreshes the baseline to its candidate; a shallow one only when that is the RTT at the full limit', () => {
    const run = (probeDepth: number) => {
      // The first probe (at half, a hundred rounds away: the full limit's RTT, 100, is well known by
      // then) confirms 100; the second dips to probeDepth and reads 95.
      const b = probing({ random: () => 0, recheckMultiplier: 200, probeDepth });
      const t = { now: 0 };
      until(b, t, 'dip', 100, 10);
      t.now += 100; // the dip starts when that sample ends
      until(b, t, 'end', 100, 1);
      until(b, t, 'dip', 100, 10);
      t.now += 100;
      until(b, t, 'end', 95, 1);
      return b.baseline.value;
    };
    expect(run(0.5)).toBe(95);
    // A dip to ¾: 95 is under 97 % of the full limit's 100 (it may still queue there): kept.
    expect(run(0.75)).toBe(100);
  });
});

describe('when a probe is cancelled', () => {
  test('a dip that outlasts PROBE_MAX_RTTS baselines is called off without a result', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 4 });
    const t = { now: 0 };
    until(b, t, 'dip', 100, 10); // the 10th sample, started at 90: the dip starts at 190
    expect(PROBE_MAX_RTTS).toBe(20);
    // A sample ending 20 baselines after the start still counts; one ending later calls it off.
    expect(b.observe(s(2000, 6, false, 190), 10, 1)).toBe('dip');
    expect(b.observe(s(2001, 6, false, 190), 10, 1)).toBe('none');
    expect(b.schedule.probing).toBe(false);
    expect(b.baseline.value).toBe(100);
  });

  test('cancel() calls off a running probe, never the deepest one for a stale baseline', () => {
    const schedule = new ProbeSchedule({ random: () => 0 });
    expect(schedule.cancel()).toBe(false); // none running
    schedule.observe(s(100, 10, false, 0), true, 10, 1);
    expect(schedule.cancel()).toBe(false);
    expect(schedule.probing).toBe(true);
    const normal = probing({ random: () => 0 });
    until(normal, { now: 0 }, 'dip', 100, 10);
    expect(normal.schedule.cancel()).toBe(true);
    expect(normal.schedule.probing).toBe(false);
  });

  test('after a cancel the next probe is a normal spacing away, or a recheck spacing for a recheck', () => {
    const run = (moveFirst: boolean) => {
      const b = probing({ random: () => 0, recheckMultiplier: 4, probeMultiplier: 6 });
      const t = { now: 0 };
      until(b, t, 'dip', 100, 10);
      until(b, t, 'end', moveFirst ? 60 : 100, 5);
      until(b, t, 'dip', b.baseline.value, 10);
      b.schedule.cancel();
      return until(b, t, 'dip', b.baseline.value, 10);
    };
    expect(run(false)).toBe(30); // 0.5 × 6 rounds
    expect(run(true)).toBe(20); // 0.5 × 4 rounds
  });
});

describe('when a probe is postponed', () => {
  test('late calls put the next probe a normal spacing away', () => {
    const b = probing({ random: () => 0, recheckMultiplier: 4, probeMultiplier: 6 });
    const t = { now: 0 };
    until(b, t, 'dip', 100, 10);
    until(b, t, 'end', 100, 5);
    // 25 of the 30 samples to the next probe, then late calls: 30 more from there.
    for (let i = 0; i < 25; i++, t.now += 10) b.observe(s(100, 10, false, t.now), 10, 1);
    b.schedule.postpone();
    expect(until(b, t, 'dip', 100, 10)).toBe(30);
  });

  test('not before the first probe, nor during a recheck, nor while a probe runs', () => {
    // Before the first probe: it stays 10 samples away.
    const first = probing({ random: () => 0, recheckMultiplier: 4, probeMultiplier: 6 });
    const t = { now: 0 };
    for (let i = 0; i < 5; i++, t.now += 10) first.observe(s(100, 10, false, t.now), 10, 1);
    first.schedule.postpone();
    expect(until(first, t, 'dip', 100, 10)).toBe(5);
    // While it runs, it is not cancelled.
    first.schedule.postpone();
    expect(first.schedule.probing).toBe(true);
    // A recheck (the probe moved the baseline) stays a recheck spacing away.
    until(first, t, 'end', 60, 5);
    for (let i = 0; i < 15; i++, t.now += 10) first.observe(s(60, 10, false, t.now), 10, 1);
    first.schedule.postpone();
    expect(until(first, t, 'dip', 60, 10)).toBe(5);
  });
});

describe('postpone while a probe runs', () => {
  test('leaves the schedule alone (it draws no spacing)', () => {
    // The spacings drawn: the first probe's, then the one at its end (0: 30 samples; 0.99: 60).
    const run = (postponeDuringProbe: boolean) => {
      const draws = [0, 0, 0.99, 0];
      const b = probing({
        random: () => draws.shift() ?? 0,
        recheckMultiplier: 4,
        probeMultiplier: 6,
      });
      const t = { now: 0 };
      until(b, t, 'dip', 100, 10);
      until(b, t, 'end', 100, 5);
      until(b, t, 'dip', 100, 10);
      if (postponeDuringProbe) b.schedule.postpone();
      until(b, t, 'end', 100, 7);
      return until(b, t, 'dip', 100, 10);
    };
    expect(run(false)).toBe(60);
    expect(run(true)).toBe(run(false));
  });
});

describe('a standalone schedule', () => {
  test('has its own baseline when none is given, and refuses unknown options with the probe prefix', () => {
    expect(() => new ProbeSchedule({ probeDept: 0.5 } as never)).toThrow(/"probe.probeDepth"/);
    const schedule = new ProbeSchedule({}, 'probe', new Baseline());
    expect(schedule.probing).toBe(false);
  });
});
