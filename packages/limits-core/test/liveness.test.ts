/**
 * Liveness of the adaptive limiters: a model-based search that drives a real `Limiter` on simulated
 * time through random phases of traffic (idle, one caller, bursts, flapping and spiking RTTs, drops,
 * latency that moves for good, calls that hold their permit across retries) and checks:
 * - at every grant, the units in flight stay within `max(floor(limit), probeSlots)` plus the
 *   documented late-probe bound `max(3, 8 − floor(limit))`;
 * - at every grant and release, and after every phase, the capacity is at least `probeSlots` (and at
 *   least 1 while the limit is);
 * - while callers wait, a grant comes within a bounded time (twice the longest call the phases make,
 *   plus a second): the limiter never stops admitting;
 * - a last phase at a constant latency with full demand (a downstream of 10 or 20 calls' capacity,
 *   40 callers, 30 s) brings the limit back: in its last 12 s the limiter serves at least 80 % of
 *   what a fresh limiter serves in the same phase (the 18 s before leave room for a latency that
 *   moved up for good to be relearned, after 10 s, and the limit to regrow). (Served calls, not the limit's value: on a
 *   downstream whose latency grows with its load every limit at or above its capacity serves the
 *   same, and a fresh limiter's limit may sit anywhere there.)
 *
 * Sized by run count (`LIMITS_LIVENESS_RUNS`, default 1,000 per algorithm, a quarter of that with shedding), seeded
 * (`LIMITS_LIVENESS_SEED`); `LIMITS_LIVENESS_CHECKS` runs some checks only, to look past a known
 * failure. Everything runs synchronously on a simulated clock.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { AimdLimit } from '../src/algorithms/AimdLimit.js';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';
import { WindowedLimit } from '../src/algorithms/WindowedLimit.js';
import { seededRandom } from '../src/internal/random.js';
import { CHECKS, drive, type Make, type Phase } from './support/phases.js';

const RUNS = Number(process.env.LIMITS_LIVENESS_RUNS ?? 1000);
const SEED = Number(process.env.LIMITS_LIVENESS_SEED ?? 27_001);

const phaseArb: fc.Arbitrary<Phase> = fc.oneof(
  fc.record({
    kind: fc.constant('idle' as const),
    ms: fc.integer({ min: 100, max: 30_000 }),
    callers: fc.constant(0),
    rttMs: fc.constant(0),
    dropShare: fc.constant(0),
    attempts: fc.constant(1),
  }),
  // Sized in calls (at most 3,000 a phase): one caller for long, or many for a while.
  fc
    .record({
      callers: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 30 })),
      rttMs: fc.oneof(fc.integer({ min: 10, max: 100 }), fc.integer({ min: 100, max: 1_000 })),
    })
    .chain(({ callers, rttMs }) =>
      fc.record({
        kind: fc.constant('steady' as const),
        ms: fc
          .integer({ min: 5, max: Math.floor(3_000 / callers) })
          .map((rounds) => rounds * rttMs),
        callers: fc.constant(callers),
        rttMs: fc.constant(rttMs),
        dropShare: fc.constant(0),
        attempts: fc.constant(1),
      }),
    ),
  fc.record({
    kind: fc.constant('flap' as const),
    ms: fc.integer({ min: 500, max: 10_000 }),
    callers: fc.integer({ min: 1, max: 30 }),
    rttMs: fc.integer({ min: 100, max: 1_000 }),
    dropShare: fc.constant(0),
    attempts: fc.constant(1),
  }),
  fc.record({
    kind: fc.constant('spiky' as const),
    ms: fc.integer({ min: 500, max: 10_000 }),
    callers: fc.integer({ min: 1, max: 30 }),
    rttMs: fc.constant(1_000),
    dropShare: fc.constant(0),
    attempts: fc.constant(1),
  }),
  fc.record({
    kind: fc.constant('drops' as const),
    ms: fc.integer({ min: 500, max: 10_000 }),
    callers: fc.integer({ min: 1, max: 30 }),
    rttMs: fc.integer({ min: 10, max: 200 }),
    dropShare: fc.double({ min: 0.05, max: 1, noNaN: true }),
    attempts: fc.constant(1),
  }),
  fc.record({
    kind: fc.constant('hold' as const),
    ms: fc.integer({ min: 500, max: 10_000 }),
    callers: fc.integer({ min: 1, max: 30 }),
    rttMs: fc.integer({ min: 10, max: 300 }),
    dropShare: fc.constant(0),
    attempts: fc.integer({ min: 2, max: 6 }),
  }),
);

/**
 * The regrowth phase: a downstream of constant no-load latency and a capacity of 10 or 20 calls
 * (beyond, latency grows with the calls on it), and more callers than that capacity.
 */
const finalArb: fc.Arbitrary<Phase> = fc.record({
  kind: fc.constant('steady' as const),
  ms: fc.constant(30_000),
  callers: fc.constant(40),
  rttMs: fc.constant(100),
  dropShare: fc.constant(0),
  attempts: fc.constant(1),
  capacity: fc.constantFrom(10, 20),
});

const ALGORITHMS: Array<[string, Make]> = [
  ['Vegas', (seed) => new VegasLimit({ random: seededRandom(seed) })],
  ['Gradient', (seed) => new GradientLimit({ random: seededRandom(seed) })],
  ['AIMD', () => new AimdLimit()],
  // A window's aggregate RTT blurs a probe's dip (its samples read the load before it), so the
  // windowed algorithm here is the one that does not probe.
  ['Windowed (AIMD, p90)', () => new WindowedLimit(new AimdLimit(), { aggregate: 0.9 })],
];

// The same search with importance-based shedding: four criticalities, a cohort per caller, callers
// refused as `shed` trying again as retries. Shedding must neither stop admission nor keep the limit
// from regrowing (a progress gap counts callers backing off as waiting). A quarter of the runs: each
// costs about 20 times as much (every caller refused tries again every 50 ms).
const SHEDDING: Array<[string, Make, boolean]> = [
  ['Vegas with shedding', ALGORITHMS[0]?.[1] as Make, true],
  ['Gradient with shedding', ALGORITHMS[1]?.[1] as Make, true],
];

describe.each(
  [...ALGORITHMS.map(([name, make]) => [name, make, false] as const), ...SHEDDING].map(
    ([name, make, shed], i) => ({
      name,
      make,
      shed,
      offset: i,
      runs: shed ? Math.ceil(RUNS / 4) : RUNS,
    }),
  ),
)('$name on a real Limiter through random phases', ({ make, shed, offset, runs }) => {
  const fresh = new Map<string, number>();
  const freshServed = (seed: number, probeSlots: number, last: Phase): number => {
    const key = `${seed}/${probeSlots}/${last.capacity}`;
    let v = fresh.get(key);
    if (v === undefined) {
      v = drive(make, seed, probeSlots, [last], undefined, shed).served;
      fresh.set(key, v);
    }
    return v;
  };

  test(`never over-grants, never stops admitting, and regrows (${runs} runs)`, () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 3 }),
        fc.array(phaseArb, { minLength: 1, maxLength: 5 }),
        finalArb,
        (seed, probeSlots, phases, last) => {
          const out = drive(make, seed, probeSlots, [...phases, last], undefined, shed);
          expect(out.violations).toEqual([]);
          const reference = freshServed(seed, probeSlots, last);
          if (CHECKS.has('regrowth')) expect(out.served).toBeGreaterThanOrEqual(0.8 * reference);
        },
      ),
      { seed: SEED + offset, numRuns: runs },
    );
  }, 600_000);
});
