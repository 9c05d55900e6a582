import { describe, expect, test } from 'vitest';
import type { LimitAlgorithm } from '../src/algorithms/LimitAlgorithm.js';
import { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { PartitionedLimiter } from '../src/partition/PartitionedLimiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { FakeClock, flush } from './support/FakeClock.js';

async function reasonOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return error instanceof LimitExceededError ? error.reason : String(error);
  }
}

/** An adaptive total the test moves by hand: each sample sets the limit to `next`. */
function scripted(limit: number, maxLimit: number | undefined) {
  const algo = {
    limit,
    next: limit,
    update() {
      algo.limit = algo.next;
      return algo.limit;
    },
  } as LimitAlgorithm & { limit: number; next: number };
  if (maxLimit !== undefined) Object.assign(algo, { maxLimit });
  return algo;
}

/**
 * Partitions `a` (no reserve) and `b` (reserves 2) over a scripted total of 10 (maxLimit 10), on a
 * fake clock with stall detection off; `b` queues up to `bQueued`.
 */
function shrinkable(bQueued = 5) {
  const total = scripted(10, 10);
  const clock = new FakeClock();
  const b = new PartitionedLimiter({
    algorithm: total,
    clock,
    stallThresholdMs: Infinity,
    partitions: { a: { maxQueued: 5 }, b: { reserved: 2, maxQueued: bQueued } },
  });
  return { total, clock, b };
}

describe('PartitionedLimiter: what a partition can ever have', () => {
  test('a cost above reserved + maxBorrow is refused with too_large at once, not queued', async () => {
    const b = new PartitionedLimiter({
      limit: 10,
      partitions: { a: { reserved: 0, maxBorrow: 2, maxQueued: 5 }, b: { reserved: 3 } },
    });
    const a = b.partition('a');
    expect(await reasonOf(a.acquire({ cost: 3 }))).toBe('too_large');
    expect(a.tryAcquire({ cost: 3 })).toBeUndefined();
    expect(a.queued).toBe(0);
    const p = a.tryAcquire({ cost: 2 }) as Permit;
    expect(p).toBeDefined();
    p.success();
  });

  test('a cost above the partition’s reserve plus the shared pool is refused with too_large', async () => {
    const b = new PartitionedLimiter({
      limit: 10,
      partitions: { a: { reserved: 2, maxQueued: 5 }, b: { reserved: 5 } },
    });
    // a can have its 2 reserved + the 3 shared units; b's reserve is never lent.
    expect(await reasonOf(b.partition('a').acquire({ cost: 6 }))).toBe('too_large');
    expect(b.partition('a').tryAcquire({ cost: 5 })).toBeDefined();
    // b can have 5 + 3.
    expect(await reasonOf(b.partition('b').acquire({ cost: 9 }))).toBe('too_large');
  });

  test('the too_large message quotes the partition’s own reach', async () => {
    const b = new PartitionedLimiter({
      limit: 10,
      partitions: { a: { reserved: 1, maxBorrow: 2, maxQueued: 5 }, b: {} },
    });
    await expect(b.partition('a').acquire({ cost: 4 })).rejects.toThrow(
      /cost 4 exceeds the largest capacity this limiter can have \(3\)/,
    );
  });

  test('with an adaptive total, a cost is refused only above the reach at its maxLimit', async () => {
    const total = scripted(4, 20);
    const b = new PartitionedLimiter({
      algorithm: total,
      stallThresholdMs: Infinity,
      clock: new FakeClock(),
      partitions: { a: { reserved: 0.5, maxQueued: 5 }, b: { reserved: 2 } },
    });
    // At 20: a reserves 10 and may borrow the 8 shared units → 18; 19 can never run.
    expect(await reasonOf(b.partition('a').acquire({ cost: 19 }))).toBe('too_large');
    // 18 is more than a can have at 4, but a is idle and nobody borrows: it runs alone.
    const p = await b.partition('a').acquire({ cost: 18 });
    expect(b.ledger().partitions.a).toMatchObject({ running: 18, queued: 0 });
    p.success();
    expect(b.ledger()).toMatchObject({ running: 0, borrowed: 0 });
  });

  test('a job costlier than a shrunken total runs alone once its partition has nothing in flight', async () => {
    const { total, clock, b } = shrinkable();
    const a = b.partition('a');
    const p1 = a.tryAcquire() as Permit;
    const p2 = a.tryAcquire() as Permit;
    total.next = 4; // a can now have 4 − 2 = 2 units
    clock.jump(10);
    p1.success();
    expect(b.ledger().total).toBe(4);
    const big = a.acquire({ cost: 6 }); // ≤ 8, what a can have at the maxLimit
    await flush();
    expect(a.queued).toBe(1);
    clock.jump(10);
    p2.success(); // a has nothing in flight: the job runs alone
    const granted = await big;
    expect(b.ledger().partitions.a).toMatchObject({ running: 6, queued: 0 });
    // b's reserve still holds while the big job runs.
    const r = [b.partition('b').tryAcquire(), b.partition('b').tryAcquire()];
    expect(r.every(Boolean)).toBe(true);
    for (const x of r) x?.success();
    granted.success();
    expect(b.ledger()).toMatchObject({ running: 0, borrowed: 0 });
  });

  test('a job that runs alone waits for the other partitions’ loans to end, never for their reserves', async () => {
    const { total, clock, b } = shrinkable();
    const a = b.partition('a');
    const bHeld = [0, 1, 2].map(() => b.partition('b').tryAcquire() as Permit); // 1 borrowed
    const p1 = a.tryAcquire() as Permit;
    total.next = 4;
    clock.jump(10);
    p1.success();
    const big = a.acquire({ cost: 6 });
    await flush();
    expect(a.queued).toBe(1); // b still borrows a shared unit
    (bHeld[0] as Permit).success(); // b is back within its reserve: the shared pool is free
    await big.then((p) => p.success());
    for (const p of bHeld.slice(1)) p.success();
    expect(b.ledger()).toMatchObject({ running: 0, borrowed: 0 });
  });

  test('deadline admission uses what the partition can use, not the whole pool', async () => {
    const clock = new FakeClock();
    const b = new PartitionedLimiter({
      limit: 10,
      clock,
      partitions: { a: { reserved: 1, maxBorrow: 0, maxQueued: 5, initialServiceMs: 100 }, b: {} },
    });
    const a = b.partition('a');
    const held = a.tryAcquire() as Permit;
    // One unit busy for ≈ 100 ms ahead, then 100 ms of its own: 150 ms cannot be met.
    expect(await reasonOf(a.acquire({ timeoutMs: 150 }))).toBe('deadline');
    const ok = a.acquire({ timeoutMs: 250 });
    held.success();
    (await ok).success();
  });

  test('retryAfterMs is computed from what the partition can use', async () => {
    const b = new PartitionedLimiter({
      limit: 10,
      partitions: { a: { reserved: 1, maxBorrow: 0, initialServiceMs: 100 }, b: {} },
    });
    const a = b.partition('a');
    const held = a.tryAcquire() as Permit;
    const error = await a.acquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LimitExceededError);
    // One unit of work ahead on a one-unit partition: ≈ one service time, not a tenth of it.
    expect((error as LimitExceededError).retryAfterMs).toBe(100);
    held.success();
  });
});

describe('PartitionedLimiter: running alone is not starved', () => {
  test('while a job waits to run alone, another partition’s queue starts no new loan', async () => {
    const { total, clock, b } = shrinkable(50);
    const a = b.partition('a');
    const p1 = a.tryAcquire() as Permit;
    total.next = 4;
    clock.jump(10);
    p1.success(); // total 4: a may borrow 2, b has 2 reserved + 2 shared
    const bHeld = [0, 1, 2, 3].map(() => b.partition('b').tryAcquire() as Permit);
    expect(b.ledger().borrowed).toBe(2);
    // b keeps a queue that would take every shared unit as it frees.
    const bQueue = Array.from({ length: 10 }, () =>
      b
        .partition('b')
        .acquire()
        .then((p) => {
          bHeld.push(p);
        }),
    );
    let bigGranted = false;
    const big = a.acquire({ cost: 6 }).then((p) => {
      bigGranted = true;
      return p;
    });
    // b's loans end one by one; b's own reserve keeps serving its queue, but no new loan starts.
    for (let i = 0; i < 2; i++) {
      (bHeld.shift() as Permit).success();
      await flush();
    }
    expect(bigGranted).toBe(true);
    expect(b.ledger().partitions.b).toMatchObject({ running: 2, borrowed: 0 });
    (await big).success();
    while (bHeld.length > 0 || b.partition('b').queued > 0) {
      bHeld.shift()?.success();
      await flush();
    }
    await Promise.all(bQueue);
    expect(b.ledger()).toMatchObject({ running: 0, borrowed: 0 });
  });
});

describe('PartitionedLimiter: a bad total from the algorithm', () => {
  for (const bad of [Number.NaN, -1, Infinity]) {
    // The limiter's rule for a bad limit: the last good one is kept and the error reported.
    test(`an adaptive total that answers ${bad} keeps its last good value and reports it on the error event`, async () => {
      const total = scripted(6, 10);
      const clock = new FakeClock();
      const b = new PartitionedLimiter({
        algorithm: total,
        clock,
        stallThresholdMs: Infinity,
        partitions: { a: { maxQueued: 5 }, b: { reserved: 2 } },
      });
      const errors: unknown[] = [];
      b.partition('a').on('error', (e) => errors.push(e));
      const p = b.partition('a').tryAcquire() as Permit;
      total.next = bad;
      clock.jump(5);
      p.success();
      expect(errors).toHaveLength(1);
      expect(String(errors[0])).toMatch(
        /limit algorithm gave limit .*; the last good total 6 is kept/,
      );
      expect(b.ledger().total).toBe(6);
      // Still serving: a can have 4 units now.
      const held = [0, 1, 2, 3].map(() => b.partition('a').tryAcquire());
      expect(held.every(Boolean)).toBe(true);
      for (const x of held) x?.ignore();
    });
  }
});

describe('PartitionedLimiter: an idle partition is not starved of loans', () => {
  test('while an idle partition’s head waits for a loan, freed shared units go to it, not to new loans elsewhere', async () => {
    const b = new PartitionedLimiter({
      limit: 4,
      partitions: { a: { maxQueued: 5 }, b: { maxQueued: 10 } },
    });
    const bHeld = [0, 1, 2, 3].map(() => b.partition('b').tryAcquire() as Permit);
    const bQueue = Array.from({ length: 6 }, () =>
      b
        .partition('b')
        .acquire()
        .then((p) => bHeld.push(p)),
    );
    let aGranted: Permit | undefined;
    const a = b
      .partition('a')
      .acquire({ cost: 2 })
      .then((p) => {
        aGranted = p;
      });
    (bHeld.shift() as Permit).success();
    await flush();
    expect(b.ledger().partitions.b).toMatchObject({ running: 3, queued: 6 });
    (bHeld.shift() as Permit).success();
    await a;
    expect(aGranted).toBeDefined();
    expect(b.ledger().partitions.a).toMatchObject({ running: 2 });
    aGranted?.success();
    while (bHeld.length > 0 || b.partition('b').queued > 0) {
      bHeld.shift()?.success();
      await flush();
    }
    await Promise.all(bQueue);
    expect(b.ledger()).toMatchObject({ running: 0, borrowed: 0 });
  });
});

describe('closing a PartitionedLimiter', () => {
  test('close({ timeoutMs }) resolves after the timeout with what every partition still holds', async () => {
    const clock = new FakeClock();
    const pool = new PartitionedLimiter({
      limit: 4,
      clock,
      partitions: { a: { reserved: 2 }, b: { reserved: 2 } },
    });
    const held = [
      await pool.partition('a').acquire({ cost: 2 }),
      await pool.partition('b').acquire(),
    ];
    let result: unknown;
    void pool.close({ timeoutMs: 100 }).then((r) => {
      result = r;
    });
    await clock.advance(99);
    expect(result).toBeUndefined();
    await clock.advance(1);
    expect(result).toEqual({ drained: false, permits: 2, inflight: 3 });
    for (const p of held) p.success();
    expect(clock.pending).toBe(0);
  });

  test('close() resolves drained once the last permit comes back', async () => {
    const pool = new PartitionedLimiter({ limit: 2, partitions: { a: { reserved: 1 } } });
    const permit = await pool.partition('a').acquire();
    const closing = pool.close();
    permit.success();
    expect(await closing).toEqual({ drained: true, permits: 0, inflight: 0 });
  });

  test('close() refuses bad options before closing anything', async () => {
    const pool = new PartitionedLimiter({ limit: 2, partitions: { a: { reserved: 1 } } });
    await expect(pool.close({ timeotMs: 5 } as never)).rejects.toThrow(/did you mean "timeoutMs"/);
    await expect(pool.close({ timeoutMs: -1 })).rejects.toThrow(RangeError);
    const permit = await pool.partition('a').acquire();
    permit.success();
  });
});
