import { type LimitExceededError, Limiter } from 'limits-core';
import { describe, expect, test, vi } from 'vitest';
import { CallTimeoutError, CircuitOpenError } from '../src/errors.js';
import { guard } from '../src/guard.js';
import type { OpossumConstructor } from '../src/opossum.js';
import type { CircuitState } from '../src/types.js';
import { opossumVersions } from './support/opossum.js';
import { clock, deferred, flushMicrotasks, useFakeTimersPerTest } from './support/timers.js';

const flush = () => flushMicrotasks(10);

describe.each(opossumVersions)('guard() on %s', (_name, CircuitBreaker) => {
  useFakeTimersPerTest();

  const base = { CircuitBreaker, clock, timeoutMs: false as const, limiter: { limit: 10, clock } };
  /** `base` without the own limiter's options, for a guard given a shared limiter. */
  const { limiter: _ownLimiter, ...shared } = base;

  test('CLOSED → OPEN → HALF_OPEN → CLOSED, honouring volume threshold and error percentage', async () => {
    let fail = true;
    const g = guard(
      async () => {
        if (fail) throw new Error('boom');
        return 'ok';
      },
      { ...base, volumeThreshold: 4, errorThresholdPercentage: 50, resetTimeout: 1000 },
    );
    const states: Array<[CircuitState, CircuitState]> = [];
    g.on('state', (e) => states.push([e.from, e.to]));
    // Three failures are under the volume threshold of 4: still closed.
    for (let i = 0; i < 3; i++) await g.fire().catch(() => {});
    expect(g.state).toBe('CLOSED');
    await g.fire().catch(() => {}); // 4 fires, 100 % errors > 50 %
    expect(g.state).toBe('OPEN');
    await expect(g.fire()).rejects.toBeInstanceOf(CircuitOpenError);
    await vi.advanceTimersByTimeAsync(1000);
    expect(g.state).toBe('HALF_OPEN');
    fail = false;
    await expect(g.fire()).resolves.toBe('ok');
    expect(g.state).toBe('CLOSED');
    expect(states).toEqual([
      ['CLOSED', 'OPEN'],
      ['OPEN', 'HALF_OPEN'],
      ['HALF_OPEN', 'CLOSED'],
    ]);
    await g.shutdown();
  });

  test('a failed trial re-opens the circuit; the error percentage is judged on the rolling window', async () => {
    let fail = false;
    const g = guard(
      async () => {
        if (fail) throw new Error('boom');
        return 1;
      },
      { ...base, errorThresholdPercentage: 50, resetTimeout: 500 },
    );
    for (let i = 0; i < 3; i++) await g.fire();
    fail = true;
    await g.fire().catch(() => {}); // 1/4 = 25 %
    expect(g.state).toBe('CLOSED');
    await g.fire().catch(() => {}); // 2/5 = 40 %
    await g.fire().catch(() => {}); // 3/6 = 50 %: not above
    expect(g.state).toBe('CLOSED');
    await g.fire().catch(() => {}); // 4/7 = 57 %
    expect(g.state).toBe('OPEN');
    await vi.advanceTimersByTimeAsync(500);
    expect(g.state).toBe('HALF_OPEN');
    await g.fire().catch(() => {});
    expect(g.state).toBe('OPEN');
    await g.shutdown();
  });

  test('while OPEN no permit is taken; limiter rejections never open the circuit', async () => {
    const limiter = new Limiter({ limit: 1, clock });
    const hold = deferred();
    const g = guard(() => hold.promise, { ...shared, limiter, errorThresholdPercentage: 1 });
    const running = g.fire();
    const rejections: string[] = [];
    for (let i = 0; i < 1000; i++) {
      await g.fire().catch((e: unknown) => rejections.push((e as LimitExceededError).reason));
    }
    expect(rejections).toHaveLength(1000);
    expect(new Set(rejections)).toEqual(new Set(['at_limit']));
    expect(g.state).toBe('CLOSED');
    expect(g.stats().breaker.failures).toBe(0);
    hold.resolve();
    await running;
    g.breaker.open();
    let acquired = 0;
    limiter.on('acquire', () => acquired++);
    for (let i = 0; i < 100; i++) await g.fire().catch(() => {});
    expect(acquired).toBe(0);
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('a timed-out call: caller rejected at the timeout, permit held until the action settles', async () => {
    const slow = deferred<string>();
    let signal: AbortSignal | undefined;
    const g = guard(
      (ctx) => {
        signal = ctx.signal;
        return slow.promise;
      },
      { ...base, timeoutMs: 100 },
    );
    const caller = g.fire();
    const outcome = caller.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(99);
    expect(g.limiter.inflight).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await outcome).toBeInstanceOf(CallTimeoutError);
    expect(signal?.aborted).toBe(true);
    expect(g.limiter.inflight).toBe(1); // the action is still running
    expect(g.stats().breaker.failures).toBe(1);
    const releases: string[] = [];
    g.on('release', (e) => releases.push(e.outcome));
    await vi.advanceTimersByTimeAsync(5000);
    expect(g.limiter.inflight).toBe(1);
    slow.resolve('late');
    await flush();
    expect(g.limiter.inflight).toBe(0);
    expect(releases).toEqual(['dropped']);
    await g.shutdown();
    expect(vi.getTimerCount()).toBe(0);
  });

  test('HALF_OPEN with probeSlots 3 admits exactly 3 concurrent trial calls', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    let fail = true;
    const g = guard(
      () => {
        if (fail) return Promise.reject(new Error('down'));
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      { ...base, probeSlots: 3, resetTimeout: 100, limiter: { limit: 10, probeSlots: 3, clock } },
    );
    await g.fire().catch(() => {});
    expect(g.state).toBe('OPEN');
    await vi.advanceTimersByTimeAsync(100);
    expect(g.state).toBe('HALF_OPEN');
    fail = false;
    const trials = [g.fire(), g.fire(), g.fire()];
    const extra = await g.fire().catch((e: unknown) => e);
    expect(extra).toBeInstanceOf(CircuitOpenError);
    expect((extra as CircuitOpenError).state).toBe('HALF_OPEN');
    expect(gates).toHaveLength(3);
    expect(g.stats().trials).toBe(3);
    for (const d of gates) d.resolve('fine');
    await Promise.all(trials);
    expect(g.state).toBe('CLOSED');
    await g.shutdown();
  });

  test('fallback gets the reason and the arguments; a fallback that throws rejects the caller', async () => {
    const reasons: string[] = [];
    const mode = 'error';
    const g = guard(
      async (_ctx, x: number) => {
        if (mode === 'error') throw new Error('bad');
        return x * 2;
      },
      {
        ...base,
        errorThresholdPercentage: 100,
        fallback: ({ reason }, x) => {
          reasons.push(reason);
          if (x === 13) throw new Error('fallback broke');
          return -x;
        },
      },
    );
    expect(await g.fire(5)).toBe(-5);
    await expect(g.fire(13)).rejects.toThrow('fallback broke');
    g.breaker.open();
    expect(await g.fire(7)).toBe(-7);
    expect(reasons).toEqual(['error', 'error', 'open']);
    await g.shutdown();
  });

  test('an action that throws synchronously returns its permit at once and is not a breaker failure', async () => {
    const g = guard(() => {
      throw new TypeError('bad arguments');
    }, base);
    await expect(g.fire()).rejects.toThrow('bad arguments');
    expect(g.limiter.inflight).toBe(0);
    expect(g.stats().breaker.failures).toBe(0);
    await g.shutdown();
  });

  test('an action that never settles is held until shutdown() aborts it; nothing is left behind', async () => {
    let signal: AbortSignal | undefined;
    const g = guard(
      (ctx) => {
        signal = ctx.signal;
        return new Promise<never>(() => {});
      },
      { ...base, timeoutMs: 60_000 },
    );
    const caller = g.fire().catch((e: unknown) => e);
    await flush();
    expect(g.limiter.inflight).toBe(1);
    const before = vi.getTimerCount();
    expect(before).toBeGreaterThan(0);
    await g.shutdown();
    expect(signal?.aborted).toBe(true);
    expect(await caller).toMatchObject({ code: 'SHUTDOWN' });
    expect(g.limiter.inflight).toBe(0);
    expect(g.limiter.snapshot().closed).toBe(true);
    // opossum's rolling-window interval and the guard's timeout timer are gone.
    expect(vi.getTimerCount()).toBe(0);
    expect(g.limiter.listenerCount('release')).toBe(0);
    await expect(g.fire()).rejects.toMatchObject({ code: 'SHUTDOWN' });
  });

  test('classify decides: dropped feeds the limiter as congestion, ignore counts for nobody', async () => {
    const g = guard(
      async (_ctx, kind: string) => {
        const e = Object.assign(new Error(kind), { status: kind === 'busy' ? 503 : 404 });
        throw e;
      },
      {
        ...base,
        classify: (error) =>
          (error as { status?: number })?.status === 503 ? 'dropped' : 'ignore',
      },
    );
    const outcomes: string[] = [];
    g.on('release', (e) => outcomes.push(e.outcome));
    await g.fire('missing').catch(() => {});
    await g.fire('busy').catch(() => {});
    expect(outcomes).toEqual(['ignore', 'dropped']);
    expect(g.stats().breaker).toMatchObject({ failures: 1, fires: 1 });
    await g.shutdown();
  });

  test('queued calls wait in the limiter: each starts when a permit frees, its timeoutMs counts from fire(), not from the start', async () => {
    // (Counted from the action's start, as opossum's `timeout` is, call 2 would time out at 160 ms
    // and call 3 would run to the end.)
    const gates: Array<ReturnType<typeof deferred<number>>> = [];
    const g = guard(
      (_ctx, n: number) => {
        const d = deferred<number>();
        gates[n] = d;
        return d.promise;
      },
      { ...base, timeoutMs: 100, limiter: { limit: 2, maxQueued: 10, clock } },
    );
    const callers = [0, 1, 2, 3].map((n) => g.fire(n).catch((e: unknown) => e));
    await flush();
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 2, queued: 2 });
    expect(gates.filter(Boolean)).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(60);
    gates[0]?.resolve(0);
    await flush();
    // Call 2 started at t = 60 ms, but its time limit started at fire() (t = 0): it times out at 100.
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 2, queued: 1 });
    await vi.advanceTimersByTimeAsync(39);
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 2, queued: 1 });
    await vi.advanceTimersByTimeAsync(1);
    expect(await callers[1]).toBeInstanceOf(CallTimeoutError);
    expect(await callers[2]).toBeInstanceOf(CallTimeoutError);
    // Call 3 was still waiting at t = 100: it left the queue and never started.
    expect(await callers[3]).toBeInstanceOf(CallTimeoutError);
    expect(gates[3]).toBeUndefined();
    // Calls 1 and 2 still hold their permits until their actions end.
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 2, queued: 0 });
    gates[2]?.resolve(2);
    gates[1]?.resolve(1);
    await flush();
    expect(await callers[0]).toBe(0);
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, queued: 0, permits: 0 });
    // Call 3 never reached the downstream: not a breaker failure.
    expect(g.stats().breaker).toMatchObject({ successes: 1, failures: 2 });
    await g.shutdown();
    expect(vi.getTimerCount()).toBe(0);
  });

  test('a queued call refused by the limiter goes to the fallback with reason limiter', async () => {
    const hold = deferred<string>();
    const reasons: string[] = [];
    const g = guard(() => hold.promise, {
      ...base,
      limiter: { limit: 1, maxQueued: 5, maxQueueWaitMs: 50, clock },
      fallback: ({ reason }) => {
        reasons.push(reason);
        return 'fallback';
      },
    });
    const running = g.fire();
    const queued = g.fire();
    await vi.advanceTimersByTimeAsync(50);
    expect(await queued).toBe('fallback');
    expect(reasons).toEqual(['limiter']);
    expect(g.stats().breaker.failures).toBe(0);
    hold.resolve('done');
    await running;
    await g.shutdown();
  });

  test('shutdown takes calls still queued in a shared limiter out of its queue and answers them SHUTDOWN', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5, clock });
    const outside = await limiter.acquire();
    const g = guard(async () => 'ran', { ...shared, limiter });
    let ran = false;
    const queued = [1, 2].map(() =>
      g.fire().then(
        () => (ran = true),
        (e: unknown) => e,
      ),
    );
    expect(limiter.queued).toBe(2);
    await g.shutdown(); // a shared limiter is not closed, but the guard's calls leave its queue
    expect(limiter.queued).toBe(0);
    for (const answer of await Promise.all(queued))
      expect(answer).toMatchObject({ code: 'SHUTDOWN' });
    outside.success();
    await flush();
    expect(ran).toBe(false);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, queued: 0, permits: 0 });
  });

  test("a circuit that opens sheds only its own guard's calls from a shared limiter's queue, oldest first", async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock });
    const outside = await limiter.acquire();
    const answered: string[] = [];
    const a = guard(async (_ctx, n: number) => `a${n} ran`, {
      ...shared,
      limiter,
      fallback: (cause, n: number) => `a${n} ${cause.reason}`,
    });
    const b = guard(async (_ctx, n: number) => `b${n} ran`, { ...shared, limiter });
    const calls = [
      a.fire(1).then((v) => answered.push(v)),
      b.fire(1).then((v) => answered.push(v)),
      limiter.acquire().then((p) => {
        answered.push('acquire granted');
        p.success();
      }),
      a.fire(2).then((v) => answered.push(v)),
      b.fire(2).then((v) => answered.push(v)),
    ];
    expect(limiter.queued).toBe(5);
    a.breaker.open();
    await flush();
    expect(answered).toEqual(['a1 open', 'a2 open']);
    expect(limiter.queued).toBe(3);
    outside.success();
    await Promise.all(calls);
    expect(answered.slice(2).sort()).toEqual(['acquire granted', 'b1 ran', 'b2 ran']);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, queued: 0, permits: 0 });
    await a.shutdown();
    await b.shutdown();
  });

  test("successes count in opossum's window directly, or through its events when someone listens", async () => {
    const g = guard(async () => 'ok', base);
    for (let i = 0; i < 3; i++) await g.fire();
    expect(g.stats().breaker).toMatchObject({ fires: 3, successes: 3 });
    const seen: string[] = [];
    const onSuccess = () => seen.push('success');
    const onFire = () => seen.push('fire');
    g.breaker.on('success', onSuccess);
    g.breaker.on('fire', onFire);
    for (let i = 0; i < 2; i++) await g.fire();
    expect(seen).toEqual(['fire', 'success', 'fire', 'success']);
    expect(g.stats().breaker).toMatchObject({ fires: 5, successes: 5 });
    g.breaker.removeListener('success', onSuccess);
    g.breaker.removeListener('fire', onFire);
    await g.fire();
    expect(seen).toHaveLength(4);
    expect(g.stats().breaker).toMatchObject({ fires: 6, successes: 6 });
    // The counts land in opossum's rolling window and roll out with it.
    await vi.advanceTimersByTimeAsync(11_000);
    expect(g.stats().breaker).toMatchObject({ fires: 0, successes: 0 });
    await g.shutdown();
    // shutdown() removed the guard's listeners from opossum.
    expect(g.breaker.listenerCount('newListener')).toBe(0);
  });

  /**
   * Fires one call per ms for 30 ms on a window of 5 buckets of 2 ms and checks after each that the
   * window holds exactly the successes of its last 5 buckets (a success at ms t sits in bucket
   * floor(t / 2)).
   */
  const checkShortBuckets = async (CircuitBreaker: OpossumConstructor) => {
    const g = guard(() => 'ok', {
      ...base,
      CircuitBreaker,
      rollingCountTimeout: 10,
      rollingCountBuckets: 5,
    });
    const calls: number[] = [];
    for (let t = 0; t < 30; t++) {
      await g.fire();
      calls.push(t);
      const inWindow = calls.filter((c) => Math.floor(c / 2) > Math.floor(t / 2) - 5).length;
      expect(g.stats().breaker, `at ${t} ms`).toMatchObject({
        fires: inWindow,
        successes: inWindow,
        failures: 0,
      });
      await vi.advanceTimersByTimeAsync(1);
    }
    await g.shutdown();
    expect(vi.getTimerCount()).toBe(0);
  };

  test('every success counts in the current bucket of a window whose buckets last 2 ms, and leaves the window exactly when its bucket does', async () => {
    await checkShortBuckets(CircuitBreaker);
  });

  test('a CircuitBreaker that rotates its buckets itself (not through rotateBucketController) still gets every success, through its events', async () => {
    const Base = CircuitBreaker as unknown as new (
      action: unknown,
      options: Record<string, unknown>,
    ) => object;
    class OwnRotation extends Base {
      constructor(action: unknown, options: Record<string, unknown>) {
        super(action, { ...options, rotateBucketController: undefined });
      }
    }
    await checkShortBuckets(OwnRotation as unknown as OpossumConstructor);
  });

  test('stats carry latency percentiles from the rolling HDR histogram', async () => {
    const g = guard((_ctx, ms: number) => new Promise<void>((r) => setTimeout(r, ms)), base);
    for (const ms of [10, 20, 30, 40, 200]) {
      const p = g.fire(ms);
      await vi.advanceTimersByTimeAsync(ms);
      await p;
    }
    const { latency } = g.stats();
    expect(latency.count).toBe(5);
    expect(latency.p50).toBeCloseTo(30, 0);
    expect(latency.max).toBeCloseTo(200, 0);
    await vi.advanceTimersByTimeAsync(61_000); // the window rolls over
    expect(g.stats().latency.count).toBe(0);
    await g.shutdown();
  });
});

describe('guard() shutdown without a timeout', () => {
  test('the caller follows the aborted action; the permit is released at shutdown', async () => {
    let signal: AbortSignal | undefined;
    const g = guard(
      (ctx) => {
        signal = ctx.signal;
        return new Promise<string>((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)),
        );
      },
      { timeoutMs: false, limiter: { limit: 2 } },
    );
    const caller = g.fire().catch((e: unknown) => e);
    await flush();
    expect(g.limiter.inflight).toBe(1);
    await g.shutdown();
    expect(signal?.aborted).toBe(true);
    expect(await caller).toMatchObject({ code: 'SHUTDOWN' });
    expect(g.limiter.inflight).toBe(0);
  });
});
