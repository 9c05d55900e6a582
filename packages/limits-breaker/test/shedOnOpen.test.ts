import { LimitExceededError } from 'limits-core';
import { describe, expect, test, vi } from 'vitest';
import { CircuitOpenError } from '../src/errors.js';
import { guard } from '../src/guard.js';
import type { FallbackCause } from '../src/types.js';
import { baseOptions } from './support/opossum.js';
import { clock, deferred, flushMicrotasks, useFakeTimersPerTest } from './support/timers.js';

const flush = () => flushMicrotasks(20);

const base = baseOptions;

useFakeTimersPerTest();

describe('shedding the queue when the circuit opens', () => {
  test('calls waiting for a permit when the circuit opens get the open fallback at once and never run', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const causes: FallbackCause[] = [];
    const g = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      {
        ...base,
        limiter: { limit: 1, maxQueued: 500, clock },
        fallback: (cause) => {
          causes.push(cause);
          return cause.reason;
        },
      },
    );
    const running = g.fire();
    const settled: string[] = [];
    const queued = Array.from({ length: 200 }, () => g.fire().then((v) => settled.push(v)));
    expect(g.limiter.snapshot().queued).toBe(200);
    gates[0]?.reject(new Error('dependency down'));
    await flush();
    expect(g.state).toBe('OPEN');
    // The one call granted by the failing call's release (before opossum opened) is running; every
    // other waiter was answered with `open` and left the limiter's queue.
    expect(gates).toHaveLength(2);
    expect(settled.filter((r) => r === 'open')).toHaveLength(199);
    expect(causes.filter((c) => c.reason === 'open')).toHaveLength(199);
    expect(causes.find((c) => c.reason === 'open')?.error).toBeInstanceOf(CircuitOpenError);
    expect(g.limiter.snapshot().queued).toBe(0);
    gates[1]?.reject(new Error('still down'));
    await Promise.all([running, ...queued]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(gates).toHaveLength(2);
    await g.shutdown();
  });

  test('without a fallback, shed waiters reject with CircuitOpenError; a waiter with its own acquire signal still leaves on that signal', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const user = new AbortController();
    const g = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      { ...base, limiter: { limit: 1, maxQueued: 10, clock }, acquire: { signal: user.signal } },
    );
    const running = g.fire();
    const a = g.fire().catch((e: unknown) => e);
    user.abort(new Error('user gave up'));
    const aborted = await a;
    expect(aborted).toBeInstanceOf(LimitExceededError);
    expect((aborted as LimitExceededError).reason).toBe('aborted');
    gates[0]?.resolve('ok');
    expect(await running).toBe('ok');
    await g.shutdown();

    const g2 = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      { ...base, limiter: { limit: 1, maxQueued: 10, clock } },
    );
    gates.length = 0;
    const r2 = g2.fire().catch((e: unknown) => e);
    const waiting = [g2.fire().catch((e: unknown) => e), g2.fire().catch((e: unknown) => e)];
    g2.breaker.open();
    const answers = await Promise.all(waiting);
    for (const e of answers) expect(e).toBeInstanceOf(CircuitOpenError);
    expect(g2.limiter.snapshot().queued).toBe(0);
    gates[0]?.resolve('late');
    await r2;
    expect(gates).toHaveLength(1);
    await g2.shutdown();
  });

  test('a waiter that already left the queue (expired) is not shed again; 10,000 waiters are shed in one pass', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const reasons: string[] = [];
    const g = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      {
        ...base,
        limiter: { limit: 1, maxQueued: 20_000, maxQueueWaitMs: 50, clock },
        fallback: ({ reason }) => {
          reasons.push(reason);
          return reason;
        },
      },
    );
    const running = g.fire();
    const early = [g.fire(), g.fire()];
    await vi.advanceTimersByTimeAsync(50);
    expect(await Promise.all(early)).toEqual(['limiter', 'limiter']);
    const late = Array.from({ length: 10_000 }, () => g.fire());
    expect(g.limiter.snapshot().queued).toBe(10_000);
    g.breaker.open();
    expect(g.limiter.snapshot().queued).toBe(0);
    const answers = await Promise.all(late);
    expect(answers.every((a) => a === 'open')).toBe(true);
    expect(reasons.filter((r) => r === 'limiter')).toHaveLength(2);
    gates[0]?.resolve('ok');
    expect(await running).toBe('ok');
    expect(gates).toHaveLength(1);
    await g.shutdown();
  });

  test('calls queued after the circuit closed again are not shed by an earlier opening', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const g = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      { ...base, resetTimeout: 100, limiter: { limit: 1, maxQueued: 10, clock } },
    );
    const r = g.fire();
    const q = g.fire().catch((e: unknown) => e);
    g.breaker.open();
    expect(await q).toBeInstanceOf(CircuitOpenError);
    gates[0]?.resolve('a');
    await r;
    g.breaker.close();
    const r2 = g.fire();
    const q2 = g.fire();
    gates[1]?.resolve('b');
    await flush();
    gates[2]?.resolve('c');
    expect(await r2).toBe('b');
    expect(await q2).toBe('c');
    await g.shutdown();
  });
});
