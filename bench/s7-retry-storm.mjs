// Scenario S7 — a retry storm: clients that make up to 3 attempts (limitFetch + RetryPolicy, full
// jitter) against a service behind loadShed with importance shedding, pushed to 1.2× its capacity
// for 30 s, then back to 70 %; then two phases in which every request fails.
//
//   node bench/s7-retry-storm.mjs             full run: per variant 5 s base + 30 s trigger + 15 s
//                                             recovery + 10 s hang + 5 s + 10 s error + 3 s (~5.5 min for 4)
//   node bench/s7-retry-storm.mjs --quick     smoke test: 2 + 5 + 5 + 3 + 2 + 3 + 1 s per variant
//   node bench/s7-retry-storm.mjs --only=full,no-attempt-header --trigger-s=60
//   node bench/s7-retry-storm.mjs --json=out.json   also write every attempt record as JSON
//
// Needs the built packages: npx -y pnpm@12.4.2 run build
//
// Processes (all on 127.0.0.1): the service (a node:http server, a fresh child process per variant;
// the variants run one after the other) and the clients (this process).
//
// The service: a worker pool of N = 10 slots × 50 ms (a timer), capacity C = 200 req/s, behind
// `loadShed({ limiter: new Limiter({ limit: 10, maxQueued: 50, maxQueueWaitMs: 500, shedding: {} }) })`
// (a build without `shedding`: the same Limiter without it, and the rows say so). Work abandoned by
// its client frees its slot. Two failure modes, switched over IPC:
//   hang   the work never completes (a dependency hangs): requests hold their slots until their
//          client gives up, and the limiter refuses the rest (queue full, deadline, shed);
//   error  the handler answers 503 at once (a dependency is down, failing fast), no Retry-After.
//
// The clients: every call is `api('/work')`, `api = limitFetch(fetch, { limiter: new Limiter({ limit:
// 10_000 }), timeoutMs: 2_000, retry: new RetryPolicy({ maxAttempts: 3, baseDelayMs: 100, maxDelayMs:
// 2_000 }) })` (`fetch`: undici's, counting every attempt), run inside `runWithContext({ timeoutMs: 2_000 })`
// (the caller is itself a service serving a request: the context gives propagation something to send).
// A 503 is retried after at least its Retry-After (loadShed's is 1 s) and never when it carries
// `x-do-not-retry`. Calls arrive open loop: 0.7 C = 140/s (base), 1.2 C = 240/s (trigger), 140/s after.
//
// Variants:
//   full                 limitFetch propagates the attempt number (`x-request-attempt`), loadShed
//                        sends `x-do-not-retry` on a shed request and on a refused retry;
//   no-attempt-header    limitFetch `propagate: { attemptHeader: false }`: the service sees every
//                        attempt as a first one;
//   no-do-not-retry      loadShed `doNotRetryHeader: false`: every refusal is retried;
//   budget               full, plus a `RetryBudget({ ratio: 0.1 })` shared by the clients.
//
// Reported:
// - trigger: first attempts that succeeded, per second (by completion), as % of C (target ≥ 90 %);
//   calls that succeeded (any attempt) as % of C; attempts per call; what the service refused, why;
// - recovery: from the trigger's end until goodput (calls that succeeded, by completion, over the
//   last 1 s, stepped by 100 ms) is at ≥ 90 % of the calls offered and stays there to the phase's
//   end (target ≤ 5 s; 0 when it never fell that low); attempts per call sent in the recovery phase;
// - hang and error: attempts ÷ first attempts for the calls sent in the phase (target ≤ 1.1);
// - the send lag of the clients' open loop.

import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { headerLines, packageInfo, writeJson } from './harness.mjs';
import {
  answerAsks,
  ask,
  epochNow,
  fmtRank,
  machineMeter,
  ms0,
  openLoop,
  pct,
  probeFeatures,
  startChild,
  stopChild,
} from './loopback.mjs';

const SELF = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const QUICK = flag('quick');
const S = (name, full, quick) => Number(opt(`${name}-s`) ?? (QUICK ? quick : full));
const PHASES = [
  { name: 'base', s: S('base', 5, 2), load: 0.7, mode: 'ok' },
  { name: 'trigger', s: S('trigger', 30, 5), load: 1.2, mode: 'ok' },
  { name: 'recovery', s: S('recovery', 15, 5), load: 0.7, mode: 'ok' },
  { name: 'hang', s: S('hang', 10, 3), load: 0.7, mode: 'hang' },
  { name: 'settle', s: S('settle', 5, 2), load: 0.7, mode: 'ok' },
  { name: 'error', s: S('error', 10, 3), load: 0.7, mode: 'error' },
  { name: 'end', s: S('end', 3, 1), load: 0.7, mode: 'ok' },
];
const N = 10;
const SERVICE_MS = 50;
const C = (N * 1000) / SERVICE_MS;
const BUDGET_MS = 2000;

const VARIANTS = {
  full: 'attempt header sent, `x-do-not-retry` answered',
  'no-attempt-header': 'limitFetch `propagate: { attemptHeader: false }`',
  'no-do-not-retry': 'loadShed `doNotRetryHeader: false`',
  budget: 'full + client `RetryBudget({ ratio: 0.1 })`',
};
const only = opt('only')?.split(',');
const chosen = Object.keys(VARIANTS).filter((v) => only === undefined || only.includes(v));

const header = (req, name) => {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
};

// ---------------------------------------------------------------------------------------------
// Child: the service.

async function serve(variant) {
  const { Limiter } = await import('limits-core');
  const { loadShed } = await import('limits-node-http');
  const features = await probeFeatures();
  const queue = { maxQueued: 50, maxQueueWaitMs: 500 };
  const limiter = new Limiter({
    limit: N,
    ...queue,
    ...(features.shedding ? { shedding: {} } : {}),
  });
  const options = { limiter };
  if (variant === 'no-do-not-retry') {
    if (!features.doNotRetry) {
      process.send({ unsupported: 'this loadShed has no `doNotRetryHeader` option' });
      return;
    }
    options.doNotRetryHeader = false;
  }
  const shed = loadShed(options);
  let mode = 'ok';
  // The worker pool: N slots; work abandoned by its client frees its slot.
  let active = 0;
  const waiting = [];
  const startWork = (job) => {
    if (job.res.destroyed) return;
    active++;
    const timer = mode === 'hang' ? undefined : setTimeout(() => job.finish(true), SERVICE_MS);
    job.finish = (done) => {
      if (job.over) return;
      job.over = true;
      clearTimeout(timer);
      active--;
      if (done && !job.res.destroyed) job.res.end('ok');
      while (active < N && waiting.length > 0) startWork(waiting.shift());
    };
    job.res.once('close', () => job.finish(false));
  };
  // Per request: [arrival, attempt header, status, do-not-retry sent, reason].
  const records = [];
  const handler = shed.wrap((_req, res) => {
    if (mode === 'error') {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('dependency down');
      return;
    }
    const job = { res, over: false, finish: () => {} };
    if (active < N) startWork(job);
    else waiting.push(job);
  });
  const server = createServer((req, res) => {
    const rec = [epochNow(), Number(header(req, 'x-request-attempt') ?? 0), 0, 0, ''];
    records.push(rec);
    res.on('close', () => {
      rec[2] = res.writableFinished ? res.statusCode : -1;
      rec[3] = res.getHeader('x-do-not-retry') === undefined ? 0 : 1;
    });
    const end = res.end;
    res.end = function endAndRecordReason(body, ...rest) {
      if (res.statusCode === 503 && typeof body === 'string') {
        rec[4] = /"reason":"([a-z_]+)"/.exec(body)?.[1] ?? 'app';
      }
      return end.call(this, body, ...rest);
    };
    handler(req, res);
  });
  server.keepAliveTimeout = 60_000;
  const threshold = [];
  let last = -1;
  const poll = setInterval(() => {
    const rank = limiter.snapshot().shedding?.rank ?? -1;
    if (rank !== last) {
      last = rank;
      threshold.push([epochNow(), rank]);
    }
  }, 10);
  answerAsks((msg) => {
    if (msg.cmd === 'mode') mode = msg.mode;
    if (msg.cmd === 'results') {
      clearInterval(poll);
      const u = process.cpuUsage();
      return { records, threshold, cpuS: (u.user + u.system) / 1e6 };
    }
    return {};
  });
  server.listen(0, '127.0.0.1', () =>
    process.send({
      url: `http://127.0.0.1:${server.address().port}/work`,
      shedding: features.shedding,
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Parent: the clients and the analysis.

async function runVariant(variant, undici, features) {
  const core = await import('limits-core');
  const http = await import('limits-node-http');
  const service = await startChild(SELF, ['--child=service', `--variant=${variant}`]);
  if (service.first.unsupported !== undefined) {
    await stopChild(service.child);
    return { variant, unsupported: service.first.unsupported };
  }
  if (variant === 'no-attempt-header' && !features.propagate) {
    await stopChild(service.child);
    return { variant, unsupported: 'this limitFetch has no `propagate` option' };
  }
  const agent = new undici.Agent({ keepAliveTimeout: 30_000, connections: 256 });
  const attempts = []; // { call, sent, done, status, dnr }
  const send = (input, init) => {
    const headers = init?.headers ?? (typeof input === 'object' ? input.headers : undefined);
    const call = Number(new Headers(headers).get('x-bench-call'));
    const rec = { call, sent: epochNow(), done: Number.NaN, status: 0, dnr: false };
    attempts.push(rec);
    return undici.fetch(input, { ...init, dispatcher: agent }).then(
      (r) => {
        rec.done = epochNow();
        rec.status = r.status;
        rec.dnr = r.headers.has('x-do-not-retry');
        return r;
      },
      (error) => {
        rec.done = epochNow();
        rec.status = -1;
        throw error;
      },
    );
  };
  const retry = new core.RetryPolicy({
    maxAttempts: 3,
    baseDelayMs: 100,
    maxDelayMs: 2000,
    ...(variant === 'budget' ? { budget: new core.RetryBudget({ ratio: 0.1 }) } : {}),
  });
  const api = http.limitFetch(send, {
    limiter: new core.Limiter({ limit: 10_000 }),
    timeoutMs: BUDGET_MS,
    retry,
    ...(variant === 'no-attempt-header' ? { propagate: { attemptHeader: false } } : {}),
  });
  const inContext = (fn) =>
    features.runWithContext ? http.runWithContext({ timeoutMs: BUDGET_MS }, fn) : fn();
  // Warm-up (not recorded).
  for (let i = 0; i < 20; i++) {
    await api(service.first.url, { headers: { 'x-bench-call': '-1' } })
      .then((r) => r.text())
      .catch(() => {});
  }
  attempts.length = 0;
  const calls = [];
  const pending = new Set();
  const fire = (_stream, phase) => {
    const id = calls.length;
    const call = { phase, sent: epochNow(), done: Number.NaN, ok: false, error: '' };
    calls.push(call);
    const p = inContext(() => api(service.first.url, { headers: { 'x-bench-call': String(id) } }))
      .then(async (r) => {
        await r.text();
        call.done = epochNow();
        call.ok = r.status === 200;
        if (!call.ok) call.error = String(r.status);
      })
      .catch((error) => {
        call.done = epochNow();
        call.error = error?.reason ?? error?.name ?? 'error';
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  };
  const { windows, lag } = await openLoop(
    PHASES.map((p) => ({ name: p.name, ms: p.s * 1000, rates: { calls: p.load * C } })),
    fire,
    (name) => {
      const mode = PHASES.find((p) => p.name === name).mode;
      service.child.send({ cmd: 'mode', mode, id: 0 });
    },
  );
  await Promise.all(pending);
  const server = await ask(service.child, { cmd: 'results' });
  await stopChild(service.child);
  await agent.close();
  return { variant, shedding: service.first.shedding, windows, lag, calls, attempts, ...server };
}

function analyse(r) {
  const inW = (t, [a, b]) => t >= a && t < b;
  const callPhase = (id) => r.calls[id]?.phase;
  const perCall = new Map();
  for (const a of r.attempts) {
    if (!(a.call >= 0)) continue;
    if (!perCall.has(a.call)) perCall.set(a.call, []);
    perCall.get(a.call).push(a);
  }
  const phaseStats = (name) => {
    const ids = [];
    r.calls.forEach((c, i) => {
      if (c.phase === name) ids.push(i);
    });
    let atts = 0;
    for (const id of ids) atts += perCall.get(id)?.length ?? 0;
    return { calls: ids.length, attempts: atts, ratio: atts / Math.max(1, ids.length) };
  };
  const tw = r.windows.trigger;
  const triggerS = (tw[1] - tw[0]) / 1000;
  let firstOk = 0;
  for (const [id, list] of perCall) {
    if (callPhase(id) === undefined) continue;
    const first = list[0];
    if (first.status === 200 && inW(first.done, tw)) firstOk++;
  }
  const callsOk = r.calls.filter((c) => c.ok && inW(c.done, tw)).length;
  // The service's refusals by reason (and, in the hang phase, by attempt: 1st / retry / unknown).
  const refusalsIn = (w, byAttempt) => {
    const out = {};
    for (const [t, attempt, status, , reason] of r.records) {
      if (!inW(t, w) || status !== 503) continue;
      const k = byAttempt
        ? `${reason} ${attempt === 0 ? '?' : attempt === 1 ? '1st' : 'retry'}`
        : reason;
      out[k] = (out[k] ?? 0) + 1;
    }
    return out;
  };
  const refusals = refusalsIn(tw, false);
  const hangRefusals = refusalsIn(r.windows.hang, true);
  const hw = r.windows.hang;
  const hangMoves = r.threshold.filter(([t]) => inW(t, hw)).length;
  // Recovery: a 1 s window sliding by 100 ms, calls that succeeded by completion vs offered.
  const [r0, r1] = r.windows.recovery;
  const offered = 0.7 * C;
  const okTimes = r.calls.filter((c) => c.ok).map((c) => c.done);
  // The first moment t after the trigger from which every window [t − 1 s, t) up to the phase's end
  // holds 90 % of the offered calls.
  let recovered = Number.NaN;
  for (let t = r0; t <= r1; t += 100) {
    const n = okTimes.filter((x) => x >= t - 1000 && x < t).length;
    if (n >= 0.9 * offered) {
      if (Number.isNaN(recovered)) recovered = t - r0;
    } else recovered = Number.NaN;
  }
  // The shedding threshold: its highest rank during the trigger, and when it was back at 0 for good.
  let rankMax = 0;
  for (const [t, rank] of r.threshold) if (inW(t, tw)) rankMax = Math.max(rankMax, rank);
  const lastUp = r.threshold.filter(([t, rank]) => t < r1 && rank > 0).at(-1);
  const zeroAfter = r.threshold.find(
    ([t, rank]) => lastUp !== undefined && t > lastUp[0] && rank === 0,
  );
  const thresholdBack =
    lastUp === undefined || lastUp[0] < tw[0]
      ? 0
      : zeroAfter === undefined || zeroAfter[0] >= r1
        ? Number.NaN
        : Math.max(0, zeroAfter[0] - tw[1]);
  const dnr = (name) => r.attempts.filter((a) => callPhase(a.call) === name && a.dnr).length;
  return {
    firstOk: firstOk / triggerS / C,
    callsOk: callsOk / triggerS / C,
    trigger: phaseStats('trigger'),
    recovery: phaseStats('recovery'),
    hang: phaseStats('hang'),
    error: phaseStats('error'),
    refusals,
    recovered,
    rankMax,
    thresholdBack,
    hangRefusals,
    hangMoves,
    dnrTrigger: dnr('trigger'),
    dnrHang: dnr('hang'),
  };
}

async function main() {
  const undici = await import('undici');
  const features = await probeFeatures();
  const meter = machineMeter();
  const cpu0 = process.cpuUsage();
  const results = [];
  for (const v of chosen) {
    process.stderr.write(`${v} …\n`);
    results.push(await runVariant(v, undici, features));
  }
  const own = process.cpuUsage(cpu0);
  const childCpuS = results.reduce((s, r) => s + (r.cpuS ?? 0), 0);
  const machine = meter.end((own.user + own.system) / 1e6 + childCpuS);
  const lines = headerLines(
    '## S7 — retry storm: up to 3 attempts per call against a service pushed to 1.2× its capacity for 30 s',
    `node bench/s7-retry-storm.mjs ${args.join(' ')}`.trim(),
    machine.others,
    `undici ${packageInfo('undici').version}; limits-core shedding: ${features.shedding ? 'yes' : 'no'}; limitFetch propagate: ${features.propagate ? 'yes' : 'no'}; loadShed doNotRetryHeader: ${features.doNotRetry ? 'yes' : 'no'}`,
  );
  lines.push(
    `- service: ${N} slots × ${SERVICE_MS} ms (C = ${C} req/s); calls offered ${0.7 * C}/s, ${1.2 * C}/s during the trigger; phases ${PHASES.map((p) => `${p.name} ${p.s} s`).join(', ')}; call budget ${BUDGET_MS} ms; machine busy ${machine.busy.toFixed(2)} cores with processes + ${machine.irq.toFixed(2)} with interrupts (loopback TCP) on average`,
    '',
    '| variant | first attempts OK in the trigger, % of C | calls OK in the trigger, % of C | attempts per call: trigger / recovery | service refusals in the trigger | recovered to 90 % after (ms) | threshold: highest rank in the trigger, back at 0 after (ms) | attempts ÷ first attempts: hang / error | service refusals in the hang phase (reason, attempt) | threshold changes in the hang phase | x-do-not-retry answers: trigger / hang | send lag max / p99 ms |',
    '|---|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---:|',
  );
  for (const r of results) {
    if (r.unsupported !== undefined) {
      lines.push(
        `| ${r.variant}: ${VARIANTS[r.variant]} | not measurable: ${r.unsupported} ||||||||||| |`,
      );
      continue;
    }
    const a = analyse(r);
    r.summary = a;
    lines.push(
      `| ${r.variant}: ${VARIANTS[r.variant]}${r.shedding ? '' : ' (service without `shedding`: not in this build)'} | ${pct(a.firstOk)} | ${pct(a.callsOk)} | ${a.trigger.ratio.toFixed(2)} / ${a.recovery.ratio.toFixed(2)} | ${
        Object.entries(a.refusals)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ') || 'none'
      } | ${Number.isNaN(a.recovered) ? 'not within the phase' : ms0(a.recovered)} | ${r.shedding ? `${fmtRank(a.rankMax)}, ${Number.isNaN(a.thresholdBack) ? 'not within the recovery' : ms0(a.thresholdBack)}` : '–'} | ${a.hang.ratio.toFixed(2)} / ${a.error.ratio.toFixed(2)} | ${
        Object.entries(a.hangRefusals)
          .map(([k, n]) => `${k} ${n}`)
          .join(', ') || 'none'
      } | ${r.shedding ? a.hangMoves : '–'} | ${a.dnrTrigger} / ${a.dnrHang} | ${ms0(r.lag.max)} / ${ms0(r.lag.p99)} |`,
    );
  }
  lines.push(
    '',
    'Targets: first-attempt goodput in the trigger ≥ 90 % of C; back at 90 % within 5 s of its end; attempts ≤ 1.1 × first attempts when everything fails.',
  );
  console.log(lines.join('\n'));
  const json = opt('json');
  if (json !== undefined) writeJson(json, { args, results });
  setTimeout(() => process.exit(0), 200).unref();
}

const child = opt('child');
if (child === 'service') await serve(opt('variant'));
else await main();
