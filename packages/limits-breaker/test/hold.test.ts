import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type LeakEvent, Limiter, type ReleaseEvent } from 'limits-core';
import { describe, expect, test, vi } from 'vitest';
import { CallContext, type PermitHold } from '../src/CallContext.js';
import { guard } from '../src/guard.js';
import { opossumVersions } from './support/opossum.js';
import { clock, deferred, flushMicrotasks, useFakeTimersPerTest } from './support/timers.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const flush = () => flushMicrotasks(10);

/** A shared limiter of `limit` permits whose `release` events are recorded. */
function recordingLimiter(limit = 1) {
  const limiter = new Limiter({ limit, maxQueued: 10, clock });
  const releases: ReleaseEvent[] = [];
  limiter.on('release', (e) => releases.push(e));
  return { limiter, releases };
}

describe.each(opossumVersions)('ctx.hold() on %s', (_name, CircuitBreaker) => {
  useFakeTimersPerTest();

  test('the caller is answered when the action settles while the permit stays held until release', async () => {
    const { limiter, releases } = recordingLimiter();
    let hold: PermitHold | undefined;
    const g = guard(
      async (ctx) => {
        hold = ctx.hold();
        return 'body pending';
      },
      { CircuitBreaker, clock, limiter },
    );
    await expect(g.fire()).resolves.toBe('body pending');
    expect(limiter.inflight).toBe(1);
    expect(releases).toEqual([]);
    expect(g.stats().breaker.successes).toBe(1);
    hold?.release();
    expect(limiter.inflight).toBe(0);
    expect(releases.map((e) => e.outcome)).toEqual(['success']);
    await g.shutdown();
  });

  test('a held permit keeps the next call queued until the hold is released', async () => {
    const { limiter } = recordingLimiter(1);
    const holds: PermitHold[] = [];
    const g = guard(
      async (ctx, n: number) => {
        holds.push(ctx.hold());
        return n;
      },
      { CircuitBreaker, clock, limiter },
    );
    await expect(g.fire(1)).resolves.toBe(1);
    let second = false;
    const p = g.fire(2).then(() => {
      second = true;
    });
    await flush();
    expect(second).toBe(false);
    expect(limiter.queued).toBe(1);
    holds[0]?.release();
    await p;
    expect(second).toBe(true);
    holds[1]?.release();
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('release without an outcome uses the outcome the guard gave the action, which the breaker already counted', async () => {
    const { limiter, releases } = recordingLimiter();
    let hold: PermitHold | undefined;
    const g = guard(
      async (ctx) => {
        hold = ctx.hold();
        return 503;
      },
      { CircuitBreaker, clock, limiter, classify: (_e, v) => (v === 503 ? 'dropped' : undefined) },
    );
    await g.fire();
    await flush(); // (opossum counts through its own promise chain)
    expect(g.stats().breaker.failures).toBe(1);
    expect(limiter.inflight).toBe(1);
    hold?.release();
    expect(releases.map((e) => e.outcome)).toEqual(['dropped']);
    await g.shutdown();
  });

  test('release with an outcome reports that outcome to the limiter and the first release wins', async () => {
    const { limiter, releases } = recordingLimiter();
    let hold: PermitHold | undefined;
    const g = guard(
      async (ctx) => {
        hold = ctx.hold();
      },
      { CircuitBreaker, clock, limiter },
    );
    await g.fire();
    hold?.release('failure');
    hold?.release('success');
    hold?.release();
    expect(releases.map((e) => e.outcome)).toEqual(['failure']);
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('release refuses an unknown outcome and keeps the permit held', async () => {
    const { limiter } = recordingLimiter();
    let hold: PermitHold | undefined;
    const g = guard(
      async (ctx) => {
        hold = ctx.hold();
      },
      { CircuitBreaker, clock, limiter },
    );
    await g.fire();
    expect(() => hold?.release('ok' as never)).toThrow(RangeError);
    expect(() => hold?.release(1 as never)).toThrow(TypeError);
    expect(limiter.inflight).toBe(1);
    hold?.release('ignore');
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('a synchronous action can hold its permit', async () => {
    const { limiter } = recordingLimiter();
    let hold: PermitHold | undefined;
    const g = guard(
      (ctx) => {
        hold = ctx.hold();
        return 'sync';
      },
      { CircuitBreaker, clock, limiter, timeoutMs: false },
    );
    await expect(g.fire()).resolves.toBe('sync');
    expect(limiter.inflight).toBe(1);
    hold?.release();
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('holding without a timeout works on the derived promise path too', async () => {
    const { limiter } = recordingLimiter();
    let hold: PermitHold | undefined;
    const g = guard(
      async (ctx) => {
        hold = ctx.hold();
        return 1;
      },
      { CircuitBreaker, clock, limiter, timeoutMs: false },
    );
    await expect(g.fire()).resolves.toBe(1);
    expect(limiter.inflight).toBe(1);
    hold?.release();
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('hold after the action settled throws a clear error and the permit is already back', async () => {
    const { limiter } = recordingLimiter();
    let ctx: CallContext | undefined;
    const g = guard(
      async (c) => {
        ctx = c;
      },
      { CircuitBreaker, clock, limiter },
    );
    await g.fire();
    expect(limiter.inflight).toBe(0);
    expect(() => ctx?.hold()).toThrow(/before it settles/);
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('a second hold in one call throws and a bare CallContext cannot hold', async () => {
    const { limiter } = recordingLimiter();
    let error: unknown;
    let first: PermitHold | undefined;
    const g = guard(
      async (ctx) => {
        first = ctx.hold();
        try {
          ctx.hold();
        } catch (e) {
          error = e;
        }
      },
      { CircuitBreaker, clock, limiter },
    );
    await g.fire();
    expect(error).toMatchObject({ code: 'HOLD_STATE', message: expect.stringMatching(/already/) });
    first?.release();
    expect(limiter.inflight).toBe(0);
    expect(() => new CallContext().hold()).toThrow(/only inside a guarded call/);
    await g.shutdown();
  });

  test('an action that rejects after holding releases its permit at once and a later release does nothing', async () => {
    const { limiter, releases } = recordingLimiter();
    let hold: PermitHold | undefined;
    const g = guard(
      async (ctx) => {
        hold = ctx.hold();
        throw new Error('boom');
      },
      { CircuitBreaker, clock, limiter },
    );
    await expect(g.fire()).rejects.toThrow('boom');
    expect(limiter.inflight).toBe(0);
    expect(releases.map((e) => e.outcome)).toEqual(['failure']);
    hold?.release('success');
    expect(releases).toHaveLength(1);
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('an action that throws synchronously after holding releases its permit at once', async () => {
    const { limiter, releases } = recordingLimiter();
    let hold: PermitHold | undefined;
    const g = guard(
      (ctx) => {
        hold = ctx.hold();
        throw new Error('sync boom');
      },
      { CircuitBreaker, clock, limiter },
    );
    await expect(g.fire()).rejects.toThrow('sync boom');
    expect(limiter.inflight).toBe(0);
    hold?.release();
    expect(releases).toHaveLength(1);
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('a timed-out held call answers at the timeout and releases as dropped when the action ends', async () => {
    const { limiter, releases } = recordingLimiter();
    const gate = deferred();
    let hold: PermitHold | undefined;
    const g = guard(
      async (ctx) => {
        hold = ctx.hold();
        await gate.promise;
      },
      { CircuitBreaker, clock, limiter, timeoutMs: 100 },
    );
    const answer = g.fire();
    answer.catch(() => {});
    await vi.advanceTimersByTimeAsync(100);
    await expect(answer).rejects.toMatchObject({ code: 'CALL_TIMEOUT' });
    expect(limiter.inflight).toBe(1);
    gate.resolve();
    await flush();
    expect(limiter.inflight).toBe(0);
    expect(releases.map((e) => e.outcome)).toEqual(['dropped']);
    hold?.release('success');
    expect(releases).toHaveLength(1);
    await g.shutdown();
  });

  test('a hold released while the action runs releases the permit when it settles, with that outcome', async () => {
    const { limiter, releases } = recordingLimiter();
    const gate = deferred();
    const g = guard(
      async (ctx) => {
        ctx.hold().release('dropped');
        await gate.promise;
        return 'ok';
      },
      { CircuitBreaker, clock, limiter },
    );
    const answer = g.fire();
    await flush();
    expect(limiter.inflight).toBe(1);
    gate.resolve();
    await expect(answer).resolves.toBe('ok');
    expect(limiter.inflight).toBe(0);
    expect(releases.map((e) => e.outcome)).toEqual(['dropped']);
    await g.shutdown();
  });

  test('a hold released early without an outcome leaves the action its own outcome', async () => {
    const { limiter, releases } = recordingLimiter();
    const g = guard(
      async (ctx) => {
        ctx.hold().release();
        return 'ok';
      },
      { CircuitBreaker, clock, limiter },
    );
    await g.fire();
    expect(releases.map((e) => e.outcome)).toEqual(['success']);
    expect(limiter.inflight).toBe(0);
    await g.shutdown();
  });

  test('shutdown aborts a held call and releases its permit, and a later release does nothing', async () => {
    const { limiter, releases } = recordingLimiter(3);
    let hold: PermitHold | undefined;
    let signal: AbortSignal | undefined;
    const g = guard(
      async (ctx) => {
        signal = ctx.signal;
        hold = ctx.hold();
        // A release from the abort listener (a body stream erroring) must not disturb shutdown.
        ctx.signal.addEventListener('abort', () => hold?.release('dropped'));
      },
      { CircuitBreaker, clock, limiter },
    );
    const gate = deferred();
    const other = guard(() => gate.promise, { CircuitBreaker, clock, limiter });
    await g.fire();
    const running = g.fire();
    await flush();
    const unrelated = other.fire();
    await running;
    expect(limiter.inflight).toBe(3); // two held (one per fire), one running in the other guard
    await g.shutdown();
    expect(signal?.aborted).toBe(true);
    expect(limiter.inflight).toBe(1); // the other guard's call
    expect(releases.map((e) => e.outcome)).toEqual(['ignore', 'ignore']);
    hold?.release('success');
    expect(releases).toHaveLength(2);
    gate.resolve();
    await unrelated;
    await other.shutdown();
    expect(limiter.inflight).toBe(0);
  });
});

describe('ctx.hold() garbage collection', () => {
  test('a hold collected unreleased is reclaimed as ignore and reported on the limiter leak event', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const leaks: LeakEvent[] = [];
    const releases: ReleaseEvent[] = [];
    limiter.on('leak', (e) => leaks.push(e));
    limiter.on('release', (e) => releases.push(e));
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const g = guard(
      async (ctx) => {
        ctx.hold(); // dropped on the floor
        return 'ok';
      },
      { limiter },
    );
    await g.fire();
    expect(limiter.inflight).toBe(1);
    for (let i = 0; i < 20 && limiter.inflight > 0; i++) {
      gc();
      await new Promise((r) => setImmediate(r));
    }
    expect(limiter.inflight).toBe(0);
    expect(leaks).toHaveLength(1);
    expect(leaks[0]?.cost).toBe(1);
    expect(releases.map((e) => e.outcome)).toEqual(['ignore']);
    expect(warning).toHaveBeenCalledTimes(1);
    expect(String(warning.mock.calls[0]?.[0])).toMatch(/ctx\.hold\(\)/);
    warning.mockRestore();
    await g.shutdown();
  });
});
