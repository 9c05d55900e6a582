import { Limiter, type Permit } from 'limits-core';
import { describe, expect, test, vi } from 'vitest';
import { CallTimeoutError } from '../src/errors.js';
import { guard } from '../src/guard.js';
import type { FallbackCause } from '../src/types.js';
import { opossumVersions } from './support/opossum.js';
import { clock, deferred, flushMicrotasks, useFakeTimersPerTest } from './support/timers.js';

const flush = () => flushMicrotasks(10);

/**
 * The guard's `timeoutMs` is an end-to-end time limit counted from `fire()`: the wait for a permit in the
 * limiter's queue and the action.
 */
describe.each(opossumVersions)('guard() timeoutMs on %s', (_name, CircuitBreaker) => {
  useFakeTimersPerTest();

  /** A shared limiter of one permit, held from outside: every guarded call queues. */
  async function fullLimiter(): Promise<{ limiter: Limiter; held: Permit }> {
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock });
    const held = await limiter.acquire();
    return { limiter, held };
  }

  /**
   * A guard on a full shared limiter, its circuit HALF_OPEN, and one trial call queued for a permit
   * (its time limit: 100 ms).
   */
  async function queuedTrial(probeSlots: number) {
    const { limiter, held } = await fullLimiter();
    const g = guard(async () => 'ok', {
      CircuitBreaker,
      clock,
      limiter,
      timeoutMs: 100,
      probeSlots,
      resetTimeout: 50,
    });
    g.breaker.open();
    await vi.advanceTimersByTimeAsync(50);
    expect(g.state).toBe('HALF_OPEN');
    const trial = g.fire().catch((e: unknown) => e);
    await flush();
    expect(g.stats().trials).toBe(1);
    return { limiter, held, g, trial };
  }

  test('a call still queued when its timeoutMs runs out is answered timeout at fire + timeoutMs, leaves the queue, never takes a permit and is not a breaker failure', async () => {
    const { limiter, held } = await fullLimiter();
    let ran = 0;
    const causes: FallbackCause[] = [];
    const g = guard(
      async () => {
        ran++;
        return 'ran';
      },
      {
        CircuitBreaker,
        clock,
        limiter,
        timeoutMs: 100,
        fallback: (cause) => {
          causes.push(cause);
          return 'fallback';
        },
      },
    );
    const rejects: string[] = [];
    limiter.on('reject', (e) => rejects.push(e.reason));
    const caller = g.fire();
    await flush();
    expect(limiter.queued).toBe(1);
    await vi.advanceTimersByTimeAsync(99);
    expect(limiter.queued).toBe(1);
    expect(causes).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    // Answered at the deadline, and out of the limiter's queue at once.
    expect(limiter.queued).toBe(0);
    expect(await caller).toBe('fallback');
    expect(causes.map((c) => c.reason)).toEqual(['timeout']);
    expect(causes[0]?.error).toBeInstanceOf(CallTimeoutError);
    expect(causes[0]?.error).toMatchObject({ timeoutMs: 100 });
    // The limiter saw a cancelled wait, not a sample.
    expect(rejects).toEqual(['aborted']);
    // The permit frees later: nothing takes it for the timed-out call.
    held.success();
    await flush();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, queued: 0, permits: 0 });
    expect(ran).toBe(0);
    // Never reached the downstream: not a breaker failure.
    expect(g.stats().breaker).toMatchObject({ failures: 0, successes: 0 });
    expect(g.state).toBe('CLOSED');
    await g.shutdown();
    await limiter.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  test('a call granted after waiting part of its time limit is answered timeout at fire + timeoutMs, not at start + timeoutMs, and keeps its permit until its action ends', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const signals: AbortSignal[] = [];
    const g = guard(
      (ctx, n: number) => {
        signals[n] = ctx.signal;
        const d = deferred<string>();
        gates[n] = d;
        return d.promise;
      },
      { CircuitBreaker, clock, timeoutMs: 100, limiter: { limit: 1, maxQueued: 10, clock } },
    );
    const outcomes: string[] = [];
    g.limiter.on('release', (e) => outcomes.push(e.outcome));
    const first = g.fire(0);
    const second = g.fire(1).catch((e: unknown) => e);
    await flush();
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 1, queued: 1 });
    await vi.advanceTimersByTimeAsync(40);
    gates[0]?.resolve('first');
    expect(await first).toBe('first');
    // The second call started at t = 40 ms; its time limit started at fire(), t = 0.
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 1, queued: 0 });
    let answered = false;
    void second.then(() => {
      answered = true;
    });
    await vi.advanceTimersByTimeAsync(59);
    expect(answered).toBe(false);
    expect(signals[1]?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(answered).toBe(true);
    expect(await second).toBeInstanceOf(CallTimeoutError);
    expect(signals[1]?.aborted).toBe(true);
    // Timed out while running: a breaker failure, and the permit stays held until the action ends.
    expect(g.stats().breaker).toMatchObject({ failures: 1, successes: 1 });
    expect(g.limiter.inflight).toBe(1);
    gates[1]?.resolve('late');
    await flush();
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
    expect(outcomes).toEqual(['success', 'dropped']);
    await g.shutdown();
    expect(vi.getTimerCount()).toBe(0);
  });

  test('with a clock that reads fractions of a ms, the time limit ends exactly timeoutMs after fire(), never early', async () => {
    const halfClock = { ...clock, now: () => Date.now() + 0.5 };
    const gate = deferred<string>();
    const g = guard(() => gate.promise, { CircuitBreaker, clock: halfClock, timeoutMs: 100 });
    let answeredAt: number | undefined;
    const firedAt = halfClock.now();
    const call = g.fire().then(
      () => 'resolved',
      (e: unknown) => {
        answeredAt = halfClock.now();
        return e;
      },
    );
    // Fired half a ms into a ms: the time limit ends half a ms into the 100th ms after.
    await vi.advanceTimersByTimeAsync(99);
    expect(answeredAt).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(answeredAt).toBe(firedAt + 100);
    expect(await call).toBeInstanceOf(CallTimeoutError);
    gate.resolve('late');
    await g.shutdown();
  });

  test('a HALF_OPEN trial whose time limit runs out while queued frees its trial slot and does not re-open the circuit', async () => {
    const { limiter, held, g, trial } = await queuedTrial(1);
    expect(limiter.queued).toBe(1);
    // The only trial slot is taken: another call fails fast.
    await expect(g.fire()).rejects.toMatchObject({ code: 'CIRCUIT_OPEN' });
    await vi.advanceTimersByTimeAsync(100);
    expect(await trial).toBeInstanceOf(CallTimeoutError);
    expect(limiter.queued).toBe(0);
    // Not a failure (the circuit would re-open on a failed trial), and the slot is free again.
    expect(g.state).toBe('HALF_OPEN');
    expect(g.stats().trials).toBe(0);
    held.success();
    await flush();
    expect(await g.fire()).toBe('ok');
    expect(g.state).toBe('CLOSED');
    expect(g.stats().trials).toBe(0);
    await g.shutdown();
    await limiter.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  test('a trial queued in one HALF_OPEN episode that times out after the circuit closed frees no slot of a later episode', async () => {
    const { limiter, held, g, trial } = await queuedTrial(2);
    // The circuit closes while the trial waits (closing does not shed the queue): a new episode.
    g.breaker.close();
    expect(g.state).toBe('CLOSED');
    expect(g.stats().trials).toBe(0);
    await vi.advanceTimersByTimeAsync(100);
    expect(await trial).toBeInstanceOf(CallTimeoutError);
    // The timed-out trial belonged to the earlier episode: the count is not taken below zero.
    expect(g.stats().trials).toBe(0);
    expect(g.stats().breaker.failures).toBe(0);
    held.success();
    await g.shutdown();
    await limiter.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  test('calls refused at admission, shed when the circuit opens, or refused while queued leave the timeout list: none is answered twice, none times out later', async () => {
    const hold = deferred<string>();
    const causes: string[] = [];
    const g = guard(() => hold.promise, {
      CircuitBreaker,
      clock,
      timeoutMs: 100,
      limiter: { limit: 1, maxQueued: 2, maxQueueWaitMs: 30, clock },
      fallback: ({ reason }) => {
        causes.push(reason);
        return reason;
      },
    });
    const running = g.fire();
    const queued = [g.fire(), g.fire()];
    // The queue is full: refused at admission.
    expect(await g.fire()).toBe('limiter');
    // Both queued calls are refused at 30 ms (maxQueueWaitMs), long before their time limit.
    await vi.advanceTimersByTimeAsync(30);
    expect(await Promise.all(queued)).toEqual(['limiter', 'limiter']);
    const shed = [g.fire(), g.fire()];
    await flush();
    expect(g.limiter.queued).toBe(2);
    g.breaker.open();
    expect(await Promise.all(shed)).toEqual(['open', 'open']);
    expect(g.limiter.queued).toBe(0);
    // Past every time limit: only the running call times out, once.
    await vi.advanceTimersByTimeAsync(200);
    expect(await running).toBe('timeout');
    expect(causes).toEqual(['limiter', 'limiter', 'limiter', 'open', 'open', 'timeout']);
    hold.resolve('late');
    await flush();
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, queued: 0, permits: 0 });
    await g.shutdown();
    expect(vi.getTimerCount()).toBe(0);
  });

  test('shutdown with calls queued and running answers each once and leaves no timer', async () => {
    const hold = deferred<string>();
    const g = guard(() => hold.promise, {
      CircuitBreaker,
      clock,
      timeoutMs: 100,
      limiter: { limit: 1, maxQueued: 5, clock },
    });
    const callers = [g.fire(), g.fire(), g.fire()].map((p) =>
      p.then(
        () => 'resolved',
        (e: { code?: string; reason?: string }) => e.code ?? 'rejected',
      ),
    );
    await flush();
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 1, queued: 2 });
    await g.shutdown();
    // The running call is rejected SHUTDOWN; its released permit grants the queued ones in turn,
    // which the shut guard answers SHUTDOWN without running them.
    expect(await Promise.all(callers)).toEqual(['SHUTDOWN', 'SHUTDOWN', 'SHUTDOWN']);
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(200);
    hold.resolve('late');
    await flush();
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, queued: 0 });
  });
});
