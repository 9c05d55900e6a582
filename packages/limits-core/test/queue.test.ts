import { describe, expect, test } from 'vitest';
import type { LimitAlgorithm, Sample } from '../src/algorithms/LimitAlgorithm.js';
import { LimitExceededError } from '../src/errors/LimitExceededError.js';
import type { ExpireEvent, QueueEvent, RejectEvent } from '../src/limiter/events.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { deferred, FakeClock, flush } from './support/FakeClock.js';

/** An algorithm whose limit the test sets. */
function settable(limit: number, maxLimit = 100) {
  return {
    limit,
    maxLimit,
    update(_sample: Sample) {
      return this.limit;
    },
  } satisfies LimitAlgorithm & { limit: number };
}

/** Collects the settled value or error of a promise without awaiting it. */
function track<T>(p: Promise<T>) {
  const state: { value?: T; error?: unknown; settled: boolean } = { settled: false };
  p.then(
    (value) => Object.assign(state, { value, settled: true }),
    (error: unknown) => Object.assign(state, { error, settled: true }),
  );
  return state;
}

describe('seed 000: 4 permits, 100 ms jobs, 4 running + 8 queued', () => {
  test('a request with 250 ms left is refused or expires without reaching the downstream', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 4, maxQueued: 100, clock });
    let downstreamCalls = 0;
    const job = () => {
      downstreamCalls++;
      return new Promise<void>((resolve) => clock.setTimeout(resolve, 100));
    };
    // Warm the service-time estimate (a fixed limit times one call in eight) with 100 ms jobs.
    while (limiter.snapshot().serviceMs !== 100) {
      const batch = Promise.all([1, 2, 3, 4].map(() => limiter.run(job)));
      await clock.advance(100);
      await batch;
    }
    const before = downstreamCalls;
    const work = Array.from({ length: 12 }, () => track(limiter.run(job, { timeoutMs: 1000 })));
    await flush();
    expect(limiter.snapshot()).toMatchObject({ inflight: 4, queued: 8 });
    const late = track(limiter.run(job, { timeoutMs: 250 }));
    await flush();
    // 4 + 8 + 1 − 4 = 9 units ahead at 4 per 100 ms → starts at ≈ 225 ms, ends ≈ 325 ms > 250 ms.
    expect(late.error).toBeInstanceOf(LimitExceededError);
    expect((late.error as LimitExceededError).reason).toBe('deadline');
    expect((late.error as LimitExceededError).retryAfterMs).toBe(225);
    await clock.advance(400);
    expect(work.every((w) => w.settled && w.error === undefined)).toBe(true);
    expect(downstreamCalls - before).toBe(12);
  });

  test('before any measurement, the same request is admitted but expires in the queue, never run', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 4, maxQueued: 100, clock, initialServiceMs: 0 });
    let calls = 0;
    const job = () => {
      calls++;
      return new Promise<void>((resolve) => clock.setTimeout(resolve, 100));
    };
    const events: string[] = [];
    limiter.on('expire', (e) => events.push(e.reason));
    for (let i = 0; i < 12; i++) void limiter.run(job, { timeoutMs: 1000 });
    await flush();
    const late = track(limiter.run(job, { timeoutMs: 250 }));
    await flush();
    expect(late.settled).toBe(false);
    expect(limiter.queued).toBe(9);
    await clock.advance(250);
    expect(late.error).toMatchObject({ reason: 'expired' });
    expect(events).toEqual(['expired']);
    await clock.advance(300);
    expect(calls).toBe(12);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, queued: 0 });
  });
});

describe('bounded queue', () => {
  test('a burst fills the queue to its bound, then drains to idle counters', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 2, maxQueued: 3, maxQueuedBytes: 1000, clock });
    const tasks = Array.from({ length: 8 }, () => deferred());
    const results = tasks.map((d) => track(limiter.run(() => d.promise, { bytes: 100 })));
    await flush();
    expect(limiter.snapshot()).toMatchObject({ inflight: 2, queued: 3, queuedBytes: 300 });
    const refused = results
      .filter((r) => r.settled)
      .map((r) => (r.error as LimitExceededError).reason);
    expect(refused).toEqual(['queue_full', 'queue_full', 'queue_full']);
    for (const d of tasks) d.resolve();
    await flush();
    await flush();
    expect(limiter.snapshot()).toMatchObject({
      inflight: 0,
      permits: 0,
      queued: 0,
      queuedBytes: 0,
      queuedCost: 0,
    });
    expect(results.filter((r) => r.settled && r.error === undefined)).toHaveLength(5);
    expect(clock.pending).toBe(0);
  });

  test('the byte limit refuses with queue_bytes and names the numbers', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10, maxQueuedBytes: 2048 });
    limiter.tryAcquire();
    void limiter.acquire({ bytes: 2000 });
    const e = await limiter.acquire({ bytes: 100 }).catch((x: unknown) => x);
    expect(e).toMatchObject({ reason: 'queue_bytes' });
    expect((e as Error).message).toMatch(/2000 B \+ 100 B > 2048 B/);
    expect(limiter.queuedBytes).toBe(2000);
  });

  test('a waiter that exceeds maxQueueWaitMs leaves at once, on a single timer', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 1000, maxQueueWaitMs: 50, clock });
    const held = limiter.tryAcquire();
    const waiters = Array.from({ length: 100 }, () => track(limiter.acquire()));
    expect(clock.pending).toBe(1); // one timer for the earliest expiry, not one per waiter
    await clock.advance(49);
    expect(limiter.queued).toBe(100);
    await clock.advance(1);
    expect(limiter.queued).toBe(0);
    expect(waiters.every((w) => (w.error as LimitExceededError)?.reason === 'expired')).toBe(true);
    expect(clock.pending).toBe(0);
    held?.success();
  });

  test('a waiter that arrived at a fraction of a ms is timed from the whole ms before (it leaves up to 1 ms sooner, never later)', async () => {
    // (The arrival is kept as a whole number, which V8 stores without a boxed number per waiter.)
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, maxQueueWaitMs: 50, clock });
    const held = limiter.tryAcquire() as Permit;
    await clock.advance(0.75);
    const expired: ExpireEvent[] = [];
    limiter.on('expire', (e) => expired.push(e));
    const waiter = track(limiter.acquire());
    await clock.advance(49.25); // 50 ms after 0, 49.25 after the arrival
    expect(waiter.settled).toBe(true);
    expect((waiter.error as LimitExceededError).reason).toBe('expired');
    expect(expired.map((e) => e.waitedMs)).toEqual([50]);
    held.success();
  });
  test('waiters with out-of-order deadlines each leave at their own time', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock, initialServiceMs: 0 });
    const held = limiter.tryAcquire() as Permit;
    const late = track(limiter.acquire({ timeoutMs: 100 }));
    const none = track(limiter.acquire());
    const early = track(limiter.acquire({ timeoutMs: 30 })); // earlier than one queued before it
    const mid = track(limiter.acquire({ timeoutMs: 60 }));
    expect(clock.pending).toBe(1);
    await clock.advance(30);
    expect([late.settled, none.settled, early.settled, mid.settled]).toEqual([
      false,
      false,
      true,
      false,
    ]);
    await clock.advance(30);
    expect(mid.error).toMatchObject({ reason: 'expired' });
    await clock.advance(40);
    expect(late.error).toMatchObject({ reason: 'expired' });
    expect(limiter.queued).toBe(1);
    held.success();
    await flush();
    expect(none.value).toBeDefined();
    expect(clock.pending).toBe(0);
  });

  test('an aborted waiter leaves at once, its listener is removed, and the next waiter moves up', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const held = limiter.tryAcquire() as Permit;
    const ac = new AbortController();
    let listeners = 0;
    const signal = new Proxy(ac.signal, {
      get(target, prop) {
        if (prop === 'addEventListener') {
          return (...a: Parameters<AbortSignal['addEventListener']>) => {
            listeners++;
            target.addEventListener(...a);
          };
        }
        if (prop === 'removeEventListener') {
          return (...a: Parameters<AbortSignal['removeEventListener']>) => {
            listeners--;
            target.removeEventListener(...a);
          };
        }
        const v = Reflect.get(target, prop, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const aborted = track(limiter.acquire({ signal }));
    const next = track(limiter.acquire());
    expect(listeners).toBe(1);
    ac.abort(new Error('user left'));
    await flush();
    expect(aborted.error).toMatchObject({ reason: 'aborted', cause: ac.signal.reason });
    expect(listeners).toBe(0);
    expect(limiter.queued).toBe(1);
    held.success();
    await flush();
    expect(next.value).toBeDefined();
  });

  test('close() rejects every waiter with reason closed', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, maxQueueWaitMs: 1000, clock });
    const held = limiter.tryAcquire() as Permit;
    const waiters = [track(limiter.acquire()), track(limiter.acquire())];
    const closing = limiter.close();
    await flush();
    expect(waiters.map((w) => (w.error as LimitExceededError).reason)).toEqual([
      'closed',
      'closed',
    ]);
    expect(clock.pending).toBe(0);
    held.success();
    await closing;
  });

  test('every rejection carries a finite, non-negative retryAfterMs', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 1, clock, initialServiceMs: 0 });
    const reasons: RejectEvent[] = [];
    limiter.on('reject', (e) => reasons.push(e));
    const held = limiter.tryAcquire();
    void limiter.acquire().catch(() => {});
    await limiter.acquire().catch(() => {});
    await limiter.acquire({ cost: 1e9 }).catch(() => {});
    await limiter.acquire({ timeoutMs: 0 }).catch(() => {});
    const closing = limiter.close();
    held?.success();
    await closing;
    // A spent time limit is refused as such before the queue is considered.
    expect(reasons.map((r) => r.reason)).toEqual(['queue_full', 'too_large', 'deadline', 'closed']);
    for (const r of reasons) {
      expect(Number.isFinite(r.retryAfterMs)).toBe(true);
      expect(r.retryAfterMs).toBeGreaterThanOrEqual(0);
    }
  });
});

describe('queue order', () => {
  async function order(queueOrder: 'fifo' | 'lifo' | 'adaptive', advanceBetween = 0) {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, queueOrder, clock });
    const held = limiter.tryAcquire() as Permit;
    const served: number[] = [];
    const waiters = [1, 2, 3].map((i) =>
      limiter.acquire().then((p) => {
        served.push(i);
        p.success();
      }),
    );
    await clock.advance(advanceBetween);
    held.success();
    await Promise.all(waiters);
    return served;
  }

  test('fifo serves the oldest first; lifo the newest', async () => {
    expect(await order('fifo')).toEqual([1, 2, 3]);
    expect(await order('lifo')).toEqual([3, 2, 1]);
  });

  test('adaptive is FIFO while the queue drains and LIFO once a standing queue forms', async () => {
    expect(await order('adaptive', 0)).toEqual([1, 2, 3]);
    expect((await order('adaptive', 150))[0]).toBe(3);
  });

  test('CoDel: once the queue has stood for the interval, waiters past the target leave', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({
      limit: 1,
      maxQueued: 10,
      clock,
      codel: { targetMs: 20, intervalMs: 100 },
    });
    const held = limiter.tryAcquire() as Permit;
    const a = track(limiter.acquire());
    await clock.advance(90);
    const b = track(limiter.acquire());
    await clock.advance(9);
    expect(a.settled).toBe(false); // 99 ms old, but the queue has not stood for 100 ms yet
    await clock.advance(1);
    expect(a.error).toMatchObject({ reason: 'expired' }); // standing now: a (100 ms) > target
    expect(b.settled).toBe(false); // b is 10 ms old
    await clock.advance(10);
    expect(b.error).toMatchObject({ reason: 'expired' });
    held.success();
    expect(clock.pending).toBe(0);
  });
});

describe('weighted permits', () => {
  test('a cost above the largest capacity is too_large', async () => {
    const limiter = new Limiter({ algorithm: settable(5, 8), maxQueued: 10 });
    await expect(limiter.acquire({ cost: 9 })).rejects.toMatchObject({ reason: 'too_large' });
    expect(limiter.tryAcquire({ cost: 9 })).toBeUndefined();
  });

  test('a heavy job at the head is not starved by a stream of light ones (strict head of line)', async () => {
    const limiter = new Limiter({ limit: 4, maxQueued: 100 });
    const running = [limiter.tryAcquire(), limiter.tryAcquire()] as Permit[];
    const heavy = track(limiter.acquire({ cost: 4 }));
    const light = [track(limiter.acquire()), track(limiter.acquire())];
    await flush();
    // 2 units free, but the heavy head needs 4: nobody behind it jumps the line.
    expect(light.some((l) => l.settled)).toBe(false);
    expect(limiter.tryAcquire()).toBeUndefined();
    running[0]?.success();
    await flush();
    expect(heavy.settled).toBe(false);
    running[1]?.success();
    await flush();
    expect(heavy.value?.cost).toBe(4);
    expect(limiter.inflight).toBe(4);
    heavy.value?.success();
    await flush();
    expect(light.every((l) => l.value !== undefined)).toBe(true);
  });

  test('when the limit shrinks below a queued cost, the job runs once in-flight drains to zero', async () => {
    const alg = settable(6, 10);
    const limiter = new Limiter({ algorithm: alg, maxQueued: 10 });
    const running = [limiter.tryAcquire(), limiter.tryAcquire()] as Permit[];
    const big = track(limiter.acquire({ cost: 5 }));
    alg.limit = 3;
    running[0]?.success(); // feeds the algorithm: capacity is now 3 < 5
    await flush();
    expect(limiter.capacity).toBe(3);
    expect(big.settled).toBe(false);
    running[1]?.success();
    await flush();
    expect(big.value?.cost).toBe(5);
    expect(limiter.inflight).toBe(5);
  });

  test('when the limit grows, queued waiters are dispatched at once', async () => {
    const alg = settable(1, 10);
    const clock = new FakeClock();
    const limiter = new Limiter({
      algorithm: alg,
      maxQueued: 10,
      clock,
      stallThresholdMs: Infinity,
    });
    const a = limiter.tryAcquire() as Permit;
    const b = limiter.tryAcquire() as Permit | undefined;
    expect(b).toBeUndefined();
    const waiters = [1, 2, 3].map(() => track(limiter.acquire()));
    alg.limit = 4;
    a.success();
    await flush();
    expect(waiters.every((w) => w.value !== undefined)).toBe(true);
    expect(limiter.inflight).toBe(3);
  });
});

describe('queue events and snapshot', () => {
  test('queue, expire and reject events carry the reason; snapshot shows the oldest age', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 2, maxQueued: 5, maxQueueWaitMs: 100, clock });
    const queued: QueueEvent[] = [];
    const expired: ExpireEvent[] = [];
    const rejected: RejectEvent[] = [];
    limiter.on('queue', (e) => queued.push(e));
    limiter.on('expire', (e) => expired.push(e));
    limiter.on('reject', (e) => rejected.push(e));
    limiter.tryAcquire();
    limiter.tryAcquire();
    void limiter.acquire({ bytes: 10 }).catch(() => {});
    await clock.advance(30);
    void limiter.acquire({ bytes: 20, cost: 2 }).catch(() => {});
    await clock.advance(10);
    expect(limiter.snapshot()).toMatchObject({
      queued: 2,
      queuedBytes: 30,
      queuedCost: 3,
      oldestQueuedMs: 40,
    });
    expect(queued).toEqual([
      { cost: 1, bytes: 10, queued: 1, queuedBytes: 10 },
      { cost: 2, bytes: 20, queued: 2, queuedBytes: 30 },
    ]);
    await clock.advance(100);
    expect(expired).toEqual([
      { reason: 'expired', cost: 1, waitedMs: 100 },
      { reason: 'expired', cost: 2, waitedMs: 100 },
    ]);
    expect(rejected.map((r) => r.reason)).toEqual(['expired', 'expired']);
  });
});

describe('run with the queue', () => {
  test('abort while running keeps the permit until the task really ends', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const ac = new AbortController();
    const d = deferred<string>();
    const result = track(limiter.run(() => d.promise, { signal: ac.signal }));
    ac.abort();
    await flush();
    expect(limiter.inflight).toBe(1); // the task ignores the signal and is still running
    const next = track(limiter.run(() => 'next'));
    await flush();
    expect(next.settled).toBe(false);
    d.resolve('done');
    await flush();
    expect(result.value).toBe('done');
    expect(next.value).toBe('next');
    expect(limiter.inflight).toBe(0);
  });

  test('a queued task that throws before starting returns its permit once', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const held = limiter.tryAcquire() as Permit;
    const failing = track(
      limiter.run(() => {
        throw new Error('bad request');
      }),
    );
    const after = track(limiter.run(() => 'ok'));
    held.success();
    await flush();
    expect((failing.error as Error).message).toBe('bad request');
    expect(after.value).toBe('ok');
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });
});
