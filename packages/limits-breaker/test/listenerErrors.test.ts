import { LimitExceededError } from 'limits-core';
import { describe, expect, test, vi } from 'vitest';
import { CircuitOpenError } from '../src/errors.js';
import { guard } from '../src/guard.js';
import { baseOptions } from './support/opossum.js';
import { clock, deferred, flushMicrotasks, useFakeTimersPerTest } from './support/timers.js';

const flush = () => flushMicrotasks(20);

const base = baseOptions;

useFakeTimersPerTest();

describe('listeners that throw', () => {
  class ListenerError extends Error {
    override name = 'ListenerError';
  }
  const thrower = (message: string) => () => {
    throw new ListenerError(message);
  };

  test('a fallback listener that throws when queued calls expire is reported on the error event, and every queued caller is answered at its wait', async () => {
    const head = deferred();
    const g = guard(() => head.promise, {
      ...base,
      limiter: { limit: 1, maxQueued: 2, maxQueueWaitMs: 10, clock },
    });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.on('fallback', thrower('fallback listener threw'));
    const running = g.fire();
    const answers: string[] = [];
    for (let i = 0; i < 2; i++) {
      g.fire().then(
        () => answers.push('ok'),
        (error: unknown) => answers.push((error as LimitExceededError).reason),
      );
    }
    expect(g.limiter.queued).toBe(2);
    await vi.advanceTimersByTimeAsync(10);
    await flush();
    expect(answers).toEqual(['expired', 'expired']);
    expect(g.limiter.queued).toBe(0);
    expect(reported).toHaveLength(2);
    expect(reported[0]).toBeInstanceOf(ListenerError);
    head.resolve();
    await running;
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
    await g.shutdown();
  });

  test('a fallback listener that throws does not make fire() throw: the caller gets its answer', async () => {
    const g = guard(() => Promise.resolve('x'), { ...base, fallback: () => 'fallback' });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.on('fallback', thrower('fallback listener threw'));
    g.breaker.open();
    let promise: Promise<string> | undefined;
    expect(() => {
      promise = g.fire();
    }).not.toThrow();
    await expect(promise).resolves.toBe('fallback');
    expect(g.stats().breaker.fallbacks).toBe(1);
    // Without a fallback, the caller gets the typed error.
    const bare = guard(() => Promise.resolve('x'), base);
    bare.on('error', (error) => reported.push(error));
    bare.on('fallback', thrower('fallback listener threw'));
    bare.breaker.open();
    await expect(bare.fire()).rejects.toBeInstanceOf(CircuitOpenError);
    expect(reported).toHaveLength(2);
    await g.shutdown();
    await bare.shutdown();
  });

  test('a state listener that throws when a failed trial re-opens the circuit: the trial is answered, its permit released, the error reported', async () => {
    const g = guard(() => Promise.reject(new Error('down')), {
      ...base,
      timeoutMs: 100,
      resetTimeout: 40,
      limiter: { limit: 1, clock },
    });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.breaker.open();
    await vi.advanceTimersByTimeAsync(40);
    expect(g.state).toBe('HALF_OPEN');
    const seen: string[] = [];
    g.on('state', ({ to }) => {
      seen.push(to);
      if (to === 'OPEN') throw new ListenerError('state listener threw');
    });
    await expect(g.fire()).rejects.toThrow('down');
    expect(g.state).toBe('OPEN');
    expect(seen).toEqual(['OPEN']);
    expect(reported).toEqual([expect.any(ListenerError)]);
    expect(g.limiter.inflight).toBe(0);
    expect(g.stats().trials).toBe(0);
    // opossum's state machine goes on: HALF_OPEN again after resetTimeout.
    await vi.advanceTimersByTimeAsync(40);
    expect(g.state).toBe('HALF_OPEN');
    await g.shutdown();
  });

  test('a state listener that throws on a transition of opossum (open(), the reset timer) does not throw into opossum, and a trial still closes the circuit', async () => {
    const g = guard(() => Promise.resolve('x'), { ...base, resetTimeout: 40 });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.on('state', thrower('state listener threw'));
    expect(() => g.breaker.open()).not.toThrow();
    await vi.advanceTimersByTimeAsync(40); // the reset timer: HALF_OPEN
    expect(g.state).toBe('HALF_OPEN');
    await expect(g.fire()).resolves.toBe('x');
    expect(g.state).toBe('CLOSED');
    expect(g.breaker.closed).toBe(true);
    expect(reported).toHaveLength(3);
    await g.shutdown();
  });

  test('release and reject listeners that throw are reported on the guard error event', async () => {
    const g = guard(() => Promise.resolve('x'), {
      ...base,
      limiter: { limit: 1, maxQueued: 0, clock },
    });
    const reported: unknown[] = [];
    const limiterReported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.limiter.on('error', (error) => limiterReported.push(error));
    g.on('release', thrower('release listener threw'));
    g.on('reject', thrower('reject listener threw'));
    const first = g.fire();
    await expect(g.fire()).rejects.toBeInstanceOf(LimitExceededError);
    await expect(first).resolves.toBe('x');
    expect(reported.map((e) => (e as Error).message)).toEqual([
      'reject listener threw',
      'release listener threw',
    ]);
    expect(limiterReported).toEqual([]);
    await g.shutdown();
  });

  test('without a guard error listener a listener error goes to the limiter error event, and without either it is rethrown on a microtask', async () => {
    const g = guard(() => Promise.resolve('x'), { ...base, fallback: () => 'fallback' });
    g.on('fallback', thrower('fallback listener threw'));
    const limiterReported: unknown[] = [];
    const onLimiterError = (error: unknown) => limiterReported.push(error);
    g.limiter.on('error', onLimiterError);
    g.breaker.open();
    await expect(g.fire()).resolves.toBe('fallback');
    expect(limiterReported).toEqual([expect.any(ListenerError)]);
    g.limiter.off('error', onLimiterError);
    const queued: Array<() => void> = [];
    const spy = vi.spyOn(globalThis, 'queueMicrotask').mockImplementation((fn) => {
      queued.push(fn);
    });
    try {
      await expect(g.fire()).resolves.toBe('fallback');
      // An error listener that throws is rethrown the same way.
      g.on('error', thrower('error listener threw'));
      await expect(g.fire()).resolves.toBe('fallback');
    } finally {
      spy.mockRestore();
    }
    expect(queued).toHaveLength(2);
    expect(queued[0]).toThrow('fallback listener threw');
    expect(queued[1]).toThrow('fallback listener threw');
    await g.shutdown();
  });

  // (opossum's 'fallback' is emitted by the guard, 'open' by a trial's settlement; a throw in
  // opossum's own asynchronous failure path, e.g. its 'failure' event, is out of the guard's reach.)
  test("a listener of opossum's own events that throws leaves no caller unanswered", async () => {
    const g = guard(() => Promise.reject(new Error('down')), {
      ...base,
      timeoutMs: 100,
      resetTimeout: 40,
      fallback: () => 'fallback',
    });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.breaker.on('fallback', thrower('opossum fallback listener threw'));
    let promise: Promise<string> | undefined;
    expect(() => {
      promise = g.fire();
    }).not.toThrow();
    await expect(promise).resolves.toBe('fallback');
    g.breaker.open();
    await vi.advanceTimersByTimeAsync(40);
    g.breaker.on('open', thrower('opossum open listener threw'));
    // A failed trial re-opens the circuit through breaker.open(): a throwing 'open' listener.
    await expect(g.fire()).resolves.toBe('fallback');
    expect(g.state).toBe('OPEN');
    expect(g.limiter.inflight).toBe(0);
    expect(g.stats().trials).toBe(0);
    expect(reported.length).toBeGreaterThanOrEqual(2);
    await g.shutdown();
  });
});

describe('listeners that fire calls', () => {
  test('a call started by a fallback listener while calls time out leaves no timer behind after shutdown', async () => {
    let sync = false;
    const g = guard(() => (sync ? 'value' : new Promise<string>(() => {})), {
      ...base,
      timeoutMs: 60,
    });
    const answers: string[] = [];
    g.on('fallback', ({ reason }) => {
      if (reason !== 'timeout') return;
      sync = true;
      g.fire().then((v) => answers.push(v));
      sync = false;
    });
    const first = g.fire().catch((e: unknown) => (e as Error).name);
    await vi.advanceTimersByTimeAsync(1);
    const second = g.fire().catch((e: unknown) => (e as Error).name);
    await vi.advanceTimersByTimeAsync(59);
    expect(await first).toBe('TimeoutError');
    await vi.advanceTimersByTimeAsync(1);
    expect(await second).toBe('TimeoutError');
    await flush();
    expect(answers).toEqual(['value', 'value']);
    await g.shutdown();
    expect(vi.getTimerCount()).toBe(0);
  });
});
