import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLeasePool } from '../src/index.js';
import { startRedis, type TestRedis } from './support/redis.js';

// The forked workers run plain Node: they import this package compiled into node_modules/.cache
// (so `limits-core` and `ioredis` resolve from the package's own node_modules).
const root = fileURLToPath(new URL('..', import.meta.url));
const dist = `${root}node_modules/.cache/limits-redis-pool-test`;
const worker = fileURLToPath(new URL('./fixtures/lease-worker.mjs', import.meta.url));

let server: TestRedis;
let admin: Redis;
const children: ChildProcess[] = [];

beforeAll(async () => {
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json', '--outDir', dist], { cwd: root });
  server = await startRedis();
  admin = new Redis(server.port, '127.0.0.1');
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  admin?.disconnect();
  await server?.close();
});

function spawnWorker(config: Record<string, unknown>): ChildProcess {
  const child = fork(worker, [dist, JSON.stringify({ port: server.port, ...config })], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  return child;
}

const nextMessage = <T>(child: ChildProcess) =>
  new Promise<T>((resolve, reject) => {
    child.once('message', (m) => resolve(m as T));
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });

describe('RedisLeasePool across processes', () => {
  it('4 processes with a local limit of 20 each never have more than 40 calls in flight against a pool of 40', async () => {
    const name = `fleet-${Date.now()}`;
    const counter = `test:{${name}}:inflight`;
    const leases = `limits:pool:{${name}}:leases`;
    const config = { mode: 'fleet', name, counter, localLimit: 20, globalLimit: 40, tasks: 150 };
    const workers = Array.from({ length: 4 }, () => spawnWorker(config));
    await Promise.all(workers.map((w) => nextMessage(w)));
    const results = Promise.all(
      workers.map((w) => nextMessage<{ localMax: number; counterMax: number; errors: number }>(w)),
    );
    let done = false;
    void results.finally(() => {
      done = true;
    });
    for (const w of workers) w.send('go');
    // The watcher: samples the lease set and the in-flight counter as fast as one connection goes.
    let maxLeases = 0;
    let maxCounter = 0;
    let samples = 0;
    while (!done) {
      const [[, z], [, c]] = (await admin.multi().zcard(leases).get(counter).exec()) as [
        [null, number],
        [null, string | null],
      ];
      maxLeases = Math.max(maxLeases, z);
      maxCounter = Math.max(maxCounter, Number(c ?? 0));
      samples++;
    }
    const reports = await results;
    expect(reports.map((r) => r.errors)).toEqual([0, 0, 0, 0]);
    for (const r of reports) {
      expect(r.localMax).toBeLessThanOrEqual(20);
      expect(r.counterMax).toBeLessThanOrEqual(40);
    }
    expect(samples).toBeGreaterThan(50);
    expect(maxLeases).toBeLessThanOrEqual(40);
    expect(maxCounter).toBeLessThanOrEqual(40);
    // The cap was really contended: 80 local permits competed for 40 leases.
    expect(Math.max(maxLeases, ...reports.map((r) => r.counterMax))).toBe(40);
    expect(await admin.exists(leases)).toBe(0);
  });

  it('reclaims the leases of a holder killed with SIGKILL after their TTL', async () => {
    const name = `crash-${Date.now()}`;
    const holder = spawnWorker({
      mode: 'holder',
      name,
      globalLimit: 3,
      leases: 3,
      leaseTtlMs: 500,
    });
    const { held } = await nextMessage<{ held: string[] }>(holder);
    expect(held).toHaveLength(3);
    const redis = new Redis(server.port, '127.0.0.1');
    const pool = new RedisLeasePool(redis, {
      name,
      limit: 3,
      onFailure: 'closed',
      pollMs: 50,
    });
    try {
      await expect(pool.acquire()).rejects.toMatchObject({ reason: 'at_limit' });
      // Alive, the holder renews: its leases outlive their 500 ms TTL.
      await new Promise((r) => setTimeout(r, 800));
      expect((await pool.status()).used).toBe(3);
      holder.kill('SIGKILL');
      const killedAt = Date.now();
      const leases = await Promise.all([1, 2, 3].map(() => pool.acquire({ maxWaitMs: 5_000 })));
      const waited = Date.now() - killedAt;
      expect(waited).toBeGreaterThanOrEqual(150); // the last renewal was at most TTL/3 before the kill
      expect(waited).toBeLessThan(2_000);
      expect((await pool.status()).used).toBe(3);
      expect(await redis.zrange(`limits:pool:{${name}}:leases`, 0, -1)).toEqual(
        expect.not.arrayContaining(held.map((id) => `${id}#1`)),
      );
      await Promise.all(leases.map((l) => l.release()));
    } finally {
      await pool.close();
      redis.disconnect();
    }
  });
});
