import { describe, expect, test } from 'vitest';
import type { LimitAlgorithm, Sample } from '../src/limit/LimitAlgorithm.js';
import { VegasLimit } from '../src/limit/VegasLimit.js';
import {
  LATE_PROBE_SPACING_MS,
  LATE_PROBES_FOR_MS,
  MAX_LATE_PROBES,
} from '../src/limiter/LateProbes.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { FakeClock } from './support/FakeClock.js';

// Issue 12, S1's recovery: while every call in flight is late and the limiter is full, one more
// call goes through, staggered (LateProbes), so one of them sees the downstream recover soon.

/** A limit of 1 that late calls never move (late after 100 ms). */
class Floor implements LimitAlgorithm {
  limit = 1;
  lateAfterMs = 100;
  update(_sample: Sample): number {
    return this.limit;
  }
  onLate(): void {}
}

describe('late probes', () => {
  test('while every call in flight is late, one more is let through per spacing, at most MAX_LATE_PROBES; after an on-time success they go as the late calls end', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: new Floor(), clock, stallThresholdMs: 50 });
    const held: Permit[] = [limiter.tryAcquire() as Permit];
    expect(limiter.tryAcquire()).toBeUndefined();
    await clock.advance(150); // the first call is late: one probe beyond the capacity
    expect(limiter.capacity).toBe(2);
    held.push(limiter.tryAcquire() as Permit);
    expect(limiter.tryAcquire()).toBeUndefined();
    // The next only when the second is late too and the spacing has passed.
    await clock.advance(LATE_PROBE_SPACING_MS - 200);
    expect(limiter.capacity).toBe(2);
    await clock.advance(250);
    expect(limiter.capacity).toBe(3);
    for (let i = 0; i < 3; i++) {
      const p = limiter.tryAcquire();
      if (p !== undefined) held.push(p);
      await clock.advance(LATE_PROBE_SPACING_MS);
    }
    expect(limiter.capacity).toBe(1 + MAX_LATE_PROBES);
    expect(limiter.inflight).toBe(1 + MAX_LATE_PROBES);
    // A late call that ends leaves room for the next probe (the slot is refilled, still staggered).
    (held.shift() as Permit).success();
    expect(limiter.capacity).toBe(1 + MAX_LATE_PROBES);
    const fresh = limiter.tryAcquire() as Permit;
    await clock.advance(10);
    fresh.success(); // back on time: no new probe; each late call that ends takes its unit along
    expect(limiter.capacity).toBe(1 + MAX_LATE_PROBES);
    await clock.advance(5 * LATE_PROBE_SPACING_MS);
    expect(limiter.capacity).toBe(1 + MAX_LATE_PROBES);
    for (let i = 1; i <= held.length; i++) {
      (held[i - 1] as Permit).success();
      expect(limiter.capacity).toBe(1 + MAX_LATE_PROBES - i);
    }
    expect(limiter.inflight).toBe(0);
  });

  test('no probe while the limiter has free capacity, or while some call in flight is not late', async () => {
    const clock = new FakeClock();
    const alg = new Floor();
    alg.limit = 3;
    const limiter = new Limiter({ limit: alg, clock, stallThresholdMs: 50 });
    const a = limiter.tryAcquire() as Permit;
    await clock.advance(500); // late, but 2 units are free
    expect(limiter.capacity).toBe(3);
    const b = limiter.tryAcquire() as Permit;
    const c = limiter.tryAcquire() as Permit;
    await clock.advance(50); // full, but b and c are not late
    expect(limiter.capacity).toBe(3);
    for (const p of [a, b, c]) p.success();
  });

  test('a latency spike on a Vegas limiter: few calls on the sick downstream, and a fast answer within about a second of its recovery', async () => {
    // A downstream at 50 ms that takes 3,000 ms for calls started in [2 s, 8.1 s); a call every 10 ms.
    // (With one call at a time on it, the one started at 8 s would hold the only slot until 11 s.)
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: new VegasLimit(), clock });
    const END = 8_100;
    const spike = (t: number) => t >= 2_000 && t < END;
    const downstream = () =>
      new Promise<string>((resolve) => {
        const start = clock.now();
        clock.setTimeout(() => resolve(spike(start) ? 'slow' : 'fast'), spike(start) ? 3_000 : 50);
      });
    let firstFastAfter = Number.NaN;
    let maxLateInflight = 0;
    const runs: Promise<unknown>[] = [];
    for (let t = 0; t < 12_000; t += 10) {
      const call = limiter.run(downstream).then(
        (answer) => {
          if (answer === 'fast' && t >= END && Number.isNaN(firstFastAfter))
            firstFastAfter = clock.now() - END;
        },
        () => {},
      );
      runs.push(call);
      if (t >= 6_000 && t < END) maxLateInflight = Math.max(maxLateInflight, limiter.inflight);
      await clock.advance(10);
    }
    await clock.advance(5_000);
    await Promise.all(runs);
    // Late in the spike: the floor (1) plus at most MAX_LATE_PROBES staggered probes.
    expect(maxLateInflight).toBeLessThanOrEqual(1 + MAX_LATE_PROBES);
    // The first fast answer after the spike: within about a second (one probe slot alone: up to 3 s).
    expect(firstFastAfter).toBeLessThanOrEqual(LATE_PROBE_SPACING_MS + 250);
  });
});

describe('late probes in a slowdown that lasts', () => {
  test('after LATE_PROBES_FOR_MS no new probe starts and the extra units go as the late calls end', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: new Floor(), clock, stallThresholdMs: 50 });
    const held: Permit[] = [limiter.tryAcquire() as Permit];
    for (let t = 0; t < LATE_PROBES_FOR_MS + 2 * LATE_PROBE_SPACING_MS; t += 50) {
      const p = limiter.tryAcquire();
      if (p !== undefined) held.push(p);
      // Each late call ends after 2 s and its unit is taken again (all calls stay late).
      await clock.advance(50);
      if (held.length > 0 && clock.now() % 2_000 === 0) (held.shift() as Permit).success();
    }
    // Winding down: each late call that ends takes its unit along.
    const before = limiter.capacity;
    expect(before).toBeLessThanOrEqual(1 + MAX_LATE_PROBES);
    for (const p of held.splice(0)) p.success();
    expect(limiter.capacity).toBe(1);
    expect(limiter.inflight).toBe(0);
    // No new probes while the slowdown lasts (the algorithm relearns its baseline meanwhile)…
    const late = limiter.tryAcquire() as Permit;
    await clock.advance(5 * LATE_PROBE_SPACING_MS);
    expect(limiter.capacity).toBe(1);
    late.success();
    // …until a call comes back on time.
    const onTime = limiter.tryAcquire() as Permit;
    await clock.advance(10);
    onTime.success();
    const again = limiter.tryAcquire() as Permit;
    await clock.advance(200);
    expect(limiter.capacity).toBe(2);
    again.success();
  });
});
