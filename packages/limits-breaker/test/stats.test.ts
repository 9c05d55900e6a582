import { describe, expect, test, vi } from 'vitest';
import { guard } from '../src/guard.js';
import { opossumVersions } from './support/opossum.js';
import { clock, deferred, flushMicrotasks, useFakeTimersPerTest } from './support/timers.js';

describe.each(opossumVersions)('guard.stats() on %s', (_name, CircuitBreaker) => {
  useFakeTimersPerTest();

  test('holds state, the circuit counts, the limiter snapshot, latency and trials, nothing else', async () => {
    const g = guard(async () => 'ok', { CircuitBreaker, clock, limiter: { limit: 4, clock } });
    await g.fire();
    const stats = g.stats();
    expect(Object.keys(stats).sort()).toEqual(['breaker', 'latency', 'limiter', 'state', 'trials']);
    expect(stats.state).toBe('CLOSED');
    expect(stats.trials).toBe(0);
    expect(stats.limiter).toMatchObject({ limit: 4, inflight: 0 });
    expect(stats.latency.count).toBe(1);
    await g.shutdown();
  });

  test("breaker counts successes, failures (timeouts included) and fallbacks, without opossum's dead fields", async () => {
    const slow = deferred<string>();
    let call = 0;
    const g = guard(
      async (_ctx, kind: 'ok' | 'fail' | 'slow') => {
        call++;
        if (kind === 'fail') throw new Error(`boom ${call}`);
        if (kind === 'slow') return slow.promise;
        return 'ok';
      },
      {
        CircuitBreaker,
        clock,
        limiter: { limit: 4, clock },
        timeoutMs: 100,
        volumeThreshold: 100, // stays CLOSED
        fallback: ({ reason }) => `fallback (${reason})`,
      },
    );
    await expect(g.fire('ok')).resolves.toBe('ok');
    await expect(g.fire('ok')).resolves.toBe('ok');
    await expect(g.fire('fail')).resolves.toBe('fallback (error)');
    const timedOut = g.fire('slow');
    await vi.advanceTimersByTimeAsync(100);
    await expect(timedOut).resolves.toBe('fallback (timeout)');
    slow.resolve('late');
    await flushMicrotasks();
    // Exactly these keys: no percentiles of −1, no latencyMean, no cache, rejects or timeouts counters.
    expect(g.stats().breaker).toEqual({ fires: 4, successes: 2, failures: 2, fallbacks: 2 });
    await g.shutdown();
  });
});
