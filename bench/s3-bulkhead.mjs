// Scenario S3 (seed 003) — bulkheads: a fast feature and a slow feature share 10 dependency slots.
//
//   node bench/s3-bulkhead.mjs                 full run: 5 s normal + 20 s incident + 5 s normal (~35 s)
//   node bench/s3-bulkhead.mjs --quick         smoke test: 1 s + 3 s + 1 s
//   node bench/s3-bulkhead.mjs --sequential    run the setups one after the other instead of at once
//   node bench/s3-bulkhead.mjs --only=shared,partitions   run a subset of the setups
//   node bench/s3-bulkhead.mjs --json=out.json also write every request record as JSON
//
// Two features share 10 concurrent slots to their dependencies:
//   login           200 req/s, the call takes 5 ms,                         client deadline 200 ms
//   recommendation   40 req/s, the call takes 50 ms (2,000 ms in incident), client deadline 3,000 ms
// Normal load keeps 200 × 5 ms + 40 × 50 ms = 3 slots busy on average. During the incident
// recommendation alone would need 40 × 2 s = 80 slots. A call's duration depends on the phase at the
// moment the call starts (a call started at 24.9 s still takes 2 s); the phase flips in a timer at
// 5 s and 25 s (not per-request from the clock). The calls are `setTimeout`s.
//
// Offered load is open loop: request n of a feature arrives at t0 + n × period (login every 5 ms,
// recommendation every 25 ms, both from the same t0, so the rate does not drift), whatever happened to
// earlier requests. Latency is measured from that scheduled arrival to the call's completion. If the
// arrival timer fires late, the request passes the rest of its time limit: `timeoutMs: deadline − lag`
// (the detail table shows the p99 of that lag, the last line its maximum).
// There is no randomness: "seed 003" only names the scenario.
//
// Setups (each in its own child process; by default all children run at the same time — the work is
// timer-bound, ~240 req/s each, so they barely compete for CPU; `--sequential` runs them in turn):
//   shared            new Limiter({ limit: 10, maxQueued: 500 }) for both features,
//                     limiter.run(call, { timeoutMs: timeout })
//   partitions        new PartitionedLimiter({ limit: 10, partitions: {
//                       login: { reserved: 4, maxQueued: 500 },
//                       recommendation: { reserved: 2, maxBorrow: 4, maxQueued: 500 } } }),
//                     bulkheads.run(feature, call, { timeoutMs: timeout })
//   partitions+stop   the same, plus bulkheads.stopBorrowing() at incident start and
//                     bulkheads.resumeBorrowing() at incident end
//
// Per request: feature, phase of its arrival (pre / incident / post), arrival, start, end, and the
// outcome: ok (completed within its deadline), late (completed after it), or the LimitExceededError
// reason (deadline = refused at admission, expired = left the queue without running, queue_full, …).
// Success rate = ok / offered.
//
// Target (checked for every setup, meant for the partitioned ones): login success ≥ 99.9 % in every
// phase, and login p99 in the incident ≤ 2 × login p99 outside it (pre + post arrivals together).

import { execFileSync, fork } from 'node:child_process';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { machineBusy } from './harness.mjs';

const SELF = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const QUICK = flag('quick');
const PRE_S = QUICK ? 1 : 5;
const INCIDENT_S = QUICK ? 3 : 20;
const POST_S = QUICK ? 1 : 5;
const TOTAL_MS = (PRE_S + INCIDENT_S + POST_S) * 1000;
const INCIDENT_START = PRE_S * 1000;
const INCIDENT_END = (PRE_S + INCIDENT_S) * 1000;

const FEATURES = {
  login: { rate: 200, deadline: 200, normalMs: 5, incidentMs: 5 },
  recommendation: { rate: 40, deadline: 3000, normalMs: 50, incidentMs: 2000 },
};
const SLOTS = 10;
const MAX_QUEUED = 500;

const SETUPS = {
  shared: 'one `Limiter({ limit: 10, maxQueued: 500 })` for both features',
  partitions:
    '`PartitionedLimiter` login reserved 4 / recommendation reserved 2, maxBorrow 4 (maxQueued 500 each)',
  'partitions+stop':
    'same partitions + `stopBorrowing()` at incident start, `resumeBorrowing()` at end',
};

const phaseOf = (t) => (t < INCIDENT_START ? 'pre' : t < INCIDENT_END ? 'incident' : 'post');

// ---------------------------------------------------------------------------------------------
// Child: run one setup through the scenario and send the raw records back.

async function child(setup) {
  const { Limiter, PartitionedLimiter, LimitExceededError } = await import('limits-core');

  let runFeature;
  let bulkheads;
  let serviceOf; // feature -> the limiter's current service-time estimate (ms)
  if (setup === 'shared') {
    const limiter = new Limiter({ limit: SLOTS, maxQueued: MAX_QUEUED });
    runFeature = (_feature, call, timeout) => limiter.run(call, { timeoutMs: timeout });
    serviceOf = () => limiter.snapshot().serviceMs;
  } else {
    bulkheads = new PartitionedLimiter({
      limit: SLOTS,
      partitions: {
        login: { reserved: 4, maxQueued: MAX_QUEUED },
        recommendation: { reserved: 2, maxBorrow: 4, maxQueued: MAX_QUEUED },
      },
    });
    runFeature = (feature, call, timeout) => bulkheads.run(feature, call, { timeoutMs: timeout });
    serviceOf = (feature) => bulkheads.partition(feature).snapshot().serviceMs;
  }

  const names = Object.keys(FEATURES);
  const records = []; // [feature, phase, arrival, start, end, outcome, issued]
  const pending = [];
  const running = { login: 0, recommendation: 0 };
  const waiting = { login: 0, recommendation: 0 };
  const peaks = {}; // `${feature}.${phase}` -> { running, waiting, serviceMs }
  const peak = (feature, phase) => {
    const key = `${feature}.${phase}`;
    peaks[key] ??= { running: 0, waiting: 0, serviceMs: 0, serviceEnd: Number.NaN };
    return peaks[key];
  };
  let maxLag = 0;
  let dependencyPhase = 'pre'; // what a call started now runs into (set by the phase timers)

  const t0 = performance.now() + 20;
  const now = () => performance.now() - t0;

  const issue = (feature, arrival) => {
    const f = FEATURES[feature];
    const phase = phaseOf(arrival);
    const lag = now() - arrival;
    if (lag > maxLag) maxLag = lag;
    const rec = [feature, phase, arrival, Number.NaN, Number.NaN, '', arrival + lag];
    records.push(rec);
    waiting[feature]++;
    let started = false;
    const call = () => {
      started = true;
      waiting[feature]--;
      const start = now();
      rec[3] = start;
      const startPhase = dependencyPhase;
      const ms = startPhase === 'incident' ? f.incidentMs : f.normalMs;
      running[feature]++;
      const pr = peak(feature, startPhase);
      if (running[feature] > pr.running) pr.running = running[feature];
      return new Promise((resolve) =>
        setTimeout(() => {
          running[feature]--;
          resolve();
        }, ms),
      );
    };
    const p = runFeature(feature, call, Math.max(0, f.deadline - lag)).then(
      () => {
        const end = now();
        rec[4] = end;
        rec[5] = end - arrival <= f.deadline ? 'ok' : 'late';
      },
      (error) => {
        if (!started) waiting[feature]--;
        rec[4] = now();
        rec[5] = error instanceof LimitExceededError ? error.reason : `error:${error?.message}`;
      },
    );
    pending.push(p);
    // A call admitted at once has already started (run() calls it synchronously): count only real waiters.
    if (!started) {
      const pw = peak(feature, phase);
      if (waiting[feature] > pw.waiting) pw.waiting = waiting[feature];
    }
  };

  // Arrival schedule: merge of the per-feature fixed-rate sequences.
  const next = {};
  for (const n of names) next[n] = { index: 0, period: 1000 / FEATURES[n].rate };
  const dueAt = (n) => next[n].index * next[n].period;
  let finishedSchedule;
  const scheduleDone = new Promise((resolve) => {
    finishedSchedule = resolve;
  });
  const tick = () => {
    const t = now();
    let earliest = Infinity;
    for (const n of names) {
      while (dueAt(n) < TOTAL_MS && dueAt(n) <= t) {
        issue(n, dueAt(n));
        next[n].index++;
      }
      if (dueAt(n) < TOTAL_MS) earliest = Math.min(earliest, dueAt(n));
    }
    if (earliest === Infinity) finishedSchedule();
    else setTimeout(tick, Math.max(0, earliest - now()));
  };

  // Sample the service-time estimates (they drive deadline admission) every 100 ms.
  const sampler = setInterval(() => {
    const phase = phaseOf(now());
    for (const n of names) {
      const p = peak(n, phase);
      const est = serviceOf(n);
      p.serviceEnd = est;
      // 1000 ms is the limiter's initial guess (initialServiceMs) before its first measured call.
      if (est !== 1000) p.serviceMs = Math.max(p.serviceMs, est);
    }
  }, 100);

  // The dependency's state flips in one timer per phase change, and the operator's reaction
  // (stopBorrowing / resumeBorrowing) happens in that same callback, so no 2,000 ms call can start
  // before borrowing has stopped.
  const phaseTimer = (to, at) =>
    setTimeout(
      () => {
        dependencyPhase = to;
        if (setup === 'partitions+stop') {
          if (to === 'incident') bulkheads.stopBorrowing();
          else bulkheads.resumeBorrowing();
        }
      },
      Math.max(0, t0 + at - performance.now()),
    );
  phaseTimer('incident', INCIDENT_START);
  phaseTimer('post', INCIDENT_END);

  setTimeout(tick, Math.max(0, t0 - performance.now()));
  await scheduleDone;
  await Promise.all(pending);
  clearInterval(sampler);
  const cpu = process.cpuUsage();
  process.send({ setup, records, peaks, maxLag, cpuMs: (cpu.user + cpu.system) / 1000 }, () =>
    process.exit(0),
  );
}

// ---------------------------------------------------------------------------------------------
// Parent: start the children, aggregate, print.

function runChild(setup) {
  return new Promise((resolve, reject) => {
    const cp = fork(SELF, [`--child=${setup}`, ...(QUICK ? ['--quick'] : [])], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result;
    cp.on('message', (m) => {
      result = m;
    });
    cp.on('exit', (code) =>
      result ? resolve(result) : reject(new Error(`${setup}: child exited with ${code}`)),
    );
  });
}

/**
 * Which limits-core was measured: the repository commit, when dist was built, and how many source
 * files changed after that build (those edits are NOT in what ran).
 */
function provenance() {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const pkg = path.join(root, 'packages', 'limits-core');
  let commit = 'unknown commit';
  try {
    commit = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
    }).trim();
  } catch {}
  let built;
  try {
    built = statSync(path.join(pkg, 'dist', 'index.js')).mtimeMs;
  } catch {
    return `repository at ${commit}; no dist build found`;
  }
  let newer = 0;
  try {
    for (const f of readdirSync(path.join(pkg, 'src'), { recursive: true })) {
      const st = statSync(path.join(pkg, 'src', f));
      if (st.isFile() && st.mtimeMs > built) newer++;
    }
  } catch {}
  return (
    `repository at ${commit}; dist built ${new Date(built).toISOString()}` +
    (newer
      ? `; ${newer} file(s) in src changed after that build (not measured)`
      : '; src unchanged since')
  );
}

const pct = (sorted, p) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
const fmtMs = (v) => (Number.isNaN(v) ? '–' : v < 100 ? v.toFixed(1) : v.toFixed(0));
const fmtPct = (ok, n) => {
  if (n === 0) return '–';
  const v = (100 * ok) / n;
  return `${v === 100 ? '100' : v >= 99.9 ? v.toFixed(2) : v.toFixed(1)} %`;
};

function stats(records, feature, phases) {
  const rs = records.filter((r) => r[0] === feature && phases.includes(r[1]));
  const by = {};
  for (const r of rs) by[r[5]] = (by[r[5]] ?? 0) + 1;
  const oks = rs.filter((r) => r[5] === 'ok');
  const sorted = (f) => oks.map(f).sort((a, b) => a - b);
  const lat = sorted((r) => r[4] - r[2]);
  return {
    lagP99: pct(
      sorted((r) => r[6] - r[2]),
      0.99,
    ),
    waitP99: pct(
      sorted((r) => r[3] - r[6]),
      0.99,
    ),
    waited: oks.filter((r) => r[3] - r[6] > 1).length,
    offered: rs.length,
    ok: by.ok ?? 0,
    by,
    p50: pct(lat, 0.5),
    p99: pct(lat, 0.99),
    max: lat.length ? lat[lat.length - 1] : Number.NaN,
  };
}

async function main() {
  const only = opt('only')?.split(',') ?? Object.keys(SETUPS);
  for (const s of only) if (!(s in SETUPS)) throw new Error(`unknown setup ${s}`);
  const sequential = flag('sequential');
  const started = Date.now();
  const loadBefore = os.loadavg()[0];
  const statBefore = machineBusy();
  let results;
  if (sequential) {
    results = [];
    for (const s of only) results.push(await runChild(s));
  } else {
    results = await Promise.all(only.map(runChild));
  }
  const wallS = (Date.now() - started) / 1000;
  const statAfter = machineBusy();
  // Machine-wide CPU busy time during the run (from /proc/stat), and how much of it was ours.
  let cpuLine = '';
  if (statBefore && statAfter) {
    const busyMs = (statAfter.busyS - statBefore.busyS) * 1000;
    const totalMs = (statAfter.totalS - statBefore.totalS) * 1000;
    const oursMs = results.reduce((a, r) => a + r.cpuMs, 0);
    cpuLine =
      ` CPU busy during the run: ${((100 * busyMs) / totalMs).toFixed(0)} % of ${os.cpus().length} CPUs, ` +
      `of which this benchmark's children ${((100 * oursMs) / totalMs).toFixed(0)} % (the rest is other processes).`;
  }

  const cmd = `node bench/s3-bulkhead.mjs ${args.join(' ')}`.trim();
  const out = [];
  const print = (line = '') => out.push(line);
  print(`Command: \`${cmd}\``);
  print(`limits-core: ${provenance()}`);
  print(
    `Node ${process.version}, ${os.cpus()[0]?.model ?? 'unknown CPU'} (${os.cpus().length} CPUs), ${os.platform()} ${os.release()}`,
  );
  print(
    `Timeline: ${PRE_S} s normal, ${INCIDENT_S} s incident (recommendation 2,000 ms), ${POST_S} s normal. ` +
      `Setups ran ${sequential ? 'one after the other' : 'at the same time, each in its own child process'}; wall ${wallS.toFixed(1)} s; ` +
      `1-min load average ${loadBefore.toFixed(2)} before, ${os.loadavg()[0].toFixed(2)} after.${cpuLine}`,
  );
  print();
  print(
    '| setup | login success, no incident | login success, incident | login p50 / p99, no incident (ms) | login p50 / p99, incident (ms) | recommendation success, no incident | recommendation success, incident | target met? |',
  );
  print('|---|---|---|---|---|---|---|---|');
  const checks = [];
  for (const r of results) {
    const ln = stats(r.records, 'login', ['pre', 'post']);
    const li = stats(r.records, 'login', ['incident']);
    const lAll = ['pre', 'incident', 'post'].map((p) => stats(r.records, 'login', [p]));
    const rn = stats(r.records, 'recommendation', ['pre', 'post']);
    const ri = stats(r.records, 'recommendation', ['incident']);
    const successOk = lAll.every((s) => s.offered === 0 || s.ok / s.offered >= 0.999);
    const p99Ok = li.p99 <= 2 * ln.p99;
    const met = successOk && p99Ok;
    checks.push({
      setup: r.setup,
      successOk,
      p99Ok,
      ratio: li.p99 / ln.p99,
      minSuccess: Math.min(...lAll.map((s) => (s.offered ? s.ok / s.offered : 1))),
    });
    print(
      `| ${r.setup} | ${fmtPct(ln.ok, ln.offered)} | ${fmtPct(li.ok, li.offered)} | ${fmtMs(ln.p50)} / ${fmtMs(ln.p99)} | ${fmtMs(li.p50)} / ${fmtMs(li.p99)} | ${fmtPct(rn.ok, rn.offered)} | ${fmtPct(ri.ok, ri.offered)} | ${met ? 'yes' : 'no'} (p99 ×${(li.p99 / ln.p99).toFixed(2)}) |`,
    );
  }
  print();
  print(
    'Target check (login success ≥ 99.9 % in every phase; incident p99 ≤ 2 × no-incident p99):',
  );
  for (const c of checks) {
    print(
      `- ${c.setup}: lowest phase success ${(100 * c.minSuccess).toFixed(2)} % → ${c.successOk ? 'pass' : 'MISS'}; ` +
        `incident p99 / no-incident p99 = ${Number.isFinite(c.ratio) ? c.ratio.toFixed(2) : 'n/a'} → ${c.p99Ok ? 'pass' : 'MISS'}`,
    );
  }
  print();
  print(
    'Detail by arrival phase (ok = completed within deadline; late = completed after it; the rest are LimitExceededError reasons; latency of ok requests, and of those the p99 of how late the arrival timer issued them and of how long they waited in the limiter; peaks = most in flight / waiting at once (by the phase the call started / arrived in); service est. = the service-time estimate of the limiter that admits the feature, which drives its deadline checks, at the end of the phase / its largest value in the phase (sampled every 100 ms; the initial 1,000 ms guess is not counted):',
  );
  print();
  print(
    '| setup | feature | phase | offered | ok | late | deadline | expired | queue_full | other | p50 / p99 / max (ms) | p99 issue lag / p99 queue wait (ms), ok requests that waited > 1 ms | peak running / waiting | service est. end / max (ms) |',
  );
  print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    for (const feature of Object.keys(FEATURES)) {
      for (const phase of ['pre', 'incident', 'post']) {
        const s = stats(r.records, feature, [phase]);
        const known = ['ok', 'late', 'deadline', 'expired', 'queue_full'];
        const other = Object.entries(s.by)
          .filter(([k]) => !known.includes(k))
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ');
        const pk = r.peaks[`${feature}.${phase}`] ?? {
          running: 0,
          waiting: 0,
          serviceMs: 0,
          serviceEnd: Number.NaN,
        };
        print(
          `| ${r.setup} | ${feature} | ${phase} | ${s.offered} | ${fmtPct(s.ok, s.offered)} | ${s.by.late ?? 0} | ${s.by.deadline ?? 0} | ${s.by.expired ?? 0} | ${s.by.queue_full ?? 0} | ${other || 0} | ${fmtMs(s.p50)} / ${fmtMs(s.p99)} / ${fmtMs(s.max)} | ${fmtMs(s.lagP99)} / ${fmtMs(s.waitP99)}, ${s.waited} | ${pk.running} / ${pk.waiting} | ${fmtMs(pk.serviceEnd)} / ${fmtMs(pk.serviceMs)} |`,
        );
      }
    }
  }
  print();
  print(
    `Recommendation requests that arrived during the incident and succeeded, and how many of those started before it ended (the rest waited it out and ran at 50 ms): ${results
      .map((r) => {
        const ok = r.records.filter(
          (x) => x[0] === 'recommendation' && x[1] === 'incident' && x[5] === 'ok',
        );
        return `${r.setup} ${ok.length} / ${ok.filter((x) => x[3] < INCIDENT_END).length}`;
      })
      .join(', ')}`,
  );
  print(
    `Max issue lag (how late the arrival timer fired): ${results.map((r) => `${r.setup} ${r.maxLag.toFixed(1)} ms`).join(', ')}`,
  );
  console.log(out.join('\n'));

  const json = opt('json');
  if (json) writeFileSync(json, JSON.stringify({ cmd, results }, null, 0));
}

const childSetup = opt('child');
if (childSetup) await child(childSetup);
else await main();
