import { describe, expect, test, vi } from 'vitest';
import { CircuitOpenError } from '../src/errors.js';
import { guard } from '../src/guard.js';
import { baseOptions } from './support/opossum.js';
import { clock, deferred, flushMicrotasks, useFakeTimersPerTest } from './support/timers.js';

const flush = () => flushMicrotasks(20);

const base = baseOptions;

useFakeTimersPerTest();

describe('HALF_OPEN trials', () => {
  test('trials that time out and settle late never let more than probeSlots trials of an episode reach the dependency, and the trial count never goes negative', async () => {
    let down = true;
    let inFlight = 0;
    const g = guard(
      () => {
        if (down) return Promise.reject(new Error('down'));
        inFlight++;
        // The dependency is dead: the call hangs until the test lets it fail.
        return new Promise<string>((_resolve, reject) => {
          setTimeout(() => {
            inFlight--;
            reject(new Error('still down'));
          }, 1_500);
        });
      },
      {
        ...base,
        timeoutMs: 100,
        probeSlots: 2,
        resetTimeout: 1_000,
        limiter: { limit: 100, probeSlots: 2, clock },
      },
    );
    const seen: number[] = [];
    g.on('state', () => seen.push(g.stats().trials));
    await g.fire().catch(() => {});
    expect(g.state).toBe('OPEN');
    down = false;
    for (let round = 0; round < 5; round++) {
      await vi.advanceTimersByTimeAsync(1_000);
      expect(g.state).toBe('HALF_OPEN');
      const before = inFlight;
      const calls = Array.from({ length: 6 }, () => g.fire().catch((e: unknown) => e));
      await flush();
      // At most probeSlots new trials reached the dependency in this episode.
      expect(inFlight - before).toBeLessThanOrEqual(2);
      expect(g.stats().trials).toBeGreaterThanOrEqual(0);
      expect(g.stats().trials).toBeLessThanOrEqual(2);
      await vi.advanceTimersByTimeAsync(100); // the trials time out: the circuit re-opens
      expect(g.state).toBe('OPEN');
      expect(g.stats().trials).toBeGreaterThanOrEqual(0);
      await Promise.all(calls);
    }
    for (const t of seen) expect(t).toBeGreaterThanOrEqual(0);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(g.stats().trials).toBeGreaterThanOrEqual(0);
    await g.shutdown();
  });

  test('a trial of an earlier HALF_OPEN episode that settles late neither changes the circuit nor frees a trial slot of the current episode', async () => {
    let down = true;
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const g = guard(
      () => {
        if (down) return Promise.reject(new Error('down'));
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      {
        ...base,
        probeSlots: 2,
        resetTimeout: 1_000,
        limiter: { limit: 100, probeSlots: 2, clock },
      },
    );
    await g.fire().catch(() => {});
    down = false;
    await vi.advanceTimersByTimeAsync(1_000);
    const first = [g.fire().catch(() => 'x'), g.fire().catch(() => 'x')];
    await flush();
    expect(gates).toHaveLength(2);
    gates[0]?.reject(new Error('trial failed')); // re-opens the circuit
    await flush();
    expect(g.state).toBe('OPEN');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(g.state).toBe('HALF_OPEN');
    const second = [g.fire().catch(() => 'x'), g.fire().catch(() => 'x')];
    await flush();
    expect(gates).toHaveLength(4);
    expect(g.stats().trials).toBe(2);
    // The earlier episode's second trial fails now: it is not a trial of this episode.
    gates[1]?.reject(new Error('late'));
    await flush();
    expect(g.state).toBe('HALF_OPEN');
    expect(g.stats().trials).toBe(2);
    const extra = await g.fire().catch((e: unknown) => e);
    expect(extra).toBeInstanceOf(CircuitOpenError);
    expect(gates).toHaveLength(4);
    gates[2]?.resolve('ok');
    gates[3]?.resolve('ok');
    await Promise.all([...first, ...second]);
    expect(g.state).toBe('CLOSED');
    expect(g.stats().trials).toBe(0);
    await g.shutdown();
  });
});
