// Scenario S2 — a saturated downstream ("DB") behind a concurrency limiter, with per-request deadlines.
//
//   node bench/s2-saturated-db.mjs               full run: 30 s at 60 req/s, then 10 s at 20 req/s (~55 s)
//   node bench/s2-saturated-db.mjs --quick       smoke test: 3 s overload + 2 s recovery
//   node bench/s2-saturated-db.mjs --recovery-s=40   longer recovery phase (to see when FIFO queues drain)
//   node bench/s2-saturated-db.mjs --json=out.json   also write every request record as JSON
//   node bench/s2-saturated-db.mjs --only=limits-core,fifo   run a subset of contenders
//
// The DB: every job is `await sleep(100)`; nothing in the DB itself limits concurrency. The contender's
// concurrency of 4 is what makes it a 40 jobs/s resource. Offered load is open loop: request n arrives
// at t0 + n * (1000 / rate) (scheduled from the phase start, so the rate does not drift), whatever
// happened to earlier requests. Each request needs its result within 250 ms of its arrival.
//
// Contenders (each in its own child process, all children run at the same time; the work is
// timer-bound, so they do not compete for CPU in any way that matters — the "max issue lag" column
// shows how late the arrival timer fired):
//   limits-core      new Limiter({ limit: 4, maxQueued: 1000 }); limiter.run(job, { timeoutMs: 250 })
//   fifo             hand-written semaphore (4 permits) with an unbounded FIFO array queue, no deadlines
//   p-queue-timeout  new PQueue({ concurrency: 4 }); queue.add(job, { timeout: 250 })
//   p-queue-signal   (extra) new PQueue({ concurrency: 4 }); queue.add(job, { signal: AbortSignal.timeout(250) })
//
// Per request we record: arrival, start (DB job begins), end (DB job ends), the time it left the queue
// without running (if it did), and the outcome: ok (ran, ended by its deadline), late (ran, ended after
// it), rejected (refused at admission), expired (left the queue without running).
// Queue state (length, age of the oldest queued request) is sampled every 100 ms; for limits-core from
// limiter.snapshot(), for the others from our own bookkeeping (the oldest request that neither started
// nor left; every contender here is FIFO).

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
const JOB_MS = 100;
const CONCURRENCY = 4;
const CAPACITY_PER_S = (CONCURRENCY * 1000) / JOB_MS; // 40 jobs/s
const SAMPLE_MS = 100;

const CONTENDERS = {
  'limits-core':
    'limits-core `Limiter({ limit: 4, maxQueued: 1000 })`, `run(job, { timeoutMs: 250 })`',
  fifo: 'hand-written semaphore, 4 permits, unbounded FIFO queue, no deadline',
  'p-queue-timeout': 'p-queue 9.3.5 `{ concurrency: 4 }`, `add(job, { timeout: 250 })`',
  'p-queue-signal':
    '(extra) p-queue 9.3.5 `{ concurrency: 4 }`, `add(job, { signal: AbortSignal.timeout(250) })`',
};

// ---------------------------------------------------------------------------------------------
// Child: run one contender through the scenario and send the raw records back.

/** performance.now() at the start of the scenario; every recorded time is relative to it. */
let T0 = 0;
/**
 * Macrotask counter: bumped by every timer callback this script owns (arrivals, samples, DB jobs).
 * A request whose DB job starts in the same turn as its arrival was admitted at once; one that starts
 * in a later turn waited in the queue (a synchronous GC/JIT pause between arrival and start is not
 * queueing, so we do not use a time threshold).
 */
let turn = 0;
const sleep = (ms) =>
  new Promise((resolve) =>
    setTimeout(() => {
      turn++;
      resolve();
    }, ms),
  );

async function makeContender(name) {
  if (name === 'limits-core') {
    const { Limiter, LimitExceededError } = await importLimitsCore();
    const limiter = new Limiter({ limit: CONCURRENCY, maxQueued: 1000 });
    return {
      issue(rec, job) {
        limiter.run(job, { timeoutMs: DEADLINE_MS }).then(
          () => {},
          (e) => {
            // A started job past its deadline: run() answers at the deadline with a TimeoutError
            // (the time budget is end to end); the job itself still finishes and is counted then.
            if (e?.name === 'TimeoutError') {
              rec.reason = 'TimeoutError';
              return;
            }
            if (!(e instanceof LimitExceededError)) throw e;
            rec.reason = e.reason;
            if (rec.start === undefined) {
              rec.left = performance.now() - T0;
              rec.outcome = e.reason === 'expired' ? 'expired' : 'rejected';
            }
          },
        );
      },
      queueState() {
        const s = limiter.snapshot();
        return { queued: s.queued, oldestMs: s.oldestQueuedMs };
      },
    };
  }
  if (name === 'fifo') {
    let active = 0;
    let queue = [];
    let head = 0;
    const acquire = () => {
      if (active < CONCURRENCY && head === queue.length) {
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
    const queue = new PQueue({ concurrency: CONCURRENCY });
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
              // the task itself keeps running (we record when it really ends).
              rec.reason = e instanceof TimeoutError ? 'p-queue timeout' : (e?.name ?? String(e));
              rec.callerGaveUpAt = performance.now() - T0;
              if (rec.start === undefined) {
                rec.left = performance.now() - T0;
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
  const records = [];
  const samples = [];
  let dbActive = 0;
  let dbMaxActive = 0;
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
  const t0 = performance.now();
  T0 = t0;

  const issue = (slot) => {
    const arrival = performance.now();
    maxIssueLag = Math.max(maxIssueLag, arrival - t0 - slot.at);
    const rec = {
      phase: slot.phase,
      arrival: arrival - t0,
      deadline: arrival - t0 + DEADLINE_MS,
      start: undefined,
      issueTurn: turn,
      startTurn: undefined,
      end: undefined,
      left: undefined,
      outcome: undefined,
      reason: undefined,
      callerGaveUpAt: undefined,
    };
    records.push(rec);
    const job = async () => {
      rec.start = performance.now() - t0;
      rec.startTurn = turn;
      dbActive++;
      if (dbActive > dbMaxActive) dbMaxActive = dbActive;
      await sleep(JOB_MS);
      dbActive--;
      rec.end = performance.now() - t0;
      rec.outcome = rec.end <= rec.deadline ? 'ok' : 'late';
    };
    contender.issue(rec, job);
  };

  // Queue sampler: every 100 ms (scheduled from t0).
  let oldestIdx = 0;
  const sample = () => {
    const now = performance.now();
    // Own bookkeeping: the oldest request that neither started nor left (all contenders are FIFO).
    while (
      oldestIdx < records.length &&
      (records[oldestIdx].start !== undefined || records[oldestIdx].left !== undefined)
    ) {
      oldestIdx++;
    }
    const ownOldest = oldestIdx < records.length ? now - t0 - records[oldestIdx].arrival : 0;
    const q = contender.queueState();
    samples.push({
      t: now - t0,
      queued: q.queued,
      oldestMs: q.oldestMs ?? ownOldest,
      ownOldestMs: ownOldest,
      dbActive,
    });
  };

  let next = 0;
  let sampleN = 0;
  await new Promise((resolve) => {
    const tick = () => {
      turn++;
      const now = performance.now() - t0;
      while (next < schedule.length && schedule[next].at <= now) issue(schedule[next++]);
      while (sampleN * SAMPLE_MS <= now) {
        sample();
        sampleN++;
      }
      if (next >= schedule.length && now >= endOfInflow) return resolve();
      const nextAt = Math.min(
        next < schedule.length ? schedule[next].at : endOfInflow,
        sampleN * SAMPLE_MS,
        endOfInflow,
      );
      setTimeout(tick, Math.max(0, nextAt - (performance.now() - t0)));
    };
    tick();
  });

  // After the inflow ends: keep sampling until every request has run or left (bounded).
  const drainLimitMs = 120_000;
  const drainStart = performance.now();
  for (;;) {
    const pending = records.filter((r) => r.left === undefined && r.end === undefined).length;
    if (pending === 0 || performance.now() - drainStart > drainLimitMs) break;
    await sleep(SAMPLE_MS);
    sample();
  }
  process.send(
    {
      name,
      records,
      samples,
      dbMaxActive,
      maxIssueLag,
      overloadS: OVERLOAD_S,
      recoveryS: RECOVERY_S,
      limitsCore: distFingerprint(),
    },
    () => process.exit(0),
  );
}

function distFingerprint() {
  // Which build of limits-core ran (another session may rebuild dist while we run).
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

function analyse(res) {
  const T1 = res.overloadS * 1000;
  const T2 = (res.overloadS + res.recoveryS) * 1000;
  const over = res.records.filter((r) => r.phase === 'overload');
  const count = (pred) => over.filter(pred).length;
  const ok = over.filter((r) => r.outcome === 'ok');
  const lat = ok.map((r) => r.end - r.arrival).sort((a, b) => a - b);
  const ran = over.filter((r) => r.start !== undefined);
  const overSamples = res.samples.filter((s) => s.t <= T1);
  const maxAgeSampled = Math.max(0, ...overSamples.map((s) => s.oldestMs));
  // A request queued if it expired in the queue, or its DB job started in a later macrotask than its
  // arrival (see `turn`). Its queue interval is [arrival, start or leave).
  const queuedUntil = (r) =>
    r.outcome === 'expired'
      ? r.left
      : r.start !== undefined && r.startTurn !== r.issueTurn
        ? r.start
        : r.start === undefined && r.left === undefined
          ? Infinity
          : undefined;
  // Exact longest wait in the queue, overload arrivals.
  const waits = over.map((r) => (queuedUntil(r) ?? r.arrival) - r.arrival);
  const maxWaitExact = Math.max(0, ...waits);
  // Recovery: the last moment any request was still queued (exact, from the records), after T1.
  let lastQueued = -Infinity;
  for (const r of res.records) {
    const until = queuedUntil(r);
    if (until !== undefined) lastQueued = Math.max(lastQueued, until);
  }
  const queuedAtEnd = res.records.filter(
    (r) => r.arrival <= T2 && (r.start ?? r.left ?? Infinity) > T2,
  ).length;
  const recoveryMs = lastQueued <= T1 ? 0 : lastQueued > T2 ? Infinity : lastQueued - T1;
  // Sampled version: first sample after T1 from which every sample up to T2 shows an empty queue.
  const recSamples = res.samples.filter((s) => s.t > T1 && s.t <= T2);
  let sampledRecovery = 0;
  for (const s of recSamples) if (s.queued > 0) sampledRecovery = s.t - T1 + SAMPLE_MS;
  if (recSamples.length > 0 && recSamples.at(-1).queued > 0) sampledRecovery = Infinity;
  return {
    name: res.name,
    offered: over.length,
    ok: ok.length,
    goodput: ok.length / res.overloadS,
    goodputPct: (100 * ok.length) / res.overloadS / CAPACITY_PER_S,
    ran: ran.length,
    startedPastDeadline: count((r) => r.start !== undefined && r.start > r.deadline),
    late: count((r) => r.outcome === 'late'),
    rejected: count((r) => r.outcome === 'rejected'),
    expired: count((r) => r.outcome === 'expired'),
    p50: quantile(lat, 0.5),
    p99: quantile(lat, 0.99),
    maxAgeSampled,
    maxWaitExact,
    recoveryMs,
    sampledRecovery,
    queuedAtEnd,
    dbMaxActive: res.dbMaxActive,
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
    `Load: ${OVERLOAD_RATE} req/s for ${rows[0] ? results[0].overloadS : OVERLOAD_S} s, then ${RECOVERY_RATE} req/s for ${results[0]?.recoveryS ?? RECOVERY_S} s; ` +
      `job ${JOB_MS} ms, concurrency ${CONCURRENCY} (capacity ${CAPACITY_PER_S}/s), deadline ${DEADLINE_MS} ms from arrival. ` +
      `One child process per contender, all running at the same time. Wall time ${wall.toFixed(1)} s.`,
  );
  lines.push('');
  lines.push(`Overloaded phase (arrivals in the first ${results[0]?.overloadS} s):`);
  lines.push('');
  lines.push(
    '| contender | offered | done in time | goodput /s | % of 40/s | DB runs started past deadline | DB runs finished late | rejected | expired in queue | p50 ms (ok) | p99 ms (ok) | max queued age ms (sampled / exact) | max DB concurrency |',
  );
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const r of rows) {
    lines.push(
      `| ${r.name} | ${r.offered} | ${r.ok} | ${fmt(r.goodput, 1)} | ${fmt(r.goodputPct, 1)} % | ${r.startedPastDeadline} | ${r.late} | ${r.rejected} | ${r.expired} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.maxAgeSampled)} / ${fmt(r.maxWaitExact)} | ${r.dbMaxActive} |`,
    );
  }
  lines.push('');
  lines.push(
    `Recovery phase (inflow back to ${RECOVERY_RATE} req/s at t = ${results[0]?.overloadS} s):`,
  );
  lines.push('');
  lines.push(
    '| contender | queue empty for good after (exact / 100 ms samples) | still queued when the phase ends | max arrival-timer lag ms |',
  );
  lines.push('|---|--:|--:|--:|');
  for (const r of rows) {
    const rec = (ms) =>
      ms === Infinity ? `not within ${results[0].recoveryS} s` : `${fmt(ms)} ms`;
    lines.push(
      `| ${r.name} | ${rec(r.recoveryMs)} / ${rec(r.sampledRecovery)} | ${r.queuedAtEnd} | ${fmt(r.maxIssueLag, 1)} |`,
    );
  }
  lines.push('');
  lines.push('Rejection / error reasons seen by callers (overloaded phase):');
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
