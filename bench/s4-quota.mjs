// Scenario S4 (seed 002), quota half — `Quota.consume` over a RedisQuotaStore on a loopback Redis:
// operations per second and latency percentiles with 1 and 50 concurrent callers (closed loop: each
// caller issues its next call when the last one answers), side by side with bottleneck's Redis mode
// (2.19.5, `datastore: 'ioredis'`) for the same rule where it has one.
//
//   node bench/s4-quota.mjs                 3 s per cell, rows alternated, 2 rounds
//   node bench/s4-quota.mjs --quick         0.5 s per cell, 1 round (checks that it works)
//   node bench/s4-quota.mjs --seconds=5 --rounds=3
//   REDIS_PORT=6379 node bench/s4-quota.mjs use a running Redis instead of starting redis-server
//
// Rows (every call admitted: the limits are far above what a run consumes, so the numbers are the
// cost of judging and charging, not of refusing):
//   quota 1 axis      one global axis                          — one EVALSHA per call
//   quota 2 axes      account (1,000 users round-robin) + global — one EVALSHA per call
//   bottleneck        new Bottleneck({ reservoir, reservoirRefreshInterval, datastore: 'ioredis' }),
//                     limiter.schedule(noop): bottleneck's global count per interval (one axis; it has
//                     no atomic multi-axis rule) — several scripts per call (submit, register, free)
//
// Build the packages first (limits-core and limits-redis dist). Redis is started by this script on a
// free 127.0.0.1 port (`redis-server --save '' --appendonly no`) unless REDIS_PORT is set.
import Bottleneck from 'bottleneck';
import { Redis } from 'ioredis';
import { Quota } from 'limits-core';
import { RedisQuotaStore } from 'limits-redis';
import { measure, startRedis } from './redis-bench.mjs';

const arg = (name, fallback) => {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? fallback : Number(a.split('=')[1]);
};
const quick = process.argv.includes('--quick');
const seconds = arg('seconds', quick ? 0.5 : 3);
const rounds = arg('rounds', quick ? 1 : 2);
const CONCURRENCY = [1, 50];
const BIG = 1e12;

async function contenders(port) {
  const clients = [];
  const client = async () => {
    const c = new Redis(port, '127.0.0.1');
    clients.push(c);
    await new Promise((resolve) => c.once('ready', resolve));
    return c;
  };
  const store = new RedisQuotaStore(await client(), { onFailure: 'closed', timeoutMs: 2_000 });
  const oneAxis = new Quota({
    name: `s4-one-${process.pid}`,
    windowMs: 3_600_000,
    store,
    axes: [{ name: 'global', key: () => 'all', limit: BIG, status: 503 }],
  });
  const twoAxes = new Quota({
    name: `s4-two-${process.pid}`,
    windowMs: 3_600_000,
    store,
    axes: [
      { name: 'account', key: (u) => u, limit: BIG, status: 429 },
      { name: 'global', key: () => 'all', limit: BIG, status: 503 },
    ],
  });
  const check = (r) => {
    if (!r.ok) throw new Error(`refused: ${JSON.stringify(r)}`);
  };
  const bottleneck = new Bottleneck({
    id: `s4-bottleneck-${process.pid}`,
    datastore: 'ioredis',
    clearDatastore: true,
    clientOptions: { host: '127.0.0.1', port },
    reservoir: BIG,
    reservoirRefreshInterval: 3_600_000,
    reservoirRefreshAmount: BIG,
  });
  bottleneck.on('error', () => {});
  await bottleneck.ready();
  const noop = () => Promise.resolve();
  return {
    rows: [
      ['quota 1 axis', (_id, i) => oneAxis.consume(i).then(check)],
      ['quota 2 axes', (id, i) => twoAxes.consume(`u${(id * 7919 + i) % 1000}`).then(check)],
      ['bottleneck (Redis)', () => bottleneck.schedule(noop)],
    ],
    /** Redis' own CPU time per quota script call (INFO commandstats), for sizing. */
    async scriptCost(op) {
      await clients[0].config('RESETSTAT');
      await measure(op, 50, seconds * 1000);
      const info = await clients[0].info('commandstats');
      return /cmdstat_evalsha:calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/.exec(info);
    },
    async close() {
      await bottleneck.disconnect(true);
      for (const c of clients) c.disconnect();
    },
  };
}

const redis = await startRedis();
const { rows, close, scriptCost } = await contenders(redis.port);
const results = new Map();
let cost;
try {
  // Warm-up: load the scripts, open the connections.
  for (const [, op] of rows) for (let i = 0; i < 50; i++) await op(0, i);
  for (let round = 0; round < rounds; round++)
    for (const concurrency of CONCURRENCY)
      for (const [name, op] of rows) {
        const r = await measure(op, concurrency, seconds * 1000);
        const key = `${name}|${concurrency}`;
        if (!results.has(key)) results.set(key, []);
        results.get(key).push(r);
      }
  cost = [await scriptCost(rows[0][1]), await scriptCost(rows[1][1])];
} finally {
  await close();
  redis.stop();
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
console.log(
  `S4 quota — Node ${process.version}, ${seconds} s per cell, ${rounds} round(s), loopback Redis (medians over rounds)`,
);
console.log('| contender | callers | ops/s | p50 ms | p99 ms | errors |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const concurrency of CONCURRENCY)
  for (const [name] of rows) {
    const rs = results.get(`${name}|${concurrency}`);
    console.log(
      `| ${name} | ${concurrency} | ${median(rs.map((r) => r.opsPerSec)).toFixed(0)} | ${median(rs.map((r) => r.p50)).toFixed(3)} | ${median(rs.map((r) => r.p99)).toFixed(3)} | ${rs.reduce((a, r) => a + r.errors, 0)} |`,
    );
  }
if (cost)
  for (const [i, c] of cost.entries())
    if (c)
      console.log(
        `Redis CPU per quota script call, ${rows[i][0]}: ${c[2]} µs (${c[1]} calls) — one Redis core runs at most ~${Math.round(1e6 / Number(c[2]))} such calls/s`,
      );
