import { guard } from 'limits-breaker';
import { FixedLimit, Limiter } from 'limits-core';
import { describe, expect, test } from 'vitest';
import { type TimelinePoint, TimelineRecorder } from '../src/index.js';
import { deferred, FakeClock, flush } from './support/FakeClock.js';

/** The counts of every bucket, summed. */
function totals(points: readonly TimelinePoint[]) {
  const sum = (f: (p: TimelinePoint) => number) => points.reduce((a, p) => a + f(p), 0);
  return {
    completed: sum((p) => p.success + p.dropped + p.failure + p.ignore),
    rejected: sum((p) => p.rejected),
    shortCircuited: sum((p) => p.shortCircuited ?? Number.NaN), // the recorder always sets it
    fallbacks: sum((p) => p.fallbacks),
  };
}

describe('TimelineRecorder tracking a limits-breaker guard', () => {
  test('a call the limiter refuses and the guard answers from its fallback counts once as refused', async () => {
    const clock = new FakeClock();
    const running = deferred<string>();
    const g = guard(() => running.promise, {
      limiter: { algorithm: new FixedLimit(1), maxQueued: 0 },
      timeoutMs: false,
      fallback: () => 'cached',
      clock,
    });
    const recorder = new TimelineRecorder({ bucketMs: 100, clock }).track(g);
    const first = g.fire();
    await flush();
    await expect(g.fire()).resolves.toBe('cached'); // refused by the limiter: at its limit
    running.resolve('live');
    await first;
    await clock.advance(10);
    const t = totals(recorder.timeline().points);
    expect(t).toEqual({ completed: 1, rejected: 1, shortCircuited: 0, fallbacks: 1 });
    // Calls refused before the downstream, each once: the limiter's refusal, not its fallback too.
    expect(t.rejected + t.shortCircuited).toBe(1);
    recorder.stop();
    await g.shutdown();
  });

  test('calls the open circuit answers count once each: short-circuited, or shed from the queue as refused', async () => {
    const clock = new FakeClock();
    const running = deferred<string>();
    let calls = 0;
    const g = guard(
      () => {
        calls++;
        return running.promise;
      },
      {
        limiter: new Limiter({ algorithm: new FixedLimit(1), maxQueued: 10, clock }),
        timeoutMs: false,
        resetTimeout: 10_000,
        fallback: () => 'cached',
        clock,
      },
    );
    const recorder = new TimelineRecorder({ bucketMs: 100, clock }).track(g);
    const first = g.fire();
    await flush();
    // Two calls wait for the one permit; the circuit opens and sheds them from the queue.
    const queued = [g.fire(), g.fire()];
    await flush();
    expect(g.limiter.queued).toBe(2);
    g.breaker.open();
    await expect(Promise.all(queued)).resolves.toEqual(['cached', 'cached']);
    expect(g.state).toBe('OPEN');
    // Open: answered at once without asking the limiter.
    await expect(g.fire()).resolves.toBe('cached');
    await expect(g.fire()).resolves.toBe('cached');
    running.resolve('live');
    await first;
    await clock.advance(10);
    const points = recorder.timeline().points;
    expect(totals(points)).toEqual({
      completed: 1, // the call that held the permit reached the downstream
      rejected: 2, // shed from the queue: the limiter refused them (reason `aborted`)
      shortCircuited: 2,
      fallbacks: 4, // every caller answered from the fallback, each counted once there too
    });
    expect(points.at(-1)?.state).toBe('OPEN');
    expect(calls).toBe(1);
    recorder.stop();
    await g.shutdown();
  });

  test('a refusal of a shared limiter in an earlier turn is never paired with a later short circuit', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ algorithm: new FixedLimit(1), maxQueued: 0, clock });
    const g = guard((): Promise<string> => Promise.reject(new Error('down')), {
      limiter,
      timeoutMs: false,
      volumeThreshold: 1,
      errorThresholdPercentage: 1,
      resetTimeout: 10_000,
      fallback: () => 'cached',
      clock,
    });
    const recorder = new TimelineRecorder({ bucketMs: 100, clock }).track(g);
    await g.fire(); // fails: the circuit opens
    expect(g.state).toBe('OPEN');
    const held = limiter.tryAcquire();
    await expect(limiter.acquire()).rejects.toMatchObject({ code: 'LIMIT_EXCEEDED' }); // not the guard's
    await flush();
    await g.fire(); // short-circuited
    held?.success();
    const t = totals(recorder.timeline().points);
    expect(t.rejected).toBe(1);
    expect(t.shortCircuited).toBe(1);
    recorder.stop();
    await g.shutdown();
  });
});
