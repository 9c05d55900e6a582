import { describe, expect, test } from 'vitest';
import type { LimitAlgorithm, Sample } from '../src/algorithms/LimitAlgorithm.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Outcome } from '../src/permit/outcome.js';
import { deferred, FakeClock, flush } from './support/FakeClock.js';

/** An adaptive algorithm at a fixed limit that records every sample it is fed. */
function recorder(limit: number): LimitAlgorithm & { samples: Sample[] } {
  const samples: Sample[] = [];
  return {
    limit,
    samples,
    update(sample: Sample) {
      samples.push({ ...sample });
      return limit;
    },
  };
}

/**
 * `run()` without options on an adaptive (or timed) limiter, granted at once, runs in a reusable slot
 * (no permit object, no closures per call; `TaskRunner.runCounted`). A slot is reused only after its task settled:
 * every sample and release must carry its own call's start time, in-flight count and outcome, however
 * the calls interleave, and however many are in flight at once (more than the slots kept for reuse).
 */
describe('run() in reusable slots (adaptive limiter, no options)', () => {
  test('calls settling out of order, then reusing their slots, feed their own start time, rtt and in-flight', async () => {
    const clock = new FakeClock(1000);
    const algorithm = recorder(10);
    const limiter = new Limiter({ algorithm, clock, stallThresholdMs: Infinity });
    const a = deferred<string>();
    const b = deferred<string>();
    const pa = limiter.run(() => a.promise); // t 1000, in flight 1
    clock.jump(5);
    const pb = limiter.run(() => b.promise); // t 1005, in flight 2
    clock.jump(2);
    b.resolve('b'); // ends at 1007: rtt 2
    expect(await pb).toBe('b');
    clock.jump(13);
    a.resolve('a'); // ends at 1020: rtt 20
    expect(await pa).toBe('a');
    // Both slots are free now: the next two calls reuse them.
    clock.jump(10);
    const c = deferred<number>();
    const pc = limiter.run(() => c.promise); // t 1030, in flight 1
    clock.jump(1);
    await expect(limiter.run(async () => 4)).resolves.toBe(4); // t 1031, in flight 2, rtt 0
    clock.jump(3);
    c.resolve(3); // ends at 1034: rtt 4
    expect(await pc).toBe(3);
    expect(algorithm.samples).toEqual([
      { startTime: 1005, rtt: 2, inflight: 2, dropped: false },
      { startTime: 1000, rtt: 20, inflight: 1, dropped: false },
      { startTime: 1031, rtt: 0, inflight: 2, dropped: false },
      { startTime: 1030, rtt: 4, inflight: 1, dropped: false },
    ]);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
  });

  test('300 calls at once (more than the slots kept), settled in a scrambled order, twice', async () => {
    const clock = new FakeClock(0);
    const algorithm = recorder(300);
    const limiter = new Limiter({ algorithm, clock, stallThresholdMs: Infinity });
    for (let round = 0; round < 2; round++) {
      algorithm.samples.length = 0;
      const base = clock.now();
      const gates = Array.from({ length: 300 }, () => deferred<number>());
      // Call i starts at base + i, with i + 1 in flight.
      const results = gates.map((g) => {
        const p = limiter.run(() => g.promise);
        clock.jump(1);
        return p;
      });
      expect(limiter.inflight).toBe(300);
      // Settle in a scrambled order (a stride coprime with 300), each at its own time.
      for (let k = 0; k < 300; k++) {
        const i = (k * 7) % 300;
        clock.jump(1);
        gates[i]?.resolve(i);
        await flush();
      }
      expect(await Promise.all(results)).toEqual(gates.map((_, i) => i));
      expect(algorithm.samples).toHaveLength(300);
      for (let k = 0; k < 300; k++) {
        const i = (k * 7) % 300;
        // Settled at base + 300 + k + 1.
        expect(algorithm.samples[k]).toEqual({
          startTime: base + i,
          rtt: 300 + k + 1 - i,
          inflight: i + 1,
          dropped: false,
        });
      }
      expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
    }
  });

  test('outcomes: resolved, rejected (with undefined too), a sync throw (never started: ignore), classify', async () => {
    const clock = new FakeClock(0);
    const algorithm = recorder(4);
    const outcomes: Outcome[] = [];
    const limiter = new Limiter({
      algorithm,
      clock,
      stallThresholdMs: Infinity,
      classify: (_error, result) => (result === 'slow' ? 'dropped' : undefined),
    });
    limiter.on('release', (e) => outcomes.push(e.outcome));
    await expect(limiter.run(() => 'ok')).resolves.toBe('ok');
    await expect(limiter.run(() => Promise.reject(new Error('x')))).rejects.toThrow('x');
    await expect(limiter.run(() => Promise.reject(undefined))).rejects.toBeUndefined();
    const boom = new Error('sync');
    const thrown = limiter.run(() => {
      throw boom;
    });
    expect(limiter.inflight).toBe(0); // back at once
    await expect(thrown).rejects.toBe(boom);
    await expect(limiter.run(() => Promise.resolve('slow'))).resolves.toBe('slow');
    expect(outcomes).toEqual(['success', 'failure', 'failure', 'ignore', 'dropped']);
    // Success, failure and drop samples reach the algorithm; a failure and an ignored call do not.
    expect(algorithm.samples.map((s) => s.dropped)).toEqual([false, true]);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
  });

  test('a classify that throws is reported on `error`, and the unit still goes back', async () => {
    const bad = new Error('classify bug');
    const limiter = new Limiter({
      algorithm: recorder(2),
      stallThresholdMs: Infinity,
      classify: () => {
        throw bad;
      },
    });
    const errors: unknown[] = [];
    limiter.on('error', (e) => errors.push(e));
    await expect(limiter.run(async () => 1)).resolves.toBe(1);
    expect(errors).toEqual([bad]);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
  });

  test('a release listener that calls run() re-entrantly gets a slot of its own', async () => {
    const clock = new FakeClock(0);
    const algorithm = recorder(4);
    const limiter = new Limiter({ algorithm, clock, stallThresholdMs: Infinity });
    const inner: Promise<unknown>[] = [];
    let once = true;
    limiter.on('release', () => {
      if (!once) return;
      once = false;
      clock.jump(1);
      inner.push(limiter.run(() => Promise.resolve('inner')));
    });
    const outer = deferred<string>();
    const p = limiter.run(() => outer.promise); // t 0
    clock.jump(10);
    outer.resolve('outer'); // rtt 10; the listener starts a call at 11
    expect(await p).toBe('outer');
    expect(await Promise.all(inner)).toEqual(['inner']);
    expect(algorithm.samples).toEqual([
      { startTime: 0, rtt: 10, inflight: 1, dropped: false },
      { startTime: 11, rtt: 0, inflight: 1, dropped: false },
    ]);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
  });
});

/** A native promise of `value` whose own `then` calls the fulfilled reaction twice. */
function twiceThen<T>(value: T): Promise<T> {
  const promise = Promise.resolve(value);
  Object.defineProperty(promise, 'then', {
    value(ok: (v: T) => unknown, fail: (e: unknown) => unknown) {
      return Promise.prototype.then.call(
        this,
        (v: T) => {
          ok(v);
          return ok(v);
        },
        fail,
      );
    },
  });
  return promise;
}

describe('a task whose native promise has an own `then` calling back twice', () => {
  test('adaptive limiter (a reusable slot): its unit is released once, and one sample is fed', async () => {
    const clock = new FakeClock(0);
    const algorithm = recorder(4);
    const limiter = new Limiter({ algorithm, clock, stallThresholdMs: Infinity });
    await expect(limiter.run(() => twiceThen('x'))).resolves.toBe('x');
    await flush();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
    expect(algorithm.samples).toHaveLength(1);
  });

  test('fixed limit (the plain path, shared reactions): its unit is released once', async () => {
    const limiter = new Limiter({ limit: 2 });
    await expect(limiter.run(() => twiceThen('y'))).resolves.toBe('y');
    await flush();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
  });
});
