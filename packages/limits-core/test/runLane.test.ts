import { describe, expect, test } from 'vitest';
import { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { Limiter } from '../src/limiter/Limiter.js';
import { deferred, FakeClock, flush } from './support/FakeClock.js';

/**
 * A queued `run()` without options at a fixed limit, on a FIFO queue where nothing acts on arrival
 * time, waits in the queue's compact lane (`RunLane`: no waiter object). It must be indistinguishable
 * from a queued waiter: FIFO order with the other kinds of request, the counters and snapshot, the
 * queue bound, refusal at close, and the service-time estimate it feeds.
 */
describe('queued plain runs (the run lane)', () => {
  test('keep FIFO order with acquire() and run() with options queued around them', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const hold = await limiter.acquire();
    const started: string[] = [];
    const task = (name: string) => () => {
      started.push(name);
      return name;
    };
    const r1 = limiter.run(task('r1'));
    const r2 = limiter.run(task('r2'));
    const a = limiter.acquire();
    const r3 = limiter.run(task('r3'));
    const r4 = limiter.run(task('r4'), { cost: 1 });
    expect(limiter.queued).toBe(5);
    hold.success();
    await expect(r1).resolves.toBe('r1');
    await expect(r2).resolves.toBe('r2');
    const permit = await a;
    expect(started).toEqual(['r1', 'r2']);
    permit.success();
    await expect(r3).resolves.toBe('r3');
    await expect(r4).resolves.toBe('r4');
    expect(started).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0, queuedCost: 0 });
  });

  test('count in queued, queuedCost, oldestQueuedMs and the maxQueued bound', async () => {
    const clock = new FakeClock(1000);
    const limiter = new Limiter({ limit: 1, maxQueued: 2, clock });
    const hold = await limiter.acquire();
    const first = limiter.run(() => 1);
    await clock.advance(30);
    const second = limiter.run(() => 2);
    await clock.advance(20);
    expect(limiter.snapshot()).toMatchObject({ queued: 2, queuedCost: 2, oldestQueuedMs: 50 });
    const refused = await limiter.run(() => 3).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LimitExceededError);
    expect((refused as LimitExceededError).reason).toBe('queue_full');
    hold.success();
    await expect(first).resolves.toBe(1);
    await expect(second).resolves.toBe(2);
    expect(limiter.snapshot()).toMatchObject({ queued: 0, queuedCost: 0, oldestQueuedMs: 0 });
  });

  test('are refused with reason closed at close(), oldest first, and never run', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const hold = await limiter.acquire();
    let ran = 0;
    const order: number[] = [];
    const calls = [0, 1, 2].map((i) =>
      limiter
        .run(() => {
          ran++;
        })
        .catch((e: LimitExceededError) => {
          order.push(i);
          return e.reason;
        }),
    );
    const closed = limiter.close();
    expect(limiter.queued).toBe(0);
    expect(await Promise.all(calls)).toEqual(['closed', 'closed', 'closed']);
    expect(order).toEqual([0, 1, 2]);
    hold.success();
    await expect(closed).resolves.toMatchObject({ drained: true });
    expect(ran).toBe(0);
  });

  test('feed the service-time estimate while the queue never empties', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 1000, clock, initialServiceMs: 1000 });
    // 200 calls of 10 ms each through one slot: all but the first wait in the lane.
    const calls = Array.from({ length: 200 }, () =>
      limiter.run(
        () =>
          new Promise<void>((resolve) => {
            clock.setTimeout(resolve, 10);
          }),
      ),
    );
    await clock.advance(2000);
    await Promise.all(calls);
    const serviceMs = limiter.snapshot().serviceMs;
    expect(serviceMs).toBeGreaterThan(9);
    expect(serviceMs).toBeLessThan(11);
  });

  test('keep feeding the service-time estimate when a sampled run never settles', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 100, maxQueued: 10_000, clock });
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        clock.setTimeout(resolve, ms);
      });
    // Runs 0–99 start at once and take 100 ms; 100–134 start from the lane and never settle (one
    // grant in 32 is a sample: one of them is); the rest, 10 ms each, share the 65 slots left.
    const hangs = (i: number) => i >= 100 && i < 135;
    const calls = Array.from({ length: 5000 }, (_, i) =>
      limiter.run(() => (hangs(i) ? new Promise<void>(() => {}) : sleep(i < 100 ? 100 : 10))),
    );
    await clock.advance(2000);
    await Promise.all(calls.filter((_, i) => !hangs(i)));
    // Samples after the hung one still come: the estimate moved from 100 ms to the 10 ms calls.
    expect(limiter.snapshot().serviceMs).toBeLessThan(11);
  });

  test('report the rtt of each call while someone listens to release', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock });
    const rtts: number[] = [];
    limiter.on('release', (e) => rtts.push(e.rtt));
    const hold = await limiter.acquire();
    const gates = [deferred(), deferred()];
    const calls = gates.map((g) => limiter.run(() => g.promise));
    hold.success();
    await flush();
    await clock.advance(5);
    gates[0]?.resolve();
    await flush();
    await clock.advance(7);
    gates[1]?.resolve();
    await Promise.all(calls);
    expect(rtts.slice(1)).toEqual([5, 7]);
  });

  test('leave no queue timer behind once the listed waiters are gone and only lane requests wait', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, clock });
    const hold = await limiter.acquire();
    const gate = deferred();
    const lane = [limiter.run(() => gate.promise), limiter.run(() => 'second')];
    // A waiter with a deadline arms the queue's timer; aborting it leaves the timer armed.
    const controller = new AbortController();
    const timed = limiter.acquire({ timeoutMs: 60_000, signal: controller.signal });
    expect(clock.pending).toBe(1);
    controller.abort();
    await expect(timed).rejects.toMatchObject({ reason: 'aborted' });
    // A release serves the first lane request; the second does not fit: nothing is listed any more,
    // so no timer may stay.
    hold.success();
    await flush();
    expect(limiter.queued).toBe(1);
    expect(clock.pending).toBe(0);
    gate.resolve();
    await expect(Promise.all(lane)).resolves.toEqual([undefined, 'second']);
  });

  test('a task that throws synchronously passes its unit to the next one', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const hold = await limiter.acquire();
    const boom = new Error('sync');
    const calls = [
      limiter.run(() => {
        throw boom;
      }),
      limiter.run(() => {
        throw boom;
      }),
      limiter.run(() => 'ok'),
    ];
    hold.success();
    await expect(calls[0]).rejects.toBe(boom);
    await expect(calls[1]).rejects.toBe(boom);
    await expect(calls[2]).resolves.toBe('ok');
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });
});
