import { Limiter } from 'limits-core';
import { describe, expect, test } from 'vitest';
import { limitFetch, limitInterceptor } from '../src/index.js';

/** What `fn` throws: its class and message. */
function thrown(fn: () => unknown): { type: string; message: string } {
  try {
    fn();
  } catch (error) {
    return { type: (error as Error).constructor.name, message: (error as Error).message };
  }
  throw new Error('expected a throw');
}

describe('the options limitFetch and limitInterceptor share', () => {
  const limiter = new Limiter({ limit: 1 });
  test.each([
    [{ guard: {} }, 'TypeError', /^limits: option "guard" must be a guard made by fetchGuard/],
    [{ limiter, classify: 1 }, 'TypeError', /^limits: option "classify" must be a function/],
    [{ limiter, timeoutMs: 0 }, 'RangeError', /^limits: option "timeoutMs" must be/],
    [{ limiter, timeoutMs: '5' }, 'TypeError', /^limits: option "timeoutMs" must be/],
    [{ limiter, bodyTimeoutMs: -1 }, 'RangeError', /^limits: option "bodyTimeoutMs" must be/],
    [{ limiter, release: 'end' }, 'RangeError', /^limits: option "release" must be one of/],
    [{ limiter, retry: {} }, 'TypeError', /^limits: option "retry" must be a RetryPolicy/],
    [{ limiter, retryable: true }, 'TypeError', /^limits: option "retryable" must be a function/],
    [{ limiter, clock: {} }, 'TypeError', /^limits: option "clock\.now" must be a function/],
  ])('are refused alike by both: %o', (options, type, message) => {
    const byFetch = thrown(() => limitFetch(fetch, options as never));
    const byInterceptor = thrown(() => limitInterceptor(options as never));
    expect(byFetch.type).toBe(type);
    expect(byFetch.message).toMatch(message);
    expect(byInterceptor).toEqual(byFetch);
  });
});
