import { describe, expect, test, vi } from 'vitest';
import { guard } from '../src/guard.js';
import { baseOptions } from './support/opossum.js';
import { clock, deferred, useFakeTimersPerTest } from './support/timers.js';

/** The real setImmediate (fake timers replace the global): a macrotask turn lets Node report unhandled rejections. */
const realSetImmediate = globalThis.setImmediate;

const base = baseOptions;

useFakeTimersPerTest();

describe('thenables', () => {
  const badThen = () =>
    ({
      // biome-ignore lint/suspicious/noThenProperty: the point of the test
      then() {
        throw new Error('then() broke');
      },
    }) as unknown as Promise<string>;

  test('an action returning a thenable whose then() throws rejects the caller, releases the permit and leaves no rejection behind', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const g = guard(badThen, { ...base, timeoutMs: 100 });
      let p: Promise<string> | undefined;
      expect(() => {
        p = g.fire();
      }).not.toThrow();
      await expect(p).rejects.toThrow('then() broke');
      expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
      await vi.advanceTimersByTimeAsync(500);
      await new Promise((r) => realSetImmediate(r));
      expect(unhandled).toEqual([]);
      expect(g.stats().breaker.failures).toBe(1);
      await g.shutdown();
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  test('a queued call whose action returns a thenable whose then() throws answers its caller and releases the permit', async () => {
    const hold = deferred<string>();
    let n = 0;
    const g = guard(() => (n++ === 0 ? hold.promise : badThen()), {
      ...base,
      timeoutMs: 100,
      limiter: { limit: 1, maxQueued: 5, clock },
      fallback: ({ reason, error }) => `${reason}: ${(error as Error).message}`,
    });
    const first = g.fire();
    const queued = g.fire();
    hold.resolve('one');
    expect(await first).toBe('one');
    expect(await queued).toBe('error: then() broke');
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
    await vi.advanceTimersByTimeAsync(500);
    await g.shutdown();
  });
});
