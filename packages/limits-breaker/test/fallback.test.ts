import { LimitExceededError } from 'limits-core';
import { describe, expect, test, vi } from 'vitest';
import { CallTimeoutError, CircuitOpenError } from '../src/errors.js';
import { guard } from '../src/guard.js';
import type { FallbackCause } from '../src/types.js';
import { baseOptions } from './support/opossum.js';
import { clock, useFakeTimersPerTest } from './support/timers.js';

const base = baseOptions;

useFakeTimersPerTest();

describe('fallback', () => {
  test('the fallback receives the reason and the error that caused it, and stats().breaker.fallbacks counts fallbacks', async () => {
    let mode: 'fail' | 'hang' | 'ok' = 'fail';
    const boom = new Error('boom');
    const causes: FallbackCause[] = [];
    const events: FallbackCause[] = [];
    const g = guard(
      (_ctx, x: number) => {
        if (mode === 'fail') return Promise.reject(boom);
        if (mode === 'hang') return new Promise<number>(() => {});
        return Promise.resolve(x);
      },
      {
        ...base,
        timeoutMs: 100,
        errorThresholdPercentage: 100,
        limiter: { limit: 1, maxQueued: 0, clock },
        fallback: (cause, x) => {
          causes.push(cause);
          return -x;
        },
      },
    );
    g.on('fallback', (e) => events.push(e));
    expect(await g.fire(1)).toBe(-1);
    mode = 'hang';
    const hung = g.fire(2);
    expect(await g.fire(3)).toBe(-3); // refused by the full limiter
    await vi.advanceTimersByTimeAsync(100);
    expect(await hung).toBe(-2);
    g.breaker.open();
    expect(await g.fire(4)).toBe(-4);
    expect(causes.map((c) => c.reason)).toEqual(['error', 'limiter', 'timeout', 'open']);
    expect(causes[0]?.error).toBe(boom);
    expect(causes[1]?.error).toBeInstanceOf(LimitExceededError);
    expect(causes[2]?.error).toBeInstanceOf(CallTimeoutError);
    expect(causes[3]?.error).toBeInstanceOf(CircuitOpenError);
    expect(events).toEqual(causes);
    expect(g.stats().breaker.fallbacks).toBe(4);
    await g.shutdown();
  });

  test('a fallback that throws is not counted as a fallback served', async () => {
    const g = guard(() => Promise.reject(new Error('x')), {
      ...base,
      errorThresholdPercentage: 100,
      fallback: () => {
        throw new Error('fallback broke');
      },
    });
    await expect(g.fire()).rejects.toThrow('fallback broke');
    expect(g.stats().breaker.fallbacks).toBe(0);
    await g.shutdown();
  });
});
