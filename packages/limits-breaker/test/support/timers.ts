import type { Clock } from 'limits-core';
import { afterEach, beforeEach, vi } from 'vitest';

/** A clock on the global timers, which the tests fake with `vi.useFakeTimers()`. */
export const clock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** A promise with its resolve and reject functions, to settle an action from the test. */
export function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets `turns` microtask turns run (promise chains settle without timers moving). */
export async function flushMicrotasks(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await Promise.resolve();
}

/** Every test of the enclosing `describe` runs on vitest's fake timers (real ones restored after). */
export function useFakeTimersPerTest(): void {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}
