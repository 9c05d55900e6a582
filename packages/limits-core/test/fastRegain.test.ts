import { describe, expect, test } from 'vitest';
import type { LimitReason, Sample } from '../src/algorithms/LimitAlgorithm.js';
import { SlowStart } from '../src/algorithms/SlowStart.js';

// The rule of src/algorithms/SlowStart.ts (slow start, and the fast regain of the last good level
// after a collapse), driven directly: decisions on hand-made samples at explicit times, baseline 100.

const BASE = 100;

/** A sample of `rtt` ms admitted under `inflight` units, started at `startTime`. */
const at = (startTime: number, inflight: number, rtt = BASE): Sample => ({
  startTime,
  rtt,
  inflight,
  dropped: false,
});

/** A slow start whose initial run ended (a queueing sample at 0): the limit grows additively. */
function ended(): SlowStart {
  const s = new SlowStart(1000);
  s.end(0, true);
  return s;
}

/** Tells `s` of a decision `reason` that took the limit from `before` to `limit`. */
function decide(
  s: SlowStart,
  before: number,
  limit: number,
  reason: LimitReason,
  sample: Sample,
): void {
  s.after(before, limit, reason, sample, BASE);
}

describe('the initial slow start', () => {
  test('runs from the start and ends at the first queueing, or at a steady sample', () => {
    const q = new SlowStart(1000);
    expect(q.active).toBe(true);
    q.end(0, true);
    expect(q.active).toBe(false);
    const steady = new SlowStart(1000);
    steady.end(0, false);
    expect(steady.active).toBe(false);
  });

  test('ends when the limit reaches the maximum', () => {
    const s = new SlowStart(50);
    decide(s, 40, 49, 'increase', at(0, 40));
    expect(s.active).toBe(true);
    decide(s, 49, 50, 'increase', at(1, 49));
    expect(s.active).toBe(false);
  });

  test('pauses on a sample that does not use the limit, and resumes at a validated growing one', () => {
    const s = new SlowStart(1000);
    s.pause(0);
    expect(s.active).toBe(false);
    decide(s, 20, 21, 'increase', at(1, 10)); // not at full use: stays paused
    expect(s.active).toBe(false);
    decide(s, 20, 21, 'increase', at(2, 15)); // at 75 % of 20: resumes
    expect(s.active).toBe(true);
  });
});

describe('fast regain after a collapse', () => {
  /** A slow start that validated a good level of 40, then saw the limit collapse to 10. */
  function collapsed(): SlowStart {
    const s = ended();
    decide(s, 40, 40, 'steady', at(10, 30)); // at full use (30 ≥ 75 % of 40), on time: good level 40
    decide(s, 40, 10, 'queueing', at(20, 40, 5 * BASE));
    expect(s.active).toBe(false);
    return s;
  }

  test('a validated growing sample under half the good level re-arms slow start toward it', () => {
    const s = collapsed();
    decide(s, 10, 11, 'increase', at(30, 8));
    expect(s.active).toBe(true);
    expect(s.regaining).toBe(true);
    // It stops at the good level.
    decide(s, 39, 40, 'increase', at(40, 39));
    expect(s.active).toBe(false);
  });

  test('a sample at less than 75 % of the limit, or slower than 1.25 baselines, validates nothing', () => {
    const light = collapsed();
    decide(light, 10, 11, 'increase', at(30, 7)); // 7 < 7.5
    expect(light.active).toBe(false);
    const slow = collapsed();
    decide(slow, 10, 11, 'increase', at(30, 8, 1.26 * BASE));
    expect(slow.active).toBe(false);
    const onTime = collapsed();
    decide(onTime, 10, 11, 'increase', at(30, 8, 1.25 * BASE));
    expect(onTime.active).toBe(true);
  });

  test('a steady sample under half the good level does not re-arm it (only growth shows latency is back)', () => {
    const s = collapsed();
    decide(s, 10, 10, 'steady', at(30, 10));
    expect(s.active).toBe(false);
  });

  test('an increase during slow start validates no level (it doubles faster than queueing shows)', () => {
    const s = new SlowStart(1000);
    decide(s, 40, 41, 'increase', at(10, 40)); // in the initial slow start: not a good level
    s.end(15, true);
    decide(s, 40, 10, 'queueing', at(20, 40, 5 * BASE));
    decide(s, 10, 11, 'increase', at(30, 8));
    expect(s.active).toBe(false); // no good level to regain
  });

  test('a re-armed slow start is ended by queueing, not by a steady sample', () => {
    const s = collapsed();
    decide(s, 10, 11, 'increase', at(30, 8)); // re-armed at its end, 130
    s.end(130, false);
    expect(s.active).toBe(true);
    s.end(131, true);
    expect(s.active).toBe(false);
  });

  test('a call admitted before it re-armed says nothing about the new limit', () => {
    const s = collapsed();
    decide(s, 10, 11, 'increase', at(30, 8)); // re-armed at its end, 130
    s.end(129, true);
    expect(s.active).toBe(true);
    s.end(130, true);
    expect(s.active).toBe(false);
  });

  test('it holds probes off (regaining) for at most 4 rounds at the good level', () => {
    const s = collapsed();
    decide(s, 10, 11, 'increase', at(30, 8));
    // 4 × 40 decisions, staying under the good level.
    for (let i = 1; i < 160; i++) decide(s, 20, 20, 'steady', at(30 + i, 5));
    expect(s.regaining).toBe(true);
    decide(s, 20, 20, 'steady', at(200, 5));
    expect(s.regaining).toBe(false);
  });

  test('a limit that glides down passes its good level down with it (no bounce back up)', () => {
    const s = collapsed();
    // Validated at 25 (not under half of 40): the good level follows it down.
    decide(s, 25, 25, 'steady', at(30, 20));
    decide(s, 25, 13, 'queueing', at(40, 25, 5 * BASE));
    decide(s, 13, 14, 'increase', at(50, 10));
    expect(s.active).toBe(false); // 13 is not under half of 25 (it is under half of 40)
  });
});

describe('a restart', () => {
  test('starts over toward the maximum and forgets the good level', () => {
    const s = ended();
    decide(s, 40, 40, 'steady', at(10, 30));
    s.restart(100);
    expect(s.active).toBe(true);
    expect(s.regaining).toBe(false);
    s.end(99, true); // admitted before the restart
    expect(s.active).toBe(true);
    s.end(100, false); // a steady sample ends it, as the initial one
    expect(s.active).toBe(false);
    decide(s, 10, 11, 'increase', at(200, 8)); // no good level to regain
    expect(s.active).toBe(false);
  });
});
