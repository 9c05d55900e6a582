/**
 * The adaptive limiter stays a limit and stays live, in the traffic shapes that once broke it: a
 * downstream that takes at most 5 calls and defers or drops the rest while callers retry inside their
 * permit; a flapping downstream; a quiet spell before demand returns; a latency that moved up by less
 * than a probe notices; calls that hang with AIMD. Each case runs a real `Limiter` on simulated time
 * (test/support/traffic.mjs, test/support/phases.ts).
 */
import { describe, expect, test } from 'vitest';
import { AimdLimit } from '../src/algorithms/AimdLimit.js';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import type { LimitAlgorithm } from '../src/algorithms/LimitAlgorithm.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';
import { seededRandom } from '../src/internal/random.js';
import { LateProbes, maxLateProbes } from '../src/limiter/LateProbes.js';
import { Limiter } from '../src/limiter/Limiter.js';
import { drive, type Phase } from './support/phases.js';
import { Downstream, ReferenceLimit, SHAPES, SimClock, Traffic } from './support/traffic.mjs';

/**
 * `jobs` at once through `algorithm` to a downstream of `shape`, retrying inside the permit, for at
 * most `forMs` of simulated time.
 */
function burst(
  algorithm: LimitAlgorithm | number,
  shape: keyof typeof SHAPES,
  jobs = 500,
  forMs = 3_600_000,
) {
  const clock = new SimClock();
  const limiter = new Limiter({
    ...(typeof algorithm === 'number' ? { limit: algorithm } : { algorithm }),
    clock,
    maxQueued: Infinity,
  });
  const downstream = new Downstream(SHAPES[shape], clock, seededRandom(1));
  const traffic = new Traffic({
    limiter,
    downstream,
    clock,
    retries: 'inside',
    bound: maxLateProbes,
  });
  traffic.burst(jobs);
  const done = traffic.runUntilDone(forMs);
  return { traffic, done };
}

const steady = (ms: number, callers: number, rttMs: number, capacity?: number): Phase => ({
  kind: 'steady',
  ms,
  callers,
  rttMs,
  dropShare: 0,
  attempts: 1,
  ...(capacity === undefined ? {} : { capacity }),
});

describe('late calls keep counting until they end', () => {
  test.each([
    ['Vegas', 'capDrop'],
    ['Vegas', 'capDefer'],
    ['Gradient', 'capDrop'],
    ['Gradient', 'capDefer'],
  ] as const)(
    '%s, a downstream that takes 5 at once (%s), 500 jobs retrying inside their permits: no grant leaves more than max(3, 8 − limit) units beyond the limit',
    (name, shape) => {
      const algorithm = name === 'Vegas' ? new VegasLimit() : new GradientLimit();
      const { traffic, done } = burst(algorithm, shape);
      expect(done).toBe(true);
      expect(
        traffic.overBound,
        `${traffic.beyond} beyond a limit of ${traffic.beyondAtLimit}`,
      ).toBe(0);
    },
  );

  test.each(['capDrop', 'capDefer'] as const)(
    'Vegas, the same 500 jobs (%s): the batch takes at most 1.6× as long as through the reference controller (start at 1, +1 per round trip, ×0.9 when the RTT rises)',
    (shape) => {
      const vegas = burst(new VegasLimit(), shape);
      const reference = burst(new ReferenceLimit(), shape);
      expect(vegas.done && reference.done).toBe(true);
      // The cap never queues, so latency never rises: deferrals retried inside the permit are
      // invisible to the limiter, and drops show only as late calls. bench/RESULTS.md ("Adaptive
      // algorithms across downstream shapes") gives the ratio and why it is not nearer 1.
      expect(vegas.traffic.lastDoneAt).toBeLessThanOrEqual(1.6 * reference.traffic.lastDoneAt);
    },
  );

  test('the capacity counts at most maxLateProbes(limit) extra units, however many late calls were written off', () => {
    const probes = new LateProbes();
    // A slowdown's end writes off 90 late calls still out, under a limit of 93.
    probes.writeOff(90);
    expect(probes.capacity(93, 1)).toBe(93 + maxLateProbes(93));
    // The limit shrinks to 2: the extra units shrink with its bound.
    expect(probes.capacity(2, 1)).toBe(2 + maxLateProbes(2));
  });
});

describe('capacity never falls below probeSlots', () => {
  test('units held back for pacing never take the last unit when the limit shrinks under them', () => {
    const probes = new LateProbes();
    probes.extra = 2;
    probes.held = 9; // pacing held back units of a limit of 8 and of the probes
    expect(probes.capacity(3, 0)).toBe(1);
    expect(probes.capacity(1, 2)).toBe(2);
    expect(probes.held).toBeLessThanOrEqual(3);
  });

  test.each([
    ['Vegas', (seed: number) => new VegasLimit({ random: seededRandom(seed) })],
    ['Gradient', (seed: number) => new GradientLimit({ random: seededRandom(seed) })],
  ] as const)(
    '%s after a flapping downstream (calls alternating 1 ms and 100–270 ms), probeSlots 2: capacity stays at 2 or more at every grant and release, and callers keep being served',
    (_name, make) => {
      for (const [callers, rttMs] of [
        [12, 100],
        [8, 267],
      ] as const) {
        const out = drive(make, 1, 2, [
          { kind: 'flap', ms: 500, callers, rttMs, dropShare: 0, attempts: 1 },
          steady(30_000, 40, 100, 10),
        ]);
        expect(out.violations).toEqual([]);
      }
    },
  );
});

describe('the limit regrows after a quiet spell', () => {
  test.each([
    ['Vegas', (seed: number) => new VegasLimit({ random: seededRandom(seed) })],
    ['Gradient', (seed: number) => new GradientLimit({ random: seededRandom(seed) })],
  ] as const)(
    '%s: 5 s of 20 callers at 10 ms, 30 s of one caller, then 30 callers: the limit grows back past the callers',
    (_name, make) => {
      const out = drive(make, 1, 1, [
        steady(5_000, 20, 10),
        steady(30_000, 1, 10),
        steady(20_000, 30, 10),
      ]);
      expect(out.violations).toEqual([]);
      expect(out.settled).toBeGreaterThanOrEqual(30);
    },
  );

  test('a limit of 1.5 used by its one call is at full use: it grows', () => {
    const vegas = new VegasLimit({ initialLimit: 20 });
    let t = 0;
    const feed = (inflight: number): void => {
      t += 10;
      vegas.update({ startTime: t, rtt: 10, inflight, dropped: false });
    };
    // Twenty callers, then one: the limit decays toward 1.5 × 1 (approached from above), and each
    // time it falls under 2 its one call uses all it lets through.
    for (let i = 0; i < 400; i++) feed(20);
    for (let i = 0; i < 5_000; i++) feed(1);
    // Thirty callers again: each sample takes every unit the limit lets through.
    for (let i = 0; i < 50; i++) feed(Math.floor(vegas.limit));
    expect(vegas.limit).toBeGreaterThan(4);
  });
});

describe('a latency that moved up is relearned even when the dip cannot go under the probe slots', () => {
  test.each([
    ['Vegas', (seed: number) => new VegasLimit({ random: seededRandom(seed) })],
    ['Gradient', (seed: number) => new GradientLimit({ random: seededRandom(seed) })],
  ] as const)(
    '%s, probeSlots 2: one caller at 77 ms for a minute, then 40 callers at 100 ms on a downstream of 10: served within 20 % of a fresh limiter',
    (_name, make) => {
      const last = steady(30_000, 40, 100, 10);
      const out = drive(make, 1, 2, [steady(60_000, 1, 77), last]);
      const fresh = drive(make, 1, 2, [last]);
      expect(out.violations).toEqual([]);
      expect(out.served).toBeGreaterThanOrEqual(0.8 * fresh.served);
    },
  );
});

describe('AIMD hears of calls that hang', () => {
  test('a call in flight past the retransmission timeout learned from the samples is a drop', () => {
    const aimd = new AimdLimit({ initialLimit: 20 });
    expect(aimd.lateAfterMs).toBe(Infinity);
    for (let i = 0; i < 50; i++)
      aimd.update({ startTime: i * 100, rtt: 100, inflight: 20, dropped: false });
    // srtt 100 ms, rttvar near 0: late past twice the smoothed RTT.
    expect(aimd.lateAfterMs).toBeGreaterThanOrEqual(200);
    expect(aimd.lateAfterMs).toBeLessThan(260);
    const before = aimd.limit;
    aimd.onLate(3, 20);
    expect(aimd.limit).toBeCloseTo(before * 0.9, 9);
    expect(aimd.lastDecision?.reason).toBe('late');
    // With timeoutMs, that is the age.
    expect(new AimdLimit({ timeoutMs: 750 }).lateAfterMs).toBe(750);
  });

  test('a sample slower than the learned timeout is a drop (once per round)', () => {
    const aimd = new AimdLimit({ initialLimit: 20, slowStart: false });
    for (let i = 0; i < 50; i++)
      aimd.update({ startTime: i * 100, rtt: 100, inflight: 20, dropped: false });
    const before = aimd.limit;
    aimd.update({ startTime: 6_000, rtt: 5_000, inflight: 20, dropped: false });
    expect(aimd.lastDecision?.reason).toBe('drop');
    expect(aimd.limit).toBeCloseTo(before * 0.9, 9);
  });

  test('1,000 jobs at once on a gentle knee (×1.1 per call past 10), retrying inside their permits: the batch finishes within 2 minutes', () => {
    const { traffic, done } = burst(new AimdLimit(), 'knee', 1_000, 120_000);
    expect(done, `${traffic.done} of 1,000 done`).toBe(true);
    expect(traffic.overBound).toBe(0);
  });
});
