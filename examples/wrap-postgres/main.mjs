// node-postgres (`pg`) behind a limits-core Limiter, against a real PostgreSQL that slows down.
//
// The pattern: every query goes through `limiter.run(() => pool.query(...))`. The Vegas limit learns
// how many queries the database takes at once from their latency; when queries slow down it shrinks,
// so only a few connections sit on the slow database and the rest of the requests get an answer at
// once (here a "cached" one) instead of waiting in the pool's queue behind them.
//
// The setup (postgres.mjs) starts a throwaway PostgreSQL on a free loopback port in a temp dir and
// removes it at the end, even on failure. Queries are `SELECT pg_sleep(...)`: 10 ms each, then 300 ms
// for a while, then 10 ms again; 200 requests/s arrive whatever happens (open loop).
//
//   node wrap-postgres/main.mjs           about 10 s (plus the server's start)
//   node wrap-postgres/main.mjs --quick   about 5 s (the test suite runs this)
import { LimitExceededError, Limiter, VegasLimit } from 'limits-core';
import pg from 'pg';
import { startPostgres } from './postgres.mjs';

const quick = process.argv.includes('--quick');
// Seconds of each phase: queries take 10 ms, then 300 ms, then 10 ms again.
const [BEFORE_S, SLOW_S, AFTER_S] = quick ? [1.5, 2, 1.5] : [3, 4, 3];
const SLOW_FROM = BEFORE_S;
const SLOW_TO = BEFORE_S + SLOW_S;
const END = SLOW_TO + AFTER_S;
const RATE = 200; // requests per second
const POOL_SIZE = 10;

// Ctrl-C (or a test's timeout) ends the run early; the `finally` below still stops the server and
// removes its directory.
const interrupt = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => interrupt.abort(signal));
const db = await startPostgres();
let pool;

try {
  console.log(
    `PostgreSQL on ${db.host}:${db.port} (pid ${db.pid}${db.runAs ? `, run as user ${db.runAs}` : ''}), data in ${db.dir}`,
  );
  pool = new pg.Pool({
    host: db.host,
    port: db.port,
    user: db.user,
    database: db.database,
    max: POOL_SIZE,
  });
  pool.on('error', (error) => console.error(`idle client error: ${error.message}`));

  // ---- the pattern ----
  // A small capacity: never more than the pool's connections, so queries never queue inside the pool.
  const limiter = new Limiter({
    algorithm: new VegasLimit({ initialLimit: POOL_SIZE, maxLimit: POOL_SIZE }),
    probeSlots: 1, // keep one query going to a slow database, so its recovery is seen
  });
  const query = (text, values) => limiter.run(() => pool.query(text, values));
  // ---- end of the pattern ----

  // Open the pool's connections first, so connecting does not count as query latency.
  await Promise.all(Array.from({ length: POOL_SIZE }, () => pool.query('SELECT 1')));

  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const phaseAt = (t) => (t < SLOW_FROM ? 'before' : t < SLOW_TO ? 'slow' : 'after');
  const stats = {};
  for (const phase of ['before', 'slow', 'after']) {
    stats[phase] = { limits: [], inUse: 0, waiting: 0, served: 0, fellBack: 0, latencies: [] };
  }

  /** One request: a query through the limiter, or at once a fallback when the limiter says no. */
  async function request() {
    const phase = phaseAt(elapsed());
    const seconds = phase === 'slow' ? 0.3 : 0.01;
    const t0 = performance.now();
    try {
      await query('SELECT pg_sleep($1)', [seconds]);
      stats[phase].served++;
      stats[phase].latencies.push(performance.now() - t0);
    } catch (error) {
      if (!(error instanceof LimitExceededError)) throw error;
      stats[phase].fellBack++; // a real service would answer from a cache, or with a 503
    }
  }

  console.log(
    `pool of ${POOL_SIZE}; queries take 10 ms, 300 ms from ${SLOW_FROM} s to ${SLOW_TO} s; ${RATE} requests/s\n` +
      '    t  phase   limit  in use  pool waiting',
  );
  const requests = [];
  let lastPrint = -1;
  await new Promise((resolve) => {
    const tick = setInterval(() => {
      const t = elapsed();
      const s = stats[phaseAt(t)];
      // What the pool holds right now: connections checked out, and callers waiting for one.
      const inUse = pool.totalCount - pool.idleCount;
      s.limits.push(limiter.limit);
      s.inUse = Math.max(s.inUse, inUse);
      s.waiting = Math.max(s.waiting, pool.waitingCount);
      if (t - lastPrint >= 0.5) {
        lastPrint = t;
        console.log(
          `${t.toFixed(1).padStart(5)}s ${phaseAt(t).padEnd(7)} ${String(limiter.limit).padStart(5)} ${String(inUse).padStart(7)} ${String(pool.waitingCount).padStart(13)}`,
        );
      }
      const due = Math.floor(Math.min(t, END) * RATE);
      while (requests.length < due) requests.push(request());
      if (t >= END || interrupt.signal.aborted) {
        clearInterval(tick);
        resolve();
      }
    }, 5);
  });
  await Promise.all(requests);
  await limiter.close();

  for (const [name, s] of interrupt.signal.aborted ? [] : Object.entries(stats)) {
    const mean = s.limits.reduce((a, b) => a + b, 0) / Math.max(1, s.limits.length);
    const sorted = s.latencies.sort((a, b) => a - b);
    const median = sorted.length > 0 ? sorted[Math.floor(sorted.length / 2)].toFixed(0) : '-';
    console.log(
      `${name}: limit mean ${mean.toFixed(1)} (min ${Math.min(...s.limits)}), ` +
        `connections in use peak ${s.inUse}, pool waiting peak ${s.waiting}, ` +
        `${s.served} queries (median ${median} ms), ${s.fellBack} fell back`,
    );
  }
} finally {
  await pool?.end();
  await db.stop();
  console.log(`PostgreSQL stopped; ${db.dir} removed`);
}
if (interrupt.signal.aborted) {
  console.log(`stopped early by ${interrupt.signal.reason}`);
  process.exitCode = interrupt.signal.reason === 'SIGINT' ? 130 : 143;
}
