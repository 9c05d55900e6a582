// Scenario S4 (seeds 000/001) — the fleet pool: RedisLeasePool acquire + release over a
// loopback Redis, side by side with bottleneck's Redis mode (maxConcurrent) for the same rule.
//
//   node bench/s4-lease-pool.mjs            full run: 5 s per cell (~1 minute)
//   node bench/s4-lease-pool.mjs --quick    smoke test: 1 s per cell
//   node bench/s4-lease-pool.mjs --seconds=10
//
// Needs the built packages (`npx -y pnpm@12.4.2 run build`) and a `redis-server` on the PATH: the
// script starts its own on a free 127.0.0.1 port (no persistence) and stops it at the end.
//
// One operation = take a slot, run an empty task, give the slot back:
//   pool       const lease = await pool.acquire(); await lease.release();   (2 EVALSHA)
//   wrapped      pool.wrap(new Limiter({ limit: 64 })).run(() => undefined)    (2 EVALSHA + limiter)
//   bottleneck   limiter.schedule(() => Promise.resolve())  with datastore ioredis, maxConcurrent
// Each cell runs `callers` closed-loop callers (1 or 50) for the cell's duration, against a cap of 1,000
// (never full: the cost of the round trips) or 10 (50 callers contend: waiting and waking). Reported:
// operations per second and the p50 / p99 latency of one operation, in ms. The operations per second
// of "pool" with 50 callers against a cap of 1,000 is the sizing figure for one pool key
// (README "Sizing"): each operation is two script calls on that key's Redis shard.
// All cells run in this one process, one after the other, so they share one event loop and one CPU
// with the Redis server: on a 2-CPU machine the numbers are a floor, not a verdict.

import Bottleneck from 'bottleneck';
import { Redis } from 'ioredis';
import { Limiter } from 'limits-core';
import { RedisLeasePool } from 'limits-redis';
import { measure, startRedis } from './redis-bench.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const secondsArg = args.find((a) => a.startsWith('--seconds='));
const seconds = secondsArg ? Number(secondsArg.split('=')[1]) : quick ? 1 : 5;

const server = await startRedis();
const redis = new Redis(server.port, '127.0.0.1');
const rows = [];
try {
  for (const cap of [1000, 10]) {
    for (const callers of [1, 50]) {
      const name = `s4-${cap}-${callers}`;
      const pool = new RedisLeasePool(redis, {
        name,
        limit: cap,
        onFailure: 'closed',
        maxWaitMs: 10_000,
        timeoutMs: 1_000,
      });
      const wrapped = new RedisLeasePool(redis, {
        name: `${name}-wrapped`,
        limit: cap,
        onFailure: 'closed',
        maxWaitMs: 10_000,
        timeoutMs: 1_000,
      }).wrap(new Limiter({ limit: 64, maxQueued: 1_000 }));
      const connection = new Bottleneck.IORedisConnection({
        Redis,
        clientOptions: { host: '127.0.0.1', port: server.port },
      });
      const bottleneck = new Bottleneck({
        id: `${name}-bottleneck`,
        maxConcurrent: cap,
        datastore: 'ioredis',
        clearDatastore: true,
        connection,
      });
      await bottleneck.ready();
      const contenders = {
        pool: async () => {
          const lease = await pool.acquire();
          await lease.release();
        },
        wrapped: () => wrapped.run(() => undefined),
        bottleneck: () => bottleneck.schedule(() => Promise.resolve()),
      };
      for (const [id, op] of Object.entries(contenders)) {
        await measure(op, callers, Math.min(300, seconds * 200)); // warm-up
        const r = await measure(op, callers, seconds * 1000);
        rows.push({ contender: id, cap, callers, ...r });
        process.stderr.write(
          `${id} cap=${cap} callers=${callers}: ${Math.round(r.opsPerSec)} ops/s\n`,
        );
      }
      await pool.close();
      await wrapped.pool.close?.();
      await bottleneck.disconnect();
      await connection.disconnect();
    }
  }
} finally {
  redis.disconnect();
  server.stop();
}

const fmt = (x) => (Number.isNaN(x) ? '—' : x.toFixed(2));
console.log(
  `\nS4 fleet pool: ${seconds} s per cell, Node ${process.version}, loopback redis-server\n`,
);
console.log('| contender | cap | callers | ops/s | p50 ms | p99 ms | errors |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.contender} | ${r.cap} | ${r.callers} | ${Math.round(r.opsPerSec).toLocaleString('en-US')} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${r.errors} |`,
  );
}
