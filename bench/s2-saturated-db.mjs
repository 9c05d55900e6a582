// Scenario S2 — a saturated database behind a concurrency limiter, with per-request deadlines.
//
//   node bench/s2-saturated-db.mjs               full run: 30 s at 60 req/s, then 10 s at 20 req/s, then
//                                                until every query has left the database (~55–60 s)
//   node bench/s2-saturated-db.mjs --quick       smoke test: 3 s overload + 2 s recovery
//   node bench/s2-saturated-db.mjs --overload-s=60 --recovery-s=40   other phase lengths
//   node bench/s2-saturated-db.mjs --json=out.json   also write every request record as JSON
//   node bench/s2-saturated-db.mjs --only=limits-core,vegas   run a subset of contenders
//   LIMITS_CORE=/abs/path/dist/index.js node bench/s2-saturated-db.mjs   another build of limits-core
//
// The database (class Db below, one per contender process) runs at most 4 queries at once, 100 ms
// each (a timer), so it completes at most 40 queries/s. A query sent while 4 run waits inside the
// database, in FIFO order, and runs when a slot frees (the slot passes to it in the same turn). The
// database does not know about callers: a query whose caller gave up (timed out, aborted) still runs
// and occupies a slot for its 100 ms once it reached the database; only a request that never left the
// contender's queue costs the database nothing. Every contender talks to the same model.
//
// Offered load is open loop: request n arrives at t0 + n * (1000 / rate) (scheduled from the phase
// start, so the rate does not drift), whatever happened to earlier requests. Each request needs its
// answer within 250 ms of its arrival.
//
// Contenders (each in its own child process, all children run at the same time; the work is
// timer-bound, so they do not compete for CPU in any way that matters — the "max arrival-timer lag"
// column shows how late the arrival timer fired):
//   limits-core      new Limiter({ limit: 4, maxQueued: 1000 }); limiter.run(job, { timeoutMs: 250 })
//   vegas            new Limiter({ algorithm: new VegasLimit({ initialLimit: 4, maxLimit: 8 }),
//                    maxQueued: 1000 }); limiter.run(job, { timeoutMs: 250 }) — an adaptive limit that
//                    does not know the pool's size: it starts at the pool's 4 and may grow to twice it
//   fifo             hand-written semaphore (4 permits) with an unbounded FIFO array queue, no deadlines
//   p-queue-timeout  new PQueue({ concurrency: 4 }); queue.add(job, { timeout: 250 })
//   p-queue-signal   (extra) new PQueue({ concurrency: 4 }); queue.add(job, { signal: AbortSignal.timeout(250) })
// `run()` with `timeoutMs` answers the caller at the deadline but keeps the permit until the query
// really ends, so the limiters never have more queries at the database than their limit; p-queue with
// a signal frees the slot of a running task when its signal aborts, so it may.
//
// Per request we record: arrival; `sent` (the contender called the job: the query reached the
// database); `start` / `end` (the database began / finished executing it); `left` (it left the
// contender's queue without being sent); outcome: ok (ended by its deadline), late (ended after it),
// rejected (refused at admission), expired (left the contender's queue without being sent).
//
// What is reported:
// - goodput by completion time: queries that ended by their deadline, counted in the second in
//   which they ended (a per-second table), and over each phase's window (overload: ends in
//   [0, T1]; recovery: ends in (T1, T2]), as a share of the database's 40/s (overload) or of the
//   offered 20/s (recovery);
// - executions wasted on expired requests: queries the database executed for a request whose
//   deadline had passed by the time the query ended (whole run); of them, those that reached the
//   database after the deadline, and those that began executing after it (they waited in the database);
// - queue age: the oldest request in the contender's queue (sampled every 100 ms / exact from the
//   records), and the wait inside the database (start − sent);
// - recovery after the overload phase ends (t = T1), exact from the records: the later of (a) the last
//   moment any request waited in the contender's queue, (b) the last moment any query waited inside
//   the database, (c) the arrival of the first request from which every later arrival ends by its
//   deadline; each is shown too. Measured past T2 when the queues drain later (the run keeps going
//   until every query has left the database, at most 120 s more);
// - for the limits-core contenders, the limit and in-flight sampled every 100 ms over the overload phase.
// Arrival-based counts (offered, rejected, expired, latency of the ok ones) cover the overload arrivals.

import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { distFingerprint as fingerprint } from './harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SELF = fileURLToPath(import.meta.url);

const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const QUICK = flag('quick');
const OVERLOAD_S = Number(opt('overload-s') ?? (QUICK ? 3 : 30));
const RECOVERY_S = Number(opt('recovery-s') ?? (QUICK ? 2 : 10));
const OVERLOAD_RATE = 60; // req/s
const RECOVERY_RATE = 20; // req/s
const DEADLINE_MS = 250;
const QUERY_MS = 100;
const DB_SLOTS = 4;
const CAPACITY_PER_S = (DB_SLOTS * 1000) / QUERY_MS; // 40 queries/s
const SAMPLE_MS = 100;
const DRAIN_LIMIT_MS = 120_000;
const VEGAS = { initialLimit: DB_SLOTS, maxLimit: 2 * DB_SLOTS };

const CONTENDERS = {
  'limits-core':
    'limits-core `Limiter({ limit: 4, maxQueued: 1000 })`, `run(job, { timeoutMs: 250 })`',
  vegas:
    'limits-core `Limiter({ algorithm: new VegasLimit({ initialLimit: 4, maxLimit: 8 }), maxQueued: 1000 })`, `run(job, { timeoutMs: 250 })` (other Vegas options default)',
  fifo: 'hand-written semaphore, 4 permits, unbounded FIFO queue, no deadline',
  'p-queue-timeout': 'p-queue 9.3.5 `{ concurrency: 4 }`, `add(job, { timeout: 250 })`',
  'p-queue-signal':
    '(extra) p-queue 9.3.5 `{ concurrency: 4 }`, `add(job, { signal: AbortSignal.timeout(250) })`',
};

// ---------------------------------------------------------------------------------------------
// Child: run one contender through the scenario and send the raw records back.

/** performance.now() at the start of the scenario; every recorded time is relative to it. */
let T0 = 0;
const now = () => performance.now() - T0;
/**
 * Macrotask counter: bumped by every timer callback this script owns (arrivals, samples, queries).
 * A request whose query is sent in the same turn as its arrival was admitted at once; one sent in a
 * later turn waited in the contender's queue (a synchronous GC/JIT pause between arrival and sending
 * is not queueing, so we do not use a time threshold).
 */
let turn = 0;
const sleep = (ms) =>
  new Promise((resolve) =>
    setTimeout(() => {
      turn++;
      resolve();
    }, ms),
  );

/**
 * The database: at most `slots` queries execute at once, `queryMs` each; the others wait inside it
 * in FIFO order. It runs every query it receives, whether or not its caller still waits.
 */
class Db {
  active = 0;
  maxActive = 0;
  /** Queries waiting inside the database: [rec, resolve] pairs from `head` on. */
  waiting = [];
  head = 0;
  maxWaiting = 0;
  constructor(slots, queryMs) {
    this.slots = slots;
    this.queryMs = queryMs;
  }
  get queued() {
    return this.waiting.length - this.head;
  }
  /** Sends the query of request `rec`; resolves when the database has finished executing it. */
  query(rec) {
    rec.sent = now();
    rec.sentTurn = turn;
    return new Promise((resolve) => {
      if (this.active < this.slots && this.queued === 0) {
        this.#execute(rec, resolve);
      } else {
        rec.dbQueued = true;
        this.waiting.push([rec, resolve]);
        if (this.queued > this.maxWaiting) this.maxWaiting = this.queued;
      }
    });
  }
  #execute(rec, resolve) {
    this.active++;
    if (this.active > this.maxActive) this.maxActive = this.active;
    rec.start = now();
    setTimeout(() => {
      turn++;
      rec.end = now();
      rec.outcome = rec.end <= rec.deadline ? 'ok' : 'late';
      this.active--;
      // The freed slot goes to the oldest waiting query first, before any caller hears of this one.
      if (this.queued > 0) {
        const next = this.waiting[this.head];
        this.waiting[this.head++] = undefined;
        if (this.head > 1024 && this.head * 2 > this.waiting.length) {
          this.waiting = this.waiting.slice(this.head);
          this.head = 0;
        }
        this.#execute(next[0], next[1]);
      }
      resolve();
    }, this.queryMs);
  }
}

async function makeContender(name) {
  if (name === 'limits-core' || name === 'vegas') {
    const { Limiter, LimitExceededError, VegasLimit } = await importLimitsCore();
    const limiter = new Limiter({
      ...(name === 'vegas' ? { algorithm: new VegasLimit(VEGAS) } : { limit: DB_SLOTS }),
      maxQueued: 1000,
    });
    return {
      issue(rec, job) {
        limiter.run(job, { timeoutMs: DEADLINE_MS }).then(
          () => {},
          (e) => {
            // A sent query past its deadline: run() answers at the deadline with a TimeoutError
            // (the time limit is end to end); the query itself still finishes and is counted then.
            if (e?.name === 'TimeoutError') {
              rec.reason = 'TimeoutError';
              rec.callerGaveUpAt = now();
              return;
            }
            if (!(e instanceof LimitExceededError)) throw e;
            rec.reason = e.reason;
            if (rec.sent === undefined) {
              rec.left = now();
              rec.outcome = e.reason === 'expired' ? 'expired' : 'rejected';
            }
          },
        );
      },
      queueState() {
        const s = limiter.snapshot();
        return {
          queued: s.queued,
          oldestMs: s.oldestQueuedMs,
          limit: s.limit,
          inflight: s.inflight,
        };
      },
    };
  }
  if (name === 'fifo') {
    let active = 0;
    let queue = [];
    let head = 0;
    const acquire = () => {
      if (active < DB_SLOTS && head === queue.length) {
        active++;
        return Promise.resolve();
      }
      return new Promise((resolve) => queue.push(resolve));
    };
    const release = () => {
      if (head < queue.length) {
        const next = queue[head];
        queue[head++] = undefined;
        if (head > 1024 && head * 2 > queue.length) {
          queue = queue.slice(head);
          head = 0;
        }
        next(); // the permit passes straight to the oldest waiter
      } else {
        active--;
      }
    };
    return {
      issue(_rec, job) {
        acquire().then(() => job().finally(release));
      },
      queueState: () => ({ queued: queue.length - head, oldestMs: undefined }),
    };
  }
  if (name === 'p-queue-timeout' || name === 'p-queue-signal') {
    const { default: PQueue, TimeoutError } = await import('p-queue');
    const queue = new PQueue({ concurrency: DB_SLOTS });
    const withSignal = name === 'p-queue-signal';
    return {
      issue(rec, job) {
        const options = withSignal
          ? { signal: AbortSignal.timeout(DEADLINE_MS) }
          : { timeout: DEADLINE_MS };
        queue
          .add(() => job(), options)
          .then(
            () => {},
            (e) => {
              // p-queue's `timeout` rejects the caller's promise when a *running* task takes longer than
              // `timeout`; the abort signal rejects it whether the task is queued or running. Either way
              // a query already sent keeps running in the database (we record when it really ends).
              rec.reason = e instanceof TimeoutError ? 'p-queue timeout' : (e?.name ?? String(e));
              rec.callerGaveUpAt = now();
              if (rec.sent === undefined) {
                rec.left = now();
                rec.outcome = 'expired';
              }
            },
          );
      },
      queueState: () => ({ queued: queue.size, oldestMs: undefined }),
    };
  }
  throw new Error(`unknown contender ${name}`);
}

async function importLimitsCore() {
  // LIMITS_CORE=/abs/path/to/dist/index.js benchmarks another build of limits-core.
  return process.env.LIMITS_CORE ? import(process.env.LIMITS_CORE) : import('limits-core');
}

async function child(name) {
  const contender = await makeContender(name);
  const db = new Db(DB_SLOTS, QUERY_MS);
  const records = [];
  const samples = [];
  let maxIssueLag = 0;

  // Arrival schedule, relative to t0.
  const schedule = [];
  const period1 = 1000 / OVERLOAD_RATE;
  const n1 = Math.round(OVERLOAD_S * OVERLOAD_RATE);
  for (let i = 0; i < n1; i++) schedule.push({ at: i * period1, phase: 'overload' });
  const period2 = 1000 / RECOVERY_RATE;
  const n2 = Math.round(RECOVERY_S * RECOVERY_RATE);
  for (let i = 0; i < n2; i++)
    schedule.push({ at: OVERLOAD_S * 1000 + i * period2, phase: 'recovery' });
  const endOfInflow = (OVERLOAD_S + RECOVERY_S) * 1000;

  // Start on a common wall-clock boundary so the concurrent children line up.
  const startAtEpoch = Number(process.env.S2_START_AT_EPOCH ?? Date.now() + 200);
  await sleep(Math.max(0, startAtEpoch - Date.now()));
  T0 = performance.now();

  const issue = (slot) => {
    const arrival = now();
    maxIssueLag = Math.max(maxIssueLag, arrival - slot.at);
    const rec = {
      phase: slot.phase,
      arrival,
      deadline: arrival + DEADLINE_MS,
      issueTurn: turn,
      sent: undefined,
      sentTurn: undefined,
      dbQueued: false,
      start: undefined,
      end: undefined,
      left: undefined,
      outcome: undefined,
      reason: undefined,
      callerGaveUpAt: undefined,
    };
    records.push(rec);
    contender.issue(rec, () => db.query(rec));
  };

  // Queue sampler: every 100 ms (scheduled from t0).
  let oldestIdx = 0;
  const sample = () => {
    const t = now();
    // Own bookkeeping: the oldest request neither sent nor gone (every contender here is FIFO).
    while (
      oldestIdx < records.length &&
      (records[oldestIdx].sent !== undefined || records[oldestIdx].left !== undefined)
    ) {
      oldestIdx++;
    }
    const ownOldest = oldestIdx < records.length ? t - records[oldestIdx].arrival : 0;
    const q = contender.queueState();
    samples.push({
      t,
      queued: q.queued,
      oldestMs: q.oldestMs ?? ownOldest,
      ownOldestMs: ownOldest,
      limit: q.limit,
      inflight: q.inflight,
      dbActive: db.active,
      dbQueued: db.queued,
    });
  };

  let next = 0;
  let sampleN = 0;
  await new Promise((resolve) => {
    const tick = () => {
      turn++;
      const t = now();
      while (next < schedule.length && schedule[next].at <= t) issue(schedule[next++]);
      while (sampleN * SAMPLE_MS <= t) {
        sample();
        sampleN++;
      }
      if (next >= schedule.length && t >= endOfInflow) return resolve();
      const nextAt = Math.min(
        next < schedule.length ? schedule[next].at : endOfInflow,
        sampleN * SAMPLE_MS,
        endOfInflow,
      );
      setTimeout(tick, Math.max(0, nextAt - now()));
    };
    tick();
  });

  // After the inflow ends: keep sampling until every request has been answered and every query
  // has left the database (bounded).
  const drainStart = performance.now();
  const pending = (r) => (r.sent === undefined ? r.left === undefined : r.end === undefined);
  for (;;) {
    if (!records.some(pending) || performance.now() - drainStart > DRAIN_LIMIT_MS) break;
    await sleep(SAMPLE_MS);
    sample();
  }
  process.send(
    {
      name,
      records,
      samples,
      dbMaxActive: db.maxActive,
      dbMaxWaiting: db.maxWaiting,
      maxIssueLag,
      overloadS: OVERLOAD_S,
      recoveryS: RECOVERY_S,
      unfinished: records.filter(pending).length,
      limitsCore: distFingerprint(),
    },
    () => process.exit(0),
  );
}

function distFingerprint() {
  // Which build of limits-core ran (dist could be rebuilt while we run).
  return fingerprint(
    process.env.LIMITS_CORE
      ? path.dirname(process.env.LIMITS_CORE)
      : path.join(HERE, 'node_modules', 'limits-core', 'dist'),
  );
}

// ---------------------------------------------------------------------------------------------
// Parent: start the children, wait, analyse, print.

function quantile(sorted, q) {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

const mean = (xs) => (xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length);

function analyse(res) {
  const T1 = res.overloadS * 1000;
  const T2 = (res.overloadS + res.recoveryS) * 1000;
  const all = res.records;
  const over = all.filter((r) => r.phase === 'overload');
  const count = (rs, pred) => rs.filter(pred).length;
  const ran = all.filter((r) => r.end !== undefined);
  const okEnds = ran.filter((r) => r.outcome === 'ok');
  const lat = over
    .filter((r) => r.outcome === 'ok')
    .map((r) => r.end - r.arrival)
    .sort((a, b) => a - b);
  // Goodput by completion time.
  const okIn = (from, to) => count(okEnds, (r) => r.end > from && r.end <= to);
  const okOverload = okIn(-Infinity, T1);
  const okRecovery = okIn(T1, T2);
  const perSecond = [];
  for (const r of ran) {
    const s = Math.floor(r.end / 1000);
    perSecond[s] ??= { ok: 0, wasted: 0 };
    perSecond[s][r.outcome === 'ok' ? 'ok' : 'wasted']++;
  }
  // Executions wasted on expired requests (whole run).
  const wasted = ran.filter((r) => r.end > r.deadline);
  const dbWaits = ran.map((r) => r.start - r.sent).sort((a, b) => a - b);
  // A query's own time is QUERY_MS by construction; more means its timer fired late (a stalled
  // event loop in this process, e.g. a busy machine), which can make a query late by itself.
  const queryTimes = ran.map((r) => r.end - r.start).sort((a, b) => a - b);
  const stalled = (r) => r.end - r.start > QUERY_MS * 1.1;
  const overSamples = res.samples.filter((s) => s.t <= T1);
  const maxAgeSampled = Math.max(0, ...overSamples.map((s) => s.oldestMs));
  // A request queued in the contender if it left the queue unsent, or its query was sent in a later
  // macrotask than its arrival (see `turn`). Its queue interval is [arrival, sent or left).
  const queuedUntil = (r) =>
    r.sent === undefined ? (r.left ?? Infinity) : r.sentTurn !== r.issueTurn ? r.sent : undefined;
  const waits = over.map((r) => (queuedUntil(r) ?? r.arrival) - r.arrival);
  const maxWaitExact = Math.max(0, ...waits);
  // Recovery, relative to T1 (0 if already true at T1).
  let lastQueued = -Infinity;
  let lastDbQueued = -Infinity;
  for (const r of all) {
    const until = queuedUntil(r);
    if (until !== undefined) lastQueued = Math.max(lastQueued, until);
    if (r.dbQueued) lastDbQueued = Math.max(lastDbQueued, r.start ?? Infinity);
  }
  // The first arrival from which every later arrival ends by its deadline.
  let firstGood = Infinity;
  for (let i = all.length - 1; i >= 0 && all[i].outcome === 'ok'; i--) firstGood = all[i].arrival;
  const rel = (t) => Math.max(0, t - T1);
  const queueMs = rel(lastQueued);
  const dbQueueMs = rel(lastDbQueued);
  const deadlinesMs = rel(firstGood);
  const recoveryMs = Math.max(queueMs, dbQueueMs, deadlinesMs);
  const recSamples = res.samples.filter((s) => s.t > T1 && s.t <= T2);
  const limits = overSamples.map((s) => s.limit).filter((x) => x !== undefined);
  return {
    name: res.name,
    offered: over.length,
    okOverload,
    goodput: okOverload / res.overloadS,
    goodputPct: (100 * okOverload) / res.overloadS / CAPACITY_PER_S,
    okRecovery,
    recoveryGoodput: okRecovery / res.recoveryS,
    recoveryPct: (100 * okRecovery) / res.recoveryS / RECOVERY_RATE,
    ranOverload: count(ran, (r) => r.end <= T1),
    perSecond,
    wasted: wasted.length,
    wastedSentLate: count(wasted, (r) => r.sent > r.deadline),
    wastedStartedLate: count(wasted, (r) => r.start > r.deadline),
    wastedStalled: count(wasted, stalled),
    queryP99: quantile(queryTimes, 0.99),
    queryMax: queryTimes.length ? queryTimes.at(-1) : Number.NaN,
    executed: ran.length,
    rejected: count(over, (r) => r.outcome === 'rejected'),
    expired: count(over, (r) => r.outcome === 'expired'),
    p50: quantile(lat, 0.5),
    p99: quantile(lat, 0.99),
    maxAgeSampled,
    maxWaitExact,
    dbWaitP99: quantile(dbWaits, 0.99),
    dbWaitMax: dbWaits.length ? dbWaits.at(-1) : Number.NaN,
    dbQueuedCount: count(ran, (r) => r.dbQueued),
    dbMaxWaiting: res.dbMaxWaiting,
    dbMaxActive: res.dbMaxActive,
    meanDbQueued: mean(overSamples.map((s) => s.dbQueued)),
    queueMs,
    dbQueueMs,
    deadlinesMs,
    recoveryMs,
    inPhase: recoveryMs <= T2 - T1,
    queuedAtEnd: recSamples.at(-1)?.queued ?? 0,
    dbQueuedAtEnd: recSamples.at(-1)?.dbQueued ?? 0,
    limitMean: mean(limits),
    limitMin: limits.length ? Math.min(...limits) : Number.NaN,
    limitMax: limits.length ? Math.max(...limits) : Number.NaN,
    inflightMean: mean(overSamples.map((s) => s.inflight).filter((x) => x !== undefined)),
    unfinished: res.unfinished,
    maxIssueLag: res.maxIssueLag,
    reasons: over.reduce((m, r) => {
      if (r.reason) m[r.reason] = (m[r.reason] ?? 0) + 1;
      return m;
    }, {}),
  };
}

const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : String(x));

async function parent() {
  const only = opt('only')?.split(',') ?? Object.keys(CONTENDERS);
  for (const name of only) {
    if (!(name in CONTENDERS)) throw new Error(`unknown contender ${name}`);
  }
  const startAt = Date.now() + 500;
  const started = performance.now();
  const results = await Promise.all(
    only.map(
      (name) =>
        new Promise((resolve, reject) => {
          const c = fork(SELF, ['--child', name, ...args], {
            env: { ...process.env, S2_START_AT_EPOCH: String(startAt) },
          });
          c.on('message', resolve);
          c.on('error', reject);
          c.on('exit', (code) => code !== 0 && reject(new Error(`${name} exited with ${code}`)));
        }),
    ),
  );
  const wall = (performance.now() - started) / 1000;
  const rows = results.map(analyse);
  const pkg = (name) =>
    JSON.parse(readFileSync(path.join(HERE, 'node_modules', name, 'package.json'), 'utf8')).version;
  const overloadS = results[0]?.overloadS ?? OVERLOAD_S;
  const recoveryS = results[0]?.recoveryS ?? RECOVERY_S;

  const lines = [];
  const env = process.env.LIMITS_CORE ? `LIMITS_CORE=${process.env.LIMITS_CORE} ` : '';
  lines.push(
    `Command: \`${env}node bench/s2-saturated-db.mjs${args.length ? ` ${args.join(' ')}` : ''}\``,
  );
  lines.push(
    `Node ${process.version}, ${os.cpus()[0].model} (${os.cpus().length} CPUs), ${os.platform()} ${os.arch()}; ` +
      `limits-core ${pkg('limits-core')} (dist ${[...new Set(results.map((r) => r.limitsCore))].join(', ')}), p-queue ${pkg('p-queue')}`,
  );
  lines.push(
    `Load: ${OVERLOAD_RATE} req/s for ${overloadS} s (T1 = ${overloadS} s), then ${RECOVERY_RATE} req/s for ${recoveryS} s (T2 = ${overloadS + recoveryS} s); ` +
      `database: ${DB_SLOTS} queries at once, ${QUERY_MS} ms each (capacity ${CAPACITY_PER_S}/s), the rest wait inside it (FIFO); deadline ${DEADLINE_MS} ms from arrival. ` +
      `One child process per contender, all running at the same time. Wall time ${wall.toFixed(1)} s.`,
  );
  lines.push('');
  lines.push(
    `Overloaded phase — goodput counts queries that ended by their deadline in [0, ${overloadS} s]; offered / rejected / expired / latency count the overload arrivals:`,
  );
  lines.push('');
  lines.push(
    '| contender | offered | done in time (ended ≤ T1) | goodput /s | % of 40/s | DB runs ended ≤ T1 | rejected | expired in queue | p50 / p99 ms (ok) | max queued age ms (sampled / exact) | limit mean (min–max) | in-flight mean |',
  );
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const r of rows) {
    const limit = Number.isNaN(r.limitMean)
      ? '4 (fixed)'
      : `${fmt(r.limitMean, 2)} (${fmt(r.limitMin, 2)}–${fmt(r.limitMax, 2)})`;
    lines.push(
      `| ${r.name} | ${r.offered} | ${r.okOverload} | ${fmt(r.goodput, 1)} | ${fmt(r.goodputPct, 1)} % | ${r.ranOverload} | ${r.rejected} | ${r.expired} | ${fmt(r.p50, 1)} / ${fmt(r.p99, 1)} | ${fmt(r.maxAgeSampled)} / ${fmt(r.maxWaitExact)} | ${limit} | ${Number.isNaN(r.inflightMean) ? '–' : fmt(r.inflightMean, 2)} |`,
    );
  }
  lines.push('');
  lines.push('The database, whole run (every query it executed):');
  lines.push('');
  lines.push(
    '| contender | executed | wasted: ended past deadline | of which reached the DB past deadline | of which began executing past deadline | of which the query itself took > 110 ms (late timer) | query time p99 / max ms (100 nominal) | waited inside the DB | DB wait p99 / max ms | max waiting inside the DB | mean waiting inside the DB (overload) | max executing |',
  );
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${r.executed} | ${r.wasted} | ${r.wastedSentLate} | ${r.wastedStartedLate} | ${r.wastedStalled} | ${fmt(r.queryP99)} / ${fmt(r.queryMax)} | ${r.dbQueuedCount} | ${fmt(r.dbWaitP99)} / ${fmt(r.dbWaitMax)} | ${r.dbMaxWaiting} | ${fmt(r.meanDbQueued, 1)} | ${r.dbMaxActive} |`,
    );
  }
  lines.push('');
  lines.push(
    `Recovery (inflow back to ${RECOVERY_RATE} req/s at T1 = ${overloadS} s; times from T1, exact from the records; the run continues past T2 until the database is empty):`,
  );
  lines.push('');
  lines.push(
    '| contender | recovered after (the latest of the next three) | contender queue empty for good | DB queue empty for good | arrivals meet their deadline from | done in time in (T1, T2] (% of offered 20/s) | queued in contender / in DB at T2 | max arrival-timer lag ms |',
  );
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|');
  const ms = (x) => (Number.isFinite(x) ? `${fmt(x)} ms` : 'never');
  for (const r of rows) {
    const drained = Math.max(r.queueMs, r.dbQueueMs);
    const rec = !Number.isFinite(r.recoveryMs)
      ? `not by T2 (queues empty after ${ms(drained)})`
      : r.inPhase
        ? ms(r.recoveryMs)
        : `${ms(r.recoveryMs)} (after T2)`;
    lines.push(
      `| ${r.name} | ${rec} | ${ms(r.queueMs)} | ${ms(r.dbQueueMs)} | ${ms(r.deadlinesMs)} | ${r.okRecovery} (${fmt(r.recoveryPct, 1)} %) | ${r.queuedAtEnd} / ${r.dbQueuedAtEnd} | ${fmt(r.maxIssueLag, 1)} |`,
    );
  }
  const unfinished = rows.filter((r) => r.unfinished > 0);
  if (unfinished.length > 0) {
    lines.push('');
    lines.push(
      `Not settled ${DRAIN_LIMIT_MS / 1000} s after T2: ${unfinished.map((r) => `${r.name} ${r.unfinished}`).join(', ')}.`,
    );
  }
  lines.push('');
  lines.push(
    'Per second (by completion time): queries ended by their deadline / queries ended past it (wasted).',
  );
  lines.push('');
  lines.push(`| second | ${rows.map((r) => r.name).join(' | ')} |`);
  lines.push(`|--:|${rows.map(() => '--:|').join('')}`);
  const seconds = Math.max(0, ...rows.map((r) => r.perSecond.length));
  for (let s = 0; s < seconds; s++) {
    const mark = s === overloadS ? ' (T1)' : s === overloadS + recoveryS ? ' (T2)' : '';
    const cells = rows.map((r) => {
      const c = r.perSecond[s];
      return c ? `${c.ok} / ${c.wasted}` : '0 / 0';
    });
    lines.push(`| ${s}${mark} | ${cells.join(' | ')} |`);
  }
  lines.push('');
  lines.push('Rejection / error reasons seen by callers (overload arrivals):');
  lines.push('');
  for (const r of rows) lines.push(`- ${r.name}: ${JSON.stringify(r.reasons)}`);
  lines.push('');
  lines.push('Contenders:');
  lines.push('');
  for (const name of only) lines.push(`- ${name}: ${CONTENDERS[name]}`);
  console.log(lines.join('\n'));

  const jsonPath = opt('json');
  if (jsonPath) writeFileSync(jsonPath, JSON.stringify({ args, results, rows }, null, 1));
}

if (flag('child')) {
  await child(args[args.indexOf('--child') + 1]);
} else {
  await parent();
}
