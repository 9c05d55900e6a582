import { getEventListeners } from 'node:events';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, test, vi } from 'vitest';
import type { LimitAlgorithm, Sample } from '../src/algorithms/LimitAlgorithm.js';
import { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { CostEstimator } from '../src/fairness/CostEstimator.js';
import type { Clock } from '../src/internal/clock.js';
import type { ReleaseEvent } from '../src/limiter/events.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { deferred, FakeClock, flush } from './support/FakeClock.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** The reason a promise rejected with (fails the test when it resolves). */
async function reason(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** A clock whose `now()` can jump while its timers keep real (fake) time, like `Date.now` with Node timers. */
class JumpyClock implements Clock {
  readonly base = new FakeClock(10_000_000);
  offset = 0;
  now(): number {
    return this.base.now() + this.offset;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    return this.base.setTimeout(fn, ms);
  }
  clearTimeout(handle: unknown): void {
    this.base.clearTimeout(handle);
  }
}

describe('bad acquire input is refused before anything changes', () => {
  for (const priority of [Number.NaN, Infinity, -Infinity, 'high', null, {}]) {
    test(`acquire({ priority: ${String(priority)} }) rejects and leaves no ghost waiter behind`, async () => {
      const limiter = new Limiter({ limit: 1, maxQueued: 10, priority: {} });
      const held = limiter.tryAcquire() as Permit;
      const error = await reason(limiter.acquire({ priority: priority as number }));
      const numeric = typeof priority === 'number' && !Number.isNaN(priority);
      expect(error).toBeInstanceOf(numeric ? RangeError : TypeError);
      expect(String((error as Error).message)).toContain('option "priority"');
      expect(limiter.queued).toBe(0);
      held.success();
      expect(limiter.tryAcquire()).toBeDefined();
    });
  }

  test('a signal that is not an AbortSignal is refused and later releases still work', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const held = limiter.tryAcquire() as Permit;
    const error = await reason(limiter.acquire({ signal: {} as AbortSignal }));
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe(
      'limits: option "signal" must be an AbortSignal, got an object',
    );
    expect(limiter.queued).toBe(0);
    expect(() => held.success()).not.toThrow();
    await limiter.close();
  });

  test('a fairness quantum function returning 0 leaves no waiter queued and close() works', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10, fairness: { quantum: () => 0 } });
    const held = limiter.tryAcquire() as Permit;
    const error = await reason(limiter.acquire({ tenant: 'a' }));
    expect(error).toBeInstanceOf(RangeError);
    expect(limiter.queued).toBe(0);
    held.success();
    expect(limiter.tryAcquire()).toBeDefined();
    await expect(limiter.close({ timeoutMs: 0 })).resolves.toBeDefined();
  });

  // A plug-in's error while reporting must not keep the permit.
  test("a cost estimator whose observe() throws is reported on 'error' and the run's permit still goes back", async () => {
    const bug = new Error('observe bug');
    class Failing extends CostEstimator {
      override observe(): void {
        throw bug;
      }
    }
    const limiter = new Limiter({
      limit: 2,
      maxQueued: 10,
      fairness: { estimator: new Failing() },
    });
    const errors: unknown[] = [];
    limiter.on('error', (e) => errors.push(e));
    await expect(limiter.run(async () => 'at once', { tenant: 'a', kind: 'k' })).resolves.toBe(
      'at once',
    );
    const held = [limiter.tryAcquire(), limiter.tryAcquire()] as Permit[];
    const queued = limiter.run(async () => 'queued', { tenant: 'a', kind: 'k' });
    for (const p of held) p.success();
    await expect(queued).resolves.toBe('queued');
    expect(errors).toEqual([bug, bug]);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });

  test('a cost estimator that throws leaves no waiter queued', async () => {
    class Failing extends CostEstimator {
      override estimate(): number {
        throw new Error('estimator bug');
      }
    }
    const limiter = new Limiter({
      limit: 1,
      maxQueued: 10,
      fairness: { estimator: new Failing() },
    });
    const held = limiter.tryAcquire() as Permit;
    await expect(limiter.acquire({ tenant: 'a', kind: 'k' })).rejects.toThrow('estimator bug');
    expect(limiter.queued).toBe(0);
    expect(limiter.snapshot().tenants).toBe(0);
    held.success();
    await expect(limiter.close()).resolves.toMatchObject({ drained: true });
  });

  // bad input
  test('acquire() reports bad options as a rejected promise, never a synchronous throw', async () => {
    const limiter = new Limiter({ limit: 1 });
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = limiter.acquire({ cost: '2' as unknown as number });
    }).not.toThrow();
    const error = await reason(promise as Promise<unknown>);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toBe(
      'limits: option "cost" must be a number in (0, Infinity), got "2"',
    );
    expect(limiter.inflight).toBe(0);
  });

  // bad input
  test('unknown acquire options are refused with the nearest valid name', async () => {
    const limiter = new Limiter({ limit: 1 });
    const error = await reason(limiter.acquire({ timoutMs: 5 } as never));
    expect((error as Error).message).toBe(
      'limits: unknown option "timoutMs" for acquire; did you mean "timeoutMs"?',
    );
    expect(() => limiter.tryAcquire({ prority: 1 } as never)).toThrow(
      'limits: unknown option "prority" for tryAcquire; did you mean "priority"?',
    );
    await expect(limiter.run(() => 1, { sginal: undefined } as never)).rejects.toThrow(
      'did you mean "signal"?',
    );
    expect(limiter.inflight).toBe(0);
  });

  // bad input
  test('options that are not an object are refused', async () => {
    const limiter = new Limiter({ limit: 1 });
    await expect(limiter.acquire(5 as never)).rejects.toThrow(
      'limits: acquire options must be an object, got 5',
    );
    expect(() => limiter.tryAcquire('x' as never)).toThrow(TypeError);
  });

  // bad input
  test('tryAcquire() throws for bad options even when capacity is free', () => {
    const limiter = new Limiter({ limit: 1 });
    expect(() => limiter.tryAcquire({ timeoutMs: -5 })).toThrow(RangeError);
    expect(() => limiter.tryAcquire({ timeoutMs: '100' as never })).toThrow(TypeError);
    expect(() => limiter.tryAcquire({ bytes: -1 })).toThrow(RangeError);
    expect(() => limiter.tryAcquire({ tenant: 5 as never })).toThrow(
      'limits: option "tenant" must be a string, got 5',
    );
    expect(() => limiter.tryAcquire({ kind: null as never })).toThrow(TypeError);
    expect(() => limiter.tryAcquire({ deadline: Number.NaN })).toThrow(TypeError);
    expect(() => limiter.tryAcquire({ signal: 'x' as never })).toThrow(TypeError);
    expect(limiter.inflight).toBe(0);
  });

  test('run() validates timeoutMs, bytes and priority on the fast path too', async () => {
    const limiter = new Limiter({ limit: 5 });
    await expect(limiter.run(() => 1, { timeoutMs: '100' as never })).rejects.toThrow(TypeError);
    await expect(limiter.run(() => 1, { timeoutMs: -5 })).rejects.toThrow(RangeError);
    await expect(limiter.run(() => 1, { bytes: Number.NaN })).rejects.toThrow(TypeError);
    await expect(limiter.run(() => 1, { priority: Infinity })).rejects.toThrow(RangeError);
    expect(limiter.inflight).toBe(0);
  });

  // bad input
  test('run() with a task that is not a function names the argument', async () => {
    const limiter = new Limiter({ limit: 1 });
    await expect(limiter.run('x' as never)).rejects.toThrow(
      'limits: argument "task" of run() must be a function, got "x"',
    );
    await expect(limiter.run(undefined as never)).rejects.toThrow(TypeError);
    expect(limiter.inflight).toBe(0);
  });

  // bad input
  test('acquireWith validates like acquire and changes nothing on bad input', () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5, priority: {} });
    const held = limiter.tryAcquire() as Permit;
    const request = { granted: vi.fn(), refused: vi.fn() };
    expect(() => limiter.acquireWith(request, { priority: Number.NaN })).toThrow(TypeError);
    expect(limiter.queued).toBe(0);
    held.success();
  });
});

describe('algorithm values are checked', () => {
  test('a custom algorithm whose initial limit is NaN is refused at construction', () => {
    expect(() => new Limiter({ algorithm: { limit: Number.NaN, update: () => 0 } })).toThrow(
      TypeError,
    );
    expect(() => new Limiter({ algorithm: { limit: -1, update: () => 0 } })).toThrow(
      /option "algorithm\.limit"/,
    );
    expect(() => new Limiter({ algorithm: { limit: Infinity, update: () => 0 } })).toThrow(
      RangeError,
    );
  });

  test('a limit that turns NaN after an update keeps the last good limit and is reported naming the algorithm', async () => {
    class Broken implements LimitAlgorithm {
      limit = 4;
      update(_sample: Sample): number {
        this.limit = Number.NaN;
        return this.limit;
      }
    }
    const limiter = new Limiter({
      algorithm: new Broken(),
      probeSlots: 2,
      stallThresholdMs: Infinity,
    });
    const errors: unknown[] = [];
    limiter.on('error', (e) => errors.push(e));
    (limiter.tryAcquire() as Permit).success();
    expect(limiter.limit).toBe(4);
    expect(limiter.capacity).toBe(4);
    expect(errors).toHaveLength(1);
    expect(String((errors[0] as Error).message)).toMatch(/Broken/);
    expect(String((errors[0] as Error).message)).toMatch(/NaN/);
    const permits = [1, 2, 3, 4].map(() => limiter.tryAcquire());
    expect(permits.every((p) => p !== undefined)).toBe(true);
  });

  test('a negative or infinite limit from an update never takes capacity below probeSlots', () => {
    const alg = {
      limit: 3,
      next: -5,
      update(): number {
        alg.limit = alg.next;
        return alg.limit;
      },
    };
    const limiter = new Limiter({ algorithm: alg, probeSlots: 2, stallThresholdMs: Infinity });
    limiter.on('error', () => {});
    (limiter.tryAcquire() as Permit).success();
    expect(limiter.capacity).toBe(3);
    alg.next = Infinity;
    (limiter.tryAcquire() as Permit).success();
    expect(limiter.capacity).toBe(3);
    alg.next = 0;
    (limiter.tryAcquire() as Permit).success();
    expect(limiter.limit).toBe(0);
    expect(limiter.capacity).toBe(2);
  });
});

describe('leaked permits', () => {
  /** Runs gc and lets finalizers run until `done()` or a bound. */
  async function collect(done: () => boolean, rounds = 200): Promise<void> {
    // Permits are registered with the collector once still held after the tracking window (100 ms).
    for (let i = 0; i < rounds && !done(); i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  test('a permit from acquire() collected without completion is reclaimed and reported once', async () => {
    const limiter = new Limiter({ limit: 2 });
    const leaks: unknown[] = [];
    limiter.on('leak', (e) => leaks.push(e));
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      await (async () => {
        await limiter.acquire();
        await limiter.acquire({ cost: 1 });
      })();
      expect(limiter.inflight).toBe(2);
      await collect(() => leaks.length >= 2);
      expect(leaks).toHaveLength(2);
      expect(leaks[0]).toMatchObject({ cost: 1 });
      expect(limiter.inflight).toBe(0);
      expect(warn).toHaveBeenCalledTimes(1);
      await limiter.close();
    } finally {
      warn.mockRestore();
    }
  });

  test('a permit held past the tracking window and then completed is released normally, not reported', async () => {
    const limiter = new Limiter({ limit: 1 });
    const leaks: unknown[] = [];
    limiter.on('leak', (e) => leaks.push(e));
    const permit = await limiter.acquire();
    await new Promise((r) => setTimeout(r, 150));
    expect(limiter.inflight).toBe(1);
    permit.success();
    expect(permit.released).toBe(true);
    expect(limiter.inflight).toBe(0);
    permit.success();
    expect(limiter.inflight).toBe(0);
    await collect(() => false, 20);
    expect(leaks).toHaveLength(0);
  });

  test('with trackLeaks "stack" the leak event says where the permit was acquired', async () => {
    const limiter = new Limiter({ limit: 1, trackLeaks: 'stack' });
    const leaks: Array<{ stack?: string }> = [];
    limiter.on('leak', (e) => leaks.push(e));
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      (function leakyCaller() {
        limiter.tryAcquire();
      })();
      await collect(() => leaks.length > 0);
      expect(leaks[0]?.stack).toMatch(/leakyCaller/);
    } finally {
      warn.mockRestore();
    }
  });

  test('a queued acquire whose permit is never completed is reclaimed too', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 1 });
    const leaks: unknown[] = [];
    limiter.on('leak', (e) => leaks.push(e));
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const first = limiter.tryAcquire() as Permit;
      void limiter.acquire();
      first.success();
      await flush();
      expect(limiter.inflight).toBe(1);
      await collect(() => leaks.length > 0);
      expect(limiter.inflight).toBe(0);
    } finally {
      warn.mockRestore();
    }
  });

  test('close({ timeoutMs }) resolves after the timeout and reports what is still held', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 3, clock, trackLeaks: 'off' });
    const held = await limiter.acquire({ cost: 2 });
    let result: unknown;
    void limiter.close({ timeoutMs: 100 }).then((r) => {
      result = r;
    });
    await clock.advance(99);
    expect(result).toBeUndefined();
    await clock.advance(1);
    expect(result).toEqual({ drained: false, permits: 1, inflight: 2 });
    held.success();
    await expect(limiter.close()).resolves.toEqual({ drained: true, permits: 0, inflight: 0 });
    expect(clock.pending).toBe(0);
  });

  test('close({ timeoutMs }) resolves as drained and clears its timer when the permits come back first', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 3, clock });
    const held = await limiter.acquire();
    const closing = limiter.close({ timeoutMs: 1000 });
    expect(clock.pending).toBe(1);
    await clock.advance(10);
    held.success();
    await expect(closing).resolves.toEqual({ drained: true, permits: 0, inflight: 0 });
    expect(clock.pending).toBe(0);
  });

  // bad input
  test('close() options are validated', async () => {
    const limiter = new Limiter({ limit: 1 });
    await expect(limiter.close({ timeoutMs: -1 })).rejects.toThrow(RangeError);
    await expect(limiter.close({ timeout: 5 } as never)).rejects.toThrow(
      'did you mean "timeoutMs"?',
    );
    expect(limiter.snapshot().closed).toBe(false);
  });

  // bad input
  test('the trackLeaks option is validated', () => {
    expect(() => new Limiter({ trackLeaks: true as never })).toThrow(TypeError);
    expect(() => new Limiter({ trackLeaks: 'yes' as never })).toThrow(RangeError);
  });
});

describe('time limits end to end', () => {
  test('run() with a timeout aborts the task signal with a TimeoutError and rejects at the deadline; the permit is held until the task settles', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, clock });
    const releases: ReleaseEvent[] = [];
    limiter.on('release', (e) => releases.push(e));
    const task = deferred<number>();
    let seen: AbortSignal | undefined;
    const result = limiter.run(
      (signal) => {
        seen = signal;
        return task.promise;
      },
      { timeoutMs: 300 },
    );
    let error: unknown;
    result.catch((e) => {
      error = e;
    });
    await clock.advance(299);
    expect(seen?.aborted).toBe(false);
    expect(error).toBeUndefined();
    await clock.advance(1);
    expect(seen?.aborted).toBe(true);
    expect(seen?.reason).toMatchObject({ name: 'TimeoutError' });
    expect(error).toBe(seen?.reason);
    expect(limiter.inflight).toBe(1);
    await clock.advance(200);
    task.resolve(1);
    await flush();
    expect(limiter.inflight).toBe(0);
    expect(releases.map((r) => r.outcome)).toEqual(['dropped']);
    expect(clock.pending).toBe(0);
  });

  test('a queued run() keeps its time limit across the wait and the execution', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 5, clock, initialServiceMs: 10 });
    const first = deferred();
    void limiter.run(() => first.promise);
    let seen: AbortSignal | undefined;
    const task = deferred();
    const result = reason(
      limiter.run(
        (signal) => {
          seen = signal;
          return task.promise;
        },
        { deadline: 300 },
      ),
    );
    await clock.advance(100);
    first.resolve();
    await flush();
    expect(seen?.aborted).toBe(false);
    await clock.advance(200);
    expect(seen?.aborted).toBe(true);
    expect(((await result) as Error).name).toBe('TimeoutError');
    task.resolve();
    await flush();
    expect(limiter.inflight).toBe(0);
  });

  // Found by bench/soak.mjs: a late event loop fires the task's own timer first.
  test('a task that settles after its deadline, before the deadline timer ran, is still a timeout', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 2, clock });
    const outcomes: string[] = [];
    limiter.on('release', (e) => outcomes.push(e.outcome));
    let seen: AbortSignal | undefined;
    const task = deferred<string>();
    const result = reason(
      limiter.run(
        (signal) => {
          seen = signal;
          return task.promise;
        },
        { timeoutMs: 20 },
      ),
    );
    clock.jump(50); // the loop was blocked: time passed, no timer ran
    task.resolve('late');
    expect(((await result) as Error).name).toBe('TimeoutError');
    expect(seen?.aborted).toBe(true);
    expect(outcomes).toEqual(['dropped']);
    expect(clock.pending).toBe(0);
    expect(limiter.inflight).toBe(0);
  });

  test('a task declaring no parameter is still bounded by its time limit', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, clock });
    const task = deferred();
    let error: unknown;
    limiter
      .run(() => task.promise, { timeoutMs: 100 })
      .catch((e) => {
        error = e;
      });
    await clock.advance(100);
    expect(error).toMatchObject({ name: 'TimeoutError' });
    expect(limiter.inflight).toBe(1);
    task.reject(new Error('late'));
    await flush();
    expect(limiter.inflight).toBe(0);
  });

  test('a task that ends before its deadline clears its timer and resolves', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, clock });
    await expect(limiter.run(async (signal) => signal.aborted, { timeoutMs: 50 })).resolves.toBe(
      false,
    );
    expect(clock.pending).toBe(0);
  });

  test('a listener a task adds to its signal does not outlive the task', async () => {
    const limiter = new Limiter({ limit: 10 });
    const signals = new Set<AbortSignal>();
    for (let i = 0; i < 100; i++) {
      await limiter.run(async (signal) => {
        signals.add(signal);
        signal.addEventListener('abort', () => {});
      });
    }
    for (const s of signals) expect(getEventListeners(s, 'abort').length).toBeLessThanOrEqual(1);
  });

  test('tasks that can never be aborted share an inert signal on which no listener stays, queued or not', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const seen: AbortSignal[] = [];
    const gate = deferred();
    const first = limiter.run((signal) => {
      seen.push(signal);
      signal.addEventListener('abort', () => {});
      return gate.promise;
    });
    const queued = limiter.run(async (signal) => {
      seen.push(signal);
      signal.addEventListener('abort', () => {});
    });
    gate.resolve(undefined);
    await Promise.all([first, queued]);
    expect(seen.every((s) => s instanceof AbortSignal && !s.aborted)).toBe(true);
    for (const s of seen) expect(getEventListeners(s, 'abort')).toHaveLength(0);
  });

  test("each task run with the caller's signal gets its own signal that follows the caller's", async () => {
    const limiter = new Limiter({ limit: 10 });
    const caller = new AbortController();
    const seen: AbortSignal[] = [];
    const tasks = [deferred(), deferred()];
    const runs = tasks.map((t) =>
      limiter.run(
        (signal) => {
          seen.push(signal);
          return t.promise;
        },
        { signal: caller.signal },
      ),
    );
    expect(seen[0]).not.toBe(seen[1]);
    expect(seen[0]).not.toBe(caller.signal);
    caller.abort(new Error('stop'));
    expect(seen.every((s) => s.aborted)).toBe(true);
    for (const t of tasks) t.resolve();
    await Promise.allSettled(runs);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });

  test('a deadline already past, or timeoutMs 0, is refused with reason "deadline" even when capacity is free', async () => {
    const clock = new FakeClock(1000);
    const limiter = new Limiter({ limit: 5, clock });
    const a = (await reason(limiter.acquire({ deadline: 999 }))) as LimitExceededError;
    expect(a).toBeInstanceOf(LimitExceededError);
    expect(a.reason).toBe('deadline');
    const b = (await reason(limiter.run(() => 1, { timeoutMs: 0 }))) as LimitExceededError;
    expect(b.reason).toBe('deadline');
    expect(limiter.tryAcquire({ deadline: 1000 })).toBeUndefined();
    expect(limiter.inflight).toBe(0);
  });
});

describe('queue order and clocks', () => {
  test('LIFO serves a new waiter at once when it is next in line and fits', async () => {
    const limiter = new Limiter({ limit: 3, maxQueued: 10, queueOrder: 'lifo' });
    const held = limiter.tryAcquire({ cost: 2 }) as Permit;
    const big = limiter.acquire({ cost: 2 });
    let granted = false;
    void limiter.acquire({ cost: 1 }).then(() => {
      granted = true;
    });
    await flush();
    expect(granted).toBe(true);
    expect(limiter.queued).toBe(1);
    held.success();
    void big;
  });

  test('adaptive order serves a fitting newcomer at once while a queue stands', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({
      limit: 3,
      maxQueued: 10,
      queueOrder: 'adaptive',
      standingQueueMs: 50,
      clock,
    });
    limiter.tryAcquire({ cost: 2 });
    void limiter.acquire({ cost: 2 });
    let early = false;
    void limiter.acquire({ cost: 1 }).then(() => {
      early = true;
    });
    await flush();
    expect(early).toBe(false); // not standing yet: FIFO, the older waiter is next in line
    await clock.advance(60);
    let late = false;
    void limiter.acquire({ cost: 1 }).then(() => {
      late = true;
    });
    await flush();
    expect(late).toBe(true);
  });

  test('priority queueing serves a newcomer put first that fits at once; one not first waits', async () => {
    const limiter = new Limiter({ limit: 3, maxQueued: 10, priority: { agingPerSecond: 0 } });
    limiter.tryAcquire({ cost: 2 });
    void limiter.acquire({ cost: 2, priority: 1 });
    let low = false;
    void limiter.acquire({ cost: 1, priority: 0 }).then(() => {
      low = true;
    });
    let high = false;
    void limiter.acquire({ cost: 1, priority: 5 }).then(() => {
      high = true;
    });
    await flush();
    expect(high).toBe(true);
    expect(low).toBe(false);
    expect(limiter.queued).toBe(2);
  });

  test('a backward clock jump does not keep waiters queued past maxQueueWaitMs', async () => {
    const clock = new JumpyClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 5, maxQueueWaitMs: 100, clock });
    limiter.tryAcquire();
    let error: LimitExceededError | undefined;
    limiter.acquire().catch((e) => {
      error = e;
    });
    await clock.base.advance(10);
    clock.offset -= 3_600_000;
    await clock.base.advance(90);
    expect(error?.reason).toBe('expired');
    // Waiters that arrive after the jump get their full wait.
    const later = limiter.acquire();
    let settled = false;
    later.catch(() => {
      settled = true;
    });
    await clock.base.advance(99);
    expect(settled).toBe(false);
    await clock.base.advance(1);
    expect(settled).toBe(true);
  });

  test('a forward clock jump does not poison the service-time estimate', async () => {
    const clock = new JumpyClock();
    const limiter = new Limiter({ limit: 1, clock });
    for (let i = 0; i < 20; i++) {
      const p = limiter.tryAcquire({ timeoutMs: 1000 }) as Permit;
      await clock.base.advance(10);
      p.success();
    }
    const before = limiter.snapshot().serviceMs;
    const p = limiter.tryAcquire({ timeoutMs: 1000 }) as Permit;
    clock.offset += 3_600_000;
    p.success();
    expect(limiter.snapshot().serviceMs).toBeLessThanOrEqual(before * 2);
  });

  test('a backward clock jump during a call does not poison deadline admission', async () => {
    const clock = new JumpyClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 5, clock, initialServiceMs: 10 });
    const p = limiter.tryAcquire({ timeoutMs: 1000 }) as Permit;
    clock.offset -= 3_600_000;
    p.success();
    const q = limiter.tryAcquire({ timeoutMs: 1000 }) as Permit;
    await clock.base.advance(20);
    q.success();
    expect(limiter.snapshot().serviceMs).toBeGreaterThan(0);
    expect(limiter.snapshot().serviceMs).toBeLessThanOrEqual(1000);
    limiter.tryAcquire();
    const queued = limiter.acquire({ timeoutMs: 500 });
    queued.catch(() => {});
    expect(limiter.queued).toBe(1);
  });
});
