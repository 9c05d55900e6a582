import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { LimitAlgorithm } from '../src/algorithms/LimitAlgorithm.js';
import type { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { PermitRequest } from '../src/limiter/PermitRequest.js';
import { Permit } from '../src/permit/Permit.js';
import { ExpiryHeap } from '../src/queue/ExpiryHeap.js';
import { WaiterExtras } from '../src/queue/Waiter.js';
import { WaiterList } from '../src/queue/WaiterList.js';
import { deferred, FakeClock, flush } from './support/FakeClock.js';
import { testOwner, Waiter } from './support/Waiter.js';

const owner = testOwner;
const waiter = (extras?: WaiterExtras) => new Waiter(owner, 1, 0, () => {}, extras);

/** The list's waiters, oldest first. */
function contents(list: WaiterList): Waiter[] {
  const out: Waiter[] = [];
  list.forEach((w) => {
    out.push(w);
  });
  return out;
}

describe('WaiterList (array with holes)', () => {
  test('matches a plain array model under random push / remove / pop-at-either-end', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.nat()), { maxLength: 6000 }),
        (ops) => {
          const list = new WaiterList();
          const model: Waiter[] = [];
          for (const [op, n] of ops) {
            if (op < 5 || model.length === 0) {
              const w = waiter();
              list.push(w);
              model.push(w);
            } else if (op < 7) {
              // Removal anywhere (abort, expiry): leaves a hole.
              const w = model.splice(n % model.length, 1)[0] as Waiter;
              list.remove(w);
            } else if (op < 9) {
              expect(list.head).toBe(model[0]);
              list.remove(model.shift() as Waiter);
            } else {
              expect(list.tail).toBe(model.at(-1));
              list.remove(model.pop() as Waiter);
            }
            expect(list.size).toBe(model.length);
          }
          expect(contents(list)).toEqual(model);
          expect(list.head).toBe(model[0]);
          expect(list.tail).toBe(model.at(-1));
          for (const w of model) expect(list.has(w)).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });

  test('holes left by removals in the middle are compacted away, slots renumbered', () => {
    const list = new WaiterList();
    const all = Array.from({ length: 5000 }, () => waiter());
    for (const w of all) list.push(w);
    // Keep every tenth waiter, remove the rest from behind the head.
    const kept = all.filter((_, i) => i % 10 === 0);
    for (const [i, w] of all.entries()) if (i % 10 !== 0) list.remove(w);
    expect(list.size).toBe(kept.length);
    expect(contents(list)).toEqual(kept);
    // After compaction the slots are dense again: the largest is below twice the count + slack.
    expect(Math.max(...kept.map((w) => w.slot))).toBeLessThan(2 * kept.length + 1024);
    for (const w of kept) list.remove(w);
    expect(list.size).toBe(0);
    expect(list.head).toBeUndefined();
    expect(all.every((w) => w.slot === -1 && !list.has(w))).toBe(true);
  });

  test('a queue that never empties keeps a bounded array (front trimmed on push)', () => {
    const list = new WaiterList();
    const live: Waiter[] = [];
    for (let i = 0; i < 50_000; i++) {
      const w = waiter();
      list.push(w);
      live.push(w);
      if (live.length > 100) list.remove(live.shift() as Waiter);
    }
    expect(list.size).toBe(100);
    expect(contents(list)).toEqual(live);
    // Slot numbers keep growing (the offset absorbs trims), yet every waiter is found at its slot.
    expect((live[0] as Waiter).slot).toBeGreaterThan(40_000);
    expect(list.head).toBe(live[0]);
  });
});

describe('ExpiryHeap', () => {
  test('pops in expiry order and removes from anywhere', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.double({ min: 0, max: 1e6, noNaN: true }), fc.boolean())),
        (items) => {
          const heap = new ExpiryHeap();
          const entries = items.map(([at, drop]) => ({ w: waiter(new WaiterExtras()), at, drop }));
          for (const e of entries) heap.push(e.w, e.at);
          for (const e of entries) if (e.drop) heap.remove(e.w);
          const expected = entries
            .filter((e) => !e.drop)
            .map((e) => e.at)
            .sort((a, b) => a - b);
          const got: number[] = [];
          while (heap.size > 0) {
            got.push(heap.peekTime());
            heap.remove(heap.peek() as Waiter);
          }
          expect(got).toEqual(expected);
          expect(heap.peekTime()).toBe(Infinity);
          expect(entries.every((e) => e.w.extras?.heapIndex === -1)).toBe(true);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('a queued waiter is its own permit', () => {
  test('the granted permit is a Permit with the grant-time fields, released once', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const held = await limiter.acquire();
    const queued = limiter.acquire();
    held.success();
    const permit = await queued;
    expect(permit).toBeInstanceOf(Permit);
    expect(permit.cost).toBe(1);
    expect(permit.inflight).toBe(1);
    expect(permit.released).toBe(false);
    permit.success();
    permit.dropped();
    expect(permit.released).toBe(true);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });
});

describe('acquireWith (the promise-free acquire integrations use)', () => {
  /** The payload of the `i`-th sink call. */
  const at = (events: unknown[][], i: number) => (events[i] ?? [])[1];
  const reasonAt = (events: unknown[][], i: number) => (at(events, i) as LimitExceededError).reason;

  function sink() {
    const events: Array<['granted', Permit] | ['refused', LimitExceededError]> = [];
    const s: PermitRequest = {
      granted: (p) => events.push(['granted', p]),
      refused: (e) => events.push(['refused', e]),
    };
    return { s, events };
  }

  test('returns a permit when free; otherwise queues and calls the request once', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 1, clock });
    const a = sink();
    const first = limiter.acquireWith(a.s);
    expect(first).toBeInstanceOf(Permit);
    expect(a.events).toEqual([]);
    const b = sink();
    expect(limiter.acquireWith(b.s)).toBeUndefined();
    expect(limiter.queued).toBe(1);
    // The queue is full: refused at once, through the request, before acquireWith returns.
    const c = sink();
    expect(limiter.acquireWith(c.s)).toBeUndefined();
    expect(c.events.map((e) => e[0])).toEqual(['refused']);
    expect(reasonAt(c.events, 0)).toBe('queue_full');
    (first as Permit).success();
    expect(b.events.map((e) => e[0])).toEqual(['granted']);
    (at(b.events, 0) as Permit).success();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
    expect(clock.pending).toBe(0);
  });

  test('expiry, abort and close reach the request as refusals with their reasons', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, maxQueued: 10, maxQueueWaitMs: 50, clock });
    const held = limiter.acquireWith(sink().s) as Permit;
    const expiring = sink();
    limiter.acquireWith(expiring.s);
    await clock.advance(50);
    expect(reasonAt(expiring.events, 0)).toBe('expired');
    const controller = new AbortController();
    const aborted = sink();
    limiter.acquireWith(aborted.s, { signal: controller.signal });
    controller.abort(new Error('stop'));
    expect(reasonAt(aborted.events, 0)).toBe('aborted');
    const closed = sink();
    limiter.acquireWith(closed.s);
    const closing = limiter.close();
    expect(reasonAt(closed.events, 0)).toBe('closed');
    held.success();
    await closing;
    expect(clock.pending).toBe(0);
  });
});

describe('a queued run() settles its caller from the task', () => {
  test('value, async error and synchronous throw each reach the caller; permits all come back', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const gate = deferred<void>();
    const first = limiter.run(() => gate.promise);
    const ok = limiter.run(async () => 42);
    const failed = limiter.run(async () => {
      throw new Error('boom');
    });
    const threw = limiter.run(() => {
      throw new Error('sync');
    });
    expect(limiter.queued).toBe(3);
    gate.resolve();
    await expect(first).resolves.toBeUndefined();
    await expect(ok).resolves.toBe(42);
    await expect(failed).rejects.toThrow('boom');
    await expect(threw).rejects.toThrow('sync');
    await flush();
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });

  test('an algorithm that throws does not strand the queue: its error goes to the error event', async () => {
    const algorithm: LimitAlgorithm = {
      limit: 1,
      maxLimit: 1,
      update() {
        throw new Error('algorithm failed');
      },
    };
    const limiter = new Limiter({ algorithm, maxQueued: 10 });
    const errors: unknown[] = [];
    limiter.on('error', (e) => errors.push(e));
    const gate = deferred<void>();
    const first = limiter.run(() => gate.promise);
    const queued = limiter.run(async () => 1);
    gate.resolve();
    await expect(first).resolves.toBeUndefined();
    await expect(queued).resolves.toBe(1);
    expect(errors.map((e) => (e as Error).message)).toEqual([
      'algorithm failed',
      'algorithm failed',
    ]);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0, limit: 1 });
  });
});
