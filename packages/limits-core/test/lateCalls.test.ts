import { describe, expect, test } from 'vitest';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import type { LimitAlgorithm, Sample } from '../src/algorithms/LimitAlgorithm.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';
import { WindowedLimit } from '../src/algorithms/WindowedLimit.js';
import type { LimitEvent } from '../src/limiter/events.js';
import { LateCalls } from '../src/limiter/LateCalls.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { FakeClock } from './support/FakeClock.js';

// The early congestion signal: a call still in flight past the algorithm's `lateAfterMs` is
// reported once through `onLate` from the ticks of the limiter's stall detector.

/** An algorithm that records what the limiter tells it (late after 100 ms). */
class Recorder implements LimitAlgorithm {
  limit = 10;
  lateAfterMs = 100;
  readonly samples: Sample[] = [];
  readonly late: Array<[number, number]> = [];
  update(sample: Sample): number {
    this.samples.push(sample);
    return this.limit;
  }
  onLate(count: number, inflight: number): void {
    this.late.push([count, inflight]);
    this.limit = Math.max(1, this.limit - count);
  }
}

describe('LateCalls (the per-tick count of timed calls in flight)', () => {
  test('a tick reports the calls of buckets that ended before now − lateAfterMs, each once', () => {
    const late = new LateCalls();
    late.tick(0, 100); // opens the bucket [0, 25)
    late.started(1);
    late.started(2);
    late.tick(25, 100); // [25, 50)
    late.started(30);
    late.tick(50, 100);
    late.tick(75, 100);
    late.tick(100, 100);
    expect(late.tick(125, 100)).toBe(2); // [0, 25) ended at 25 ≤ 125 − 100
    expect(late.tick(150, 100)).toBe(1); // [25, 50)
    expect(late.tick(175, 100)).toBe(0);
  });

  test('a released call leaves its bucket; a reported one says so when it is released', () => {
    const late = new LateCalls();
    late.tick(0, 100);
    late.started(1);
    late.started(2);
    expect(late.released(2)).toBe(false);
    late.tick(25, 100);
    late.tick(125, 100);
    expect(late.released(1)).toBe(true); // reported at 125: no longer tracked
    late.started(130);
    expect(late.released(130)).toBe(false);
  });

  test('a stall excuses every call in flight, and nothing is reported with lateAfterMs Infinity', () => {
    const late = new LateCalls();
    late.tick(0, Infinity);
    late.started(1);
    for (let t = 25; t < 1000; t += 25) expect(late.tick(t, Infinity)).toBe(0);
    late.excuse(1000);
    late.started(1001);
    expect(late.released(1)).toBe(true);
    expect(late.tick(1025, 100)).toBe(0);
    expect(late.tick(1100, 100)).toBe(0);
    expect(late.tick(1125, 100)).toBe(1); // the call started at 1001, in the bucket [1001, 1025)
  });
});

describe('a Limiter reports late calls to an algorithm with onLate', () => {
  test('calls in flight past lateAfterMs are reported once each from the stall ticks, with the in-flight count; a late success is fed as its latency, a late drop not again', async () => {
    const clock = new FakeClock();
    const alg = new Recorder();
    const limiter = new Limiter({ algorithm: alg, clock, stallThresholdMs: 50 });
    const held: Permit[] = [];
    for (let i = 0; i < 3; i++) held.push(limiter.tryAcquire() as Permit);
    await clock.advance(50);
    const fast = limiter.tryAcquire() as Permit;
    await clock.advance(10);
    fast.success(); // 10 ms: fed as a sample
    expect(alg.late).toEqual([]);
    await clock.advance(100); // t = 160: the 3 calls of t = 0 are late (reported within a tick)
    expect(alg.late).toEqual([[3, 3]]);
    expect(limiter.limit).toBe(7);
    await clock.advance(500);
    expect(alg.late).toEqual([[3, 3]]); // once each
    (held[0] as Permit).dropped(); // counted as a drop when it was reported late: not again
    // Old news: the fast call, started after it, came back on time (the downstream recovered since).
    (held[1] as Permit).success();
    (held[2] as Permit).ignore();
    expect(alg.samples.map((s) => [s.rtt, s.dropped])).toEqual([[10, false]]);
    // A late call with no on-time call after its start teaches its latency (a latency that moved
    // for good is learned this way).
    const slow = limiter.tryAcquire() as Permit;
    await clock.advance(300);
    expect(alg.late.at(-1)).toEqual([1, 1]);
    slow.success();
    expect(alg.samples.map((s) => [s.rtt, s.dropped])).toEqual([
      [10, false],
      [300, false],
    ]);
  });

  test('the limit event names the late calls (reason late) for Vegas', async () => {
    const clock = new FakeClock();
    const vegas = new VegasLimit({
      initialLimit: 20,
      probeMultiplier: 1000,
      recheckMultiplier: 1000,
    });
    const limiter = new Limiter({ algorithm: vegas, clock, stallThresholdMs: 50 });
    const events: LimitEvent[] = [];
    limiter.on('limit', (e) => events.push(e));
    // A baseline of 20 ms: late after 80 ms.
    for (let i = 0; i < 10; i++) {
      const p = limiter.tryAcquire() as Permit;
      await clock.advance(20);
      p.success();
    }
    expect(vegas.lateAfterMs).toBe(80);
    events.length = 0;
    const held = Array.from({ length: 10 }, () => limiter.tryAcquire() as Permit);
    await clock.advance(150);
    expect(events.length).toBeGreaterThan(0);
    expect(events[0]?.decision?.reason).toBe('late');
    expect(events[0]?.sample.dropped).toBe(true);
    expect(limiter.limit).toBeLessThan(20);
    for (const p of held) p.success();
  });

  test('no late report without a stall detector (stallThresholdMs Infinity) or for an event-loop stall', async () => {
    const clock = new FakeClock();
    const alg = new Recorder();
    const off = new Limiter({ algorithm: alg, clock, stallThresholdMs: Infinity });
    const p = off.tryAcquire() as Permit;
    await clock.advance(1000);
    expect(alg.late).toEqual([]);
    p.success();

    const alg2 = new Recorder();
    const on = new Limiter({ algorithm: alg2, clock, stallThresholdMs: 50 });
    const q = on.tryAcquire() as Permit;
    clock.jump(400); // the loop was blocked: the call overlapped a stall
    (on.tryAcquire() as Permit).success(); // a call that reads the clock during the block
    await clock.advance(25);
    await clock.advance(500);
    expect(alg2.late).toEqual([]);
    q.success();
  });

  test('an onLate that throws is reported on the error event and the limit stays', async () => {
    const clock = new FakeClock();
    const alg = new Recorder();
    alg.onLate = () => {
      throw new Error('plug-in bug');
    };
    const limiter = new Limiter({ algorithm: alg, clock, stallThresholdMs: 50 });
    const errors: unknown[] = [];
    limiter.on('error', (e) => errors.push(e));
    const p = limiter.tryAcquire() as Permit;
    await clock.advance(200);
    expect((errors[0] as Error).message).toBe('plug-in bug');
    expect(limiter.limit).toBe(10);
    p.success();
  });
});

describe('the limiter checks the late-call members of a limit algorithm', () => {
  test('an onLate that is not a function or a lateAfterMs that is not a number is a TypeError naming it', () => {
    const base = { limit: 5, update: () => 5 };
    expect(() => new Limiter({ algorithm: { ...base, onLate: 1 } as never })).toThrow(
      /option "algorithm.onLate" must be a function or undefined, got 1/,
    );
    expect(() => new Limiter({ algorithm: { ...base, lateAfterMs: '9' } as never })).toThrow(
      /option "algorithm.lateAfterMs" must be a number or undefined, got "9"/,
    );
  });
});

describe('WindowedLimit passes late calls to its delegate', () => {
  test("lateAfterMs is the delegate's and onLate goes to it at once", () => {
    const inner = new Recorder();
    const windowed = new WindowedLimit(inner);
    expect(windowed.lateAfterMs).toBe(100);
    windowed.onLate(2, 7);
    expect(inner.late).toEqual([[2, 7]]);
    expect(windowed.limit).toBe(8);
    expect(new WindowedLimit({ limit: 3, update: () => 3 }).lateAfterMs).toBeUndefined();
  });
});

describe('Vegas and Gradient count a late call as a dropped sample (ProbingLimit.onLate)', () => {
  const noProbe = { probeMultiplier: 1000, recheckMultiplier: 1000 };

  test('a call is late after 4 no-load RTTs (never before the first baseline)', () => {
    const vegas = new VegasLimit(noProbe);
    expect(vegas.lateAfterMs).toBe(Infinity);
    vegas.update({ startTime: 0, rtt: 30, inflight: 20, dropped: false });
    expect(vegas.lateAfterMs).toBe(120);
  });

  test('each late call is a drop by the rule, with reason late', () => {
    const late = new VegasLimit({ initialLimit: 50, ...noProbe });
    const dropped = new VegasLimit({ initialLimit: 50, ...noProbe });
    late.onLate(3, 40);
    for (let i = 0; i < 3; i++)
      dropped.update({ startTime: i, rtt: 0, inflight: 40, dropped: true });
    expect(late.limit).toBe(47); // 50 − 3 × L10 (1)
    expect(late.limit).toBe(dropped.limit);
    expect(late.lastDecision?.reason).toBe('late');
  });

  test('more late calls than the limit count as one round of drops', () => {
    // Gradient with a slow smoothing: each drop closes 0.1 % of the gap to its target, so the number
    // of drops shows.
    const make = () => new GradientLimit({ initialLimit: 100, smoothing: 0.001, ...noProbe });
    const many = make();
    many.onLate(10_000, 100);
    const round = make();
    round.onLate(100, 100);
    const fewer = make();
    fewer.onLate(99, 100);
    expect(many.limit).toBe(round.limit);
    expect(fewer.limit).toBeGreaterThan(round.limit);
  });

  test('a count under 1, or an in-flight count that is not a number ≥ 0, does nothing', () => {
    const vegas = new VegasLimit({ initialLimit: 50, ...noProbe });
    vegas.onLate(0, 10);
    vegas.onLate(0.5, 10);
    vegas.onLate(Number.NaN, 10);
    vegas.onLate(3, Number.NaN);
    vegas.onLate(3, -1);
    vegas.onLate(3, Infinity);
    expect(vegas.limit).toBe(50);
    expect(vegas.lastDecision).toBeUndefined();
  });
});

describe('late calls and the probe dips (ProbingLimit.onLate)', () => {
  test('late calls that take the limit down to a running dip call it off at once, and put the next a full spacing away', () => {
    const run = () => {
      // The spacings drawn: the first probe's, the next one's (both 0: 1 and 15 rounds), then 0
      // for the call-off and 0.99 for the spacing after the late calls (0.995 × 30 rounds).
      const draws = [0, 0, 0, 0.99];
      const vegas = new VegasLimit({ maxLimit: 40, random: () => draws.shift() ?? 0 });
      let t = 0;
      const next = () => {
        vegas.update({ startTime: t, rtt: 100, inflight: Math.floor(vegas.limit), dropped: false });
        t += 10;
        return vegas.lastDecision?.reason;
      };
      const until = (reason: string) => {
        for (let i = 0; i < 10_000; i++) if (next() === reason) return;
        throw new Error(`no ${reason}`);
      };
      until('probe_end'); // the first probe
      until('probe'); // the next
      // A normal dip, to 30 of 40; ten late calls take the limit to it (one unit each).
      expect(vegas.limit).toBe(30);
      vegas.onLate(10, 30);
      // Rounds (samples ÷ limit) to the next dip.
      let rounds = 0;
      for (let i = 0; i < 10_000; i++) {
        rounds += 1 / Math.max(1, vegas.limit);
        if (next() === 'probe') return rounds;
      }
      throw new Error('no dip');
    };
    // Called off when the late calls came (not at the next sample, a draw later): 0.995 × 30.
    const rounds = run();
    expect(rounds).toBeGreaterThan(29.8);
    expect(rounds).toBeLessThan(29.9);
  });
});
