/**
 * Leases and leased permits dropped without release(): reclaimed when garbage-collected (the
 * collector is forced with `gc()`, as limits-core's leaked-permit tests do), on a real Redis.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Redis } from 'ioredis';
import { Limiter } from 'limits-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type LeaseLeakEvent, RedisLeasePool, type RedisLeasePoolOptions } from '../src/index.js';
import { waitFor } from './support/leasePool.js';
import { startRedis, type TestRedis } from './support/redis.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Runs the collector and lets finalizers run until `done()` or a bound. */
async function collect(done: () => boolean, rounds = 200): Promise<void> {
  for (let i = 0; i < rounds && !done(); i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
}

let server: TestRedis;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1');
});
afterAll(async () => {
  redis?.disconnect();
  await server?.close();
});

describe('RedisLeasePool leases dropped without release()', () => {
  const open: RedisLeasePool[] = [];
  let n = 0;
  /** A pool whose leases outlive the test unless released (a long TTL), renewed every 20 ms. */
  const pool = (o: Partial<RedisLeasePoolOptions> = {}) => {
    const b = new RedisLeasePool(redis, {
      name: `leak${++n}-${Math.random().toString(36).slice(2)}`,
      limit: 1,
      onFailure: 'closed',
      leaseTtlMs: 60_000,
      renewEveryMs: 20,
      ...o,
    });
    open.push(b);
    return b;
  };
  const warn = vi.spyOn(process, 'emitWarning');
  beforeAll(() => {
    warn.mockImplementation(() => {});
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((b) => b.close()));
    warn.mockClear();
  });
  afterAll(() => {
    warn.mockRestore();
  });

  it('gives the units of a collected lease back to the fleet, reports it on leak and warns once', async () => {
    const b = pool({ limit: 2 });
    const leaks: LeaseLeakEvent[] = [];
    b.on('leak', (e) => leaks.push(e));
    const ids: string[] = [];
    b.on('acquire', (e) => ids.push(e.id));
    await (async () => {
      await b.acquire();
      await b.acquire();
    })();
    expect((await b.status()).used).toBe(2);
    // Renewals run while the leases wait for the collector: they must not keep them alive.
    await new Promise((r) => setTimeout(r, 60));
    await collect(() => leaks.length >= 2);
    expect(leaks.map((e) => e.id).sort()).toEqual([...ids].sort());
    expect(leaks[0]).toEqual({ id: expect.any(String), cost: 1, heldMs: expect.any(Number) });
    expect(b.held).toBe(0);
    await waitFor('the units back in Redis', async () => (await b.status()).used === 0);
    const codes = warn.mock.calls.map((c) => (c[1] as { code?: string } | undefined)?.code);
    expect(codes).toEqual(['LIMITS_LEASE_LEAK']);
    const again = await b.acquire();
    await again.release();
  });

  it('gives back both halves of a LeasedPermit dropped without an outcome', async () => {
    const b = pool();
    const limiter = new Limiter({ limit: 1 });
    const poolLeaks: LeaseLeakEvent[] = [];
    const permitLeaks: unknown[] = [];
    b.on('leak', (e) => poolLeaks.push(e));
    limiter.on('leak', (e) => permitLeaks.push(e));
    const db = b.wrap(limiter);
    await (async () => {
      await db.acquire();
    })();
    expect(limiter.inflight).toBe(1);
    await collect(() => poolLeaks.length > 0 && permitLeaks.length > 0);
    expect(poolLeaks).toHaveLength(1);
    expect(permitLeaks).toHaveLength(1);
    expect(limiter.inflight).toBe(0);
    await waitFor('the lease back in Redis', async () => (await b.status()).used === 0);
    const p = await db.acquire();
    p.success();
  });

  it('close() gives back a lease collected before its finalizer ran, and reports it once', async () => {
    const b = pool();
    const leaks: LeaseLeakEvent[] = [];
    b.on('leak', (e) => leaks.push(e));
    const ref = await (async () => new WeakRef(await b.acquire()))();
    // close() runs right after the collection, in the same task: before the finalizer can.
    let closing: Promise<void> | undefined;
    for (let i = 0; i < 100 && closing === undefined; i++) {
      await new Promise((r) => setImmediate(r));
      gc();
      if (ref.deref() === undefined) closing = b.close();
    }
    expect(closing).toBeDefined();
    await closing;
    await collect(() => false, 10);
    expect(leaks).toHaveLength(1);
    expect(b.held).toBe(0);
    expect(await redis.zcard(`limits:pool:{${b.name}}:leases`)).toBe(0);
  });

  it('does not report a lease that was released, or one found lost at renewal, when it is collected', async () => {
    const b = pool();
    const leaks: LeaseLeakEvent[] = [];
    const lost: string[] = [];
    b.on('leak', (e) => leaks.push(e));
    b.on('leaseLost', (e) => lost.push(e.id));
    await (async () => {
      const lease = await b.acquire();
      await lease.release();
    })();
    await (async () => {
      const lease = await b.acquire();
      await redis.zrem(`limits:pool:{${b.name}}:leases`, lease.member);
      await waitFor('the renewal to notice', () => lease.lost);
    })();
    expect(lost).toHaveLength(1);
    await collect(() => false, 20);
    expect(leaks).toEqual([]);
    expect(warn).not.toHaveBeenCalled();
  });
});
