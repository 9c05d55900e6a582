import { type Sample, VegasLimit } from 'limits-core';
import { describe, expect, it } from 'vitest';
import { type CallRecord, simulate } from '../src/sim/simulate.js';
import type { Arrival, Downstream } from '../src/traffic.js';

const constant = (serviceMs: number): Downstream => ({
  call: () => ({ serviceMs, outcome: 'success' }),
});
const atZero = (n: number): Arrival[] => Array.from({ length: n }, () => ({ atMs: 0 }));

describe('simulate on hand-checkable runs', () => {
  it('refuses the third of three simultaneous calls under a fixed limit of 2 without a queue', () => {
    const calls: CallRecord[] = [];
    const r = simulate({
      limiter: { limit: 2 },
      downstream: constant(100),
      arrivals: atZero(3),
      onCall: (c) => calls.push(c),
    });
    expect(calls).toEqual([
      { arrivalMs: 0, startMs: Number.NaN, endMs: 0, outcome: 'at_limit', inflight: 0 },
      { arrivalMs: 0, startMs: 0, endMs: 100, outcome: 'success', inflight: 1 },
      { arrivalMs: 0, startMs: 0, endMs: 100, outcome: 'success', inflight: 2 },
    ]);
    expect(r.arrivals).toBe(3);
    expect(r.admitted).toBe(2);
    expect(r.refused).toEqual({ at_limit: 1 });
    expect(r.refusedTotal).toBe(1);
    expect(r.durationMs).toBe(100);
    expect(r.inflight).toEqual({ peak: 2, mean: 2 });
    expect(r.latencyMs.mean).toBe(100);
    expect(r.latencyMs.max).toBe(100);
    expect(r.latencyMs.p50).toBe(100);
    expect(r.goodputPerS).toBe(20);
  });

  it('queues the third call with maxQueued 1 and starts it when the first ends', () => {
    const calls: CallRecord[] = [];
    const r = simulate({
      limiter: { limit: 2, maxQueued: 1 },
      downstream: constant(100),
      arrivals: atZero(3),
      onCall: (c) => calls.push(c),
    });
    expect(calls.map((c) => [c.startMs, c.endMs, c.inflight])).toEqual([
      [0, 100, 1],
      [0, 100, 2],
      [100, 200, 2],
    ]);
    expect(r.refusedTotal).toBe(0);
    expect(r.durationMs).toBe(200);
    // Two calls for 100 ms, then one for 100 ms: 1.5 on average over 200 ms.
    expect(r.inflight).toEqual({ peak: 2, mean: 1.5 });
    expect(r.latencyMs.mean).toBeCloseTo(400 / 3, 9);
    expect(r.latencyMs.max).toBe(200);
    expect(r.latencyMs.p50).toBe(100);
    expect(r.latencyMs.p99).toBe(200);
  });

  it('expires a queued call after maxQueueWaitMs on the virtual clock', () => {
    const calls: CallRecord[] = [];
    const r = simulate({
      limiter: { limit: 2, maxQueued: 1, maxQueueWaitMs: 30 },
      downstream: constant(100),
      arrivals: atZero(3),
      onCall: (c) => calls.push(c),
    });
    expect(r.refused).toEqual({ expired: 1 });
    expect(calls[0]).toMatchObject({ outcome: 'expired', endMs: 30 });
  });

  it('counts a call that ends after its budget as wasted work, and never runs it with deadline admission', () => {
    const arrivals: Arrival[] = [{ atMs: 0 }, { atMs: 0 }, { atMs: 0, budgetMs: 150 }];
    const wasted = simulate({
      limiter: { limit: 2, maxQueued: 1, initialServiceMs: 100 },
      downstream: constant(100),
      arrivals,
    });
    expect(wasted.wasted).toEqual({ calls: 1, serviceMs: 100 });
    expect(wasted.goodputPerS).toBe(15);
    expect(wasted.goodputInBudgetPerS).toBe(10);
    const admitted = simulate({
      limiter: { limit: 2, maxQueued: 1, initialServiceMs: 100 },
      downstream: constant(100),
      arrivals,
      deadlineAdmission: true,
    });
    expect(admitted.wasted.calls).toBe(0);
    // Queued behind two 100 ms calls, it leaves the queue when its 150 ms budget runs out.
    expect(admitted.refused).toEqual({ expired: 1 });
  });

  it('releases overloads as dropped and failures as failure, which an algorithm sees', () => {
    const seen: Sample[] = [];
    const algorithm = {
      limit: 5,
      update(s: Sample) {
        seen.push(s);
        return 5;
      },
    };
    let n = 0;
    const r = simulate({
      limiter: { algorithm },
      downstream: {
        call: () => ({
          serviceMs: 10,
          outcome: (['success', 'overload', 'failure'] as const)[n++ % 3],
        }),
      },
      arrivals: [{ atMs: 0 }, { atMs: 1 }, { atMs: 2 }],
      timeline: false,
    });
    expect(r.outcomes).toEqual({ success: 1, failure: 1, overload: 1 });
    expect(seen.map((s) => [s.startTime, s.rtt, s.dropped])).toEqual([
      [0, 10, false],
      [1, 10, true],
    ]);
  });

  it('runs a closed loop: each client sends again when its call ends, until the span passes', () => {
    const r = simulate({
      limiter: { limit: 10 },
      downstream: constant(100),
      arrivals: (function* () {
        for (;;) yield { atMs: 0 };
      })(),
      closedLoop: { clients: 3, thinkMs: 50 },
      durationMs: 1_000,
      timeline: false,
    });
    // Sends at 0, 150, 300, ..., 900 (7 per client); the last ones end at 1,000.
    expect(r.arrivals).toBe(21);
    expect(r.goodputPerS).toBe(21);
    expect(r.inflight.peak).toBe(3);
  });

  it('gives the same result for the same seed and a different one for another seed', () => {
    const run = (seed: number) =>
      simulate({
        limiter: ({ random }) => ({ algorithm: new VegasLimit({ maxLimit: 50, random }) }),
        downstream: {
          call: (_t, n, random) => ({
            serviceMs: 20 * Math.max(1, n / 10) * (0.5 + random()),
            outcome: 'success',
          }),
        },
        arrivals: Array.from({ length: 2_000 }, (_, i) => ({ atMs: i * 2 })),
        seed,
      });
    expect(JSON.stringify(run(7))).toBe(JSON.stringify(run(7)));
    expect(JSON.stringify(run(8))).not.toBe(JSON.stringify(run(7)));
  });

  it('refuses arrivals out of order and a downstream answer that is not a finite time', () => {
    expect(() =>
      simulate({
        limiter: { limit: 1 },
        downstream: constant(1),
        arrivals: [{ atMs: 5 }, { atMs: 4 }],
      }),
    ).toThrow(/arrival 1 has atMs 4: arrivals must be sorted/);
    expect(() =>
      simulate({
        limiter: { limit: 1 },
        downstream: constant(Number.NaN),
        arrivals: [{ atMs: 0 }],
      }),
    ).toThrow(/serviceMs NaN/);
    expect(() =>
      simulate({ limiter: { limit: 1 }, downstream: constant(1), arrivals: [], seed: 1.5 }),
    ).toThrow(/option "seed" must be an integer/);
  });
});
