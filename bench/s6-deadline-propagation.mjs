// Scenario S6 — deadline propagation: three services on loopback, A → B → C, each behind loadShed
// and calling the next with limitFetch; the end user's budget is 1 s at A; C turns 10× slower.
// Counts the work C does for callers that have already given up, with the request context
// propagated and without; then the per-call cost of the context itself.
//
//   node bench/s6-deadline-propagation.mjs            full run: per variant 3 s normal + 20 s with C
//                                                     slow (~1.5 min), then the cost rounds (~1 min)
//   node bench/s6-deadline-propagation.mjs --quick    smoke test: 1 s + 4 s per variant, 3 cost rounds
//   node bench/s6-deadline-propagation.mjs --only=propagate,no-propagation --slow-s=30 --rate=40
//   node bench/s6-deadline-propagation.mjs --only=cost    only the per-call cost
//   node bench/s6-deadline-propagation.mjs --json=out.json   also write the records as JSON
//
// Needs the built packages: npx -y pnpm@12.4.2 run build
//
// Processes (all on 127.0.0.1): A, B and C (node:http servers, one child process each, fresh for
// every variant) and the load generator (this process, undici).
//
// C's work is CPU: a request runs CHUNKS chunks of 1 ms of busy CPU, yielding to the event loop
// between chunks (setImmediate), and stops between two chunks once its request context's signal
// (`currentContext().signal`) has aborted. Normal: 5 chunks (5 ms); slow: 50 chunks (50 ms), so C
// serves at most 20 req/s while slow (one thread). C's loadShed: `Limiter({ limit: 4, maxQueued:
// 100, maxQueueWaitMs: 10_000 })` (4 requests interleave their chunks). A and B forward `GET /work`
// with `limitFetch(undici.fetch, { limiter: new Limiter({ limit: 500 }), timeoutMs: 5_000 })` (each
// hop's own time limit: 5 s, longer than the user's budget, as hop defaults usually are) behind
// `loadShed(Limiter({ limit: 500, maxQueued: 100 }))`, and answer C's status (a refusal of their own
// outbound call as 503, a timeout as 504).
//
// Load: open loop at 30 req/s to A (1.5× C's slow capacity) for 3 s with C normal, then 20 s slow.
// Each request carries `x-request-timeout-ms: 1000` (the user's budget) and the client gives up after
// 1,000 ms. For the accounting only, it also carries `x-bench-expiry` (the absolute epoch ms at which
// the user gives up), which A and B copy onto their outbound call, and B adds `x-bench-b-sent` (when
// it sent the call): no service looks at them otherwise.
//
// Variants:
//   propagate       limitFetch's `propagate` on (the default): A and B send what is left of the budget
//                   (minus the margin), use it as their own call's deadline, and abort their call when
//                   their inbound client leaves; C's loadShed admits by that deadline;
//   no-propagation  `propagate: false`: nothing travels; each hop has only its own 5 s;
//   cancel-only     `propagate: false`, but A's and B's handlers pass `currentContext().signal` to
//                   their call by hand: a hop gives up when its client does, with no deadline sent.
//
// Reported for the slow phase (requests sent while C is slow, and C's work from the start of it to
// the end of the run):
// - goodput: answers 200 within the budget, per second;
// - at C: requests started, started after their expiry (the user had given up), of which B had sent
//   after the expiry (its budget already spent at B); CPU time of C's work (sum of the chunks), and
//   the share of it spent after the request's expiry or after its caller's connection closed
//   (target ≤ 1 %); requests stopped by the context signal; C's refusals;
// - the load generator's send lag.
//
// The per-call cost (same run, after the scenario, interleaved rounds): a server child with three
// listeners — a plain handler, `loadShed({ limiter: new Limiter({ limit: 1000 }) }).wrap(handler)`
// with the context on (default) and with `context: false`. The parent sends batches of 3,000 requests
// (8 at a time) to each in turn and reads the server's CPU time per request. A client child calls the
// plain listener through `undici.fetch`, `limitFetch(undici.fetch, { limiter, propagate: true })` and
// `limitFetch(…, { propagate: false })`, inside `runWithContext({ timeoutMs: 60_000, criticality:
// 'sheddable', cohort: 'u1' })` (so propagation has something to send), and reads its own CPU time per
// call; a fourth caller, `propagate: false` with `timeoutMs: 60_000`, separates what the context's
// deadline costs (a time limit's timer and signal) from the rest of propagation. Medians over the
// rounds; the differences are the cost in µs.

import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setImmediate as yieldTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { headerLines, median, packageInfo, writeJson } from './harness.mjs';
import {
  answerAsks,
  ask,
  epochNow,
  machineMeter,
  ms0,
  openLoop,
  pause,
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
const NORMAL_S = Number(opt('normal-s') ?? (QUICK ? 1 : 3));
const SLOW_S = Number(opt('slow-s') ?? (QUICK ? 4 : 20));
const RATE = Number(opt('rate') ?? 30);
const BUDGET_MS = 1000;
const HOP_TIMEOUT_MS = 5000;
const CHUNK_MS = 1;
const NORMAL_CHUNKS = 5;
const SLOW_CHUNKS = 50;
const C_LIMIT = 4;
const COST_ROUNDS = Number(opt('rounds') ?? (QUICK ? 3 : 9));
const COST_BATCH = QUICK ? 1000 : 3000;

const VARIANTS = {
  propagate:
    'limitFetch `propagate` on (default): budget, criticality, attempt sent; own deadline from the budget; call aborted when the client leaves',
  'no-propagation': '`propagate: false`: each hop has only its own 5 s time limit',
  'cancel-only':
    '`propagate: false`, handlers pass `currentContext().signal` by hand (cancel on disconnect, no deadline sent)',
};
const only = opt('only')?.split(',');
const chosen = Object.keys(VARIANTS).filter((v) => only === undefined || only.includes(v));
const runCost = only === undefined || only.includes('cost');

const header = (req, name) => {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
};

/** Busy CPU for `ms` (the wall time it took, ms: more than `ms` if the process was descheduled). */
function spin(ms) {
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) t = performance.now();
  return t - t0;
}

// ---------------------------------------------------------------------------------------------
// Children: A and B (forwarders) and C (the CPU-bound service).

async function serveHop(role, variant, next) {
  const { Limiter } = await import('limits-core');
  const http = await import('limits-node-http');
  const undici = await import('undici');
  const features = await probeFeatures();
  if (variant === 'propagate' && !features.propagate) {
    process.send({ unsupported: 'this limits-node-http has no `propagate` option in limitFetch' });
    return;
  }
  const agent = new undici.Agent({ keepAliveTimeout: 30_000, connections: 128 });
  const send = (input, init) => undici.fetch(input, { ...init, dispatcher: agent });
  const api = http.limitFetch(send, {
    limiter: new Limiter({ limit: 500 }),
    timeoutMs: HOP_TIMEOUT_MS,
    ...(features.propagate ? { propagate: variant === 'propagate' } : {}),
  });
  const shed = http.loadShed({ limiter: new Limiter({ limit: 500, maxQueued: 100 }) });
  const server = createServer(
    shed.wrap(async (req, res) => {
      const headers = { 'x-bench-expiry': header(req, 'x-bench-expiry') ?? '' };
      if (role === 'B') headers['x-bench-b-sent'] = String(epochNow());
      const init = { headers };
      if (variant === 'cancel-only' && features.context)
        init.signal = http.currentContext()?.signal;
      try {
        const r = await api(`${next}/work`, init);
        const body = await r.text();
        if (!res.destroyed) {
          res.writeHead(r.status, { 'content-type': 'text/plain' });
          res.end(body);
        }
      } catch (error) {
        if (res.destroyed) return;
        res.writeHead(error?.code === 'LIMIT_EXCEEDED' ? 503 : 504);
        res.end(String(error?.reason ?? error?.name));
      }
    }),
  );
  server.keepAliveTimeout = 60_000;
  answerAsks((msg) => (msg.cmd === 'cpu' ? { cpuS: cpuSeconds() } : {}));
  server.listen(0, '127.0.0.1', () =>
    process.send({ url: `http://127.0.0.1:${server.address().port}` }),
  );
}

const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function serveC() {
  const { Limiter } = await import('limits-core');
  const http = await import('limits-node-http');
  let chunks = NORMAL_CHUNKS;
  // Per request: [arrival, expiry, bSent, started, ended, chunksRun, stoppedBySignal, cpuMs, wastedCpuMs, status]
  const records = [];
  const shed = http.loadShed({
    limiter: new Limiter({ limit: C_LIMIT, maxQueued: 100, maxQueueWaitMs: 10_000 }),
  });
  const handler = shed.wrap(async (req, res) => {
    const rec = req.benchRecord;
    rec[3] = epochNow();
    const signal = http.currentContext?.()?.signal;
    const expiry = rec[1];
    const want = chunks;
    let i = 0;
    for (; i < want; i++) {
      if (signal?.aborted) {
        rec[6] = 1;
        break;
      }
      const dt = spin(CHUNK_MS);
      rec[7] += dt;
      if (epochNow() > expiry || rec.gone) rec[8] += dt;
      await yieldTurn();
    }
    rec[5] = i;
    rec[4] = epochNow();
    if (!res.destroyed) res.end('ok');
  });
  const server = createServer((req, res) => {
    const rec = [
      epochNow(),
      Number(header(req, 'x-bench-expiry')),
      Number(header(req, 'x-bench-b-sent')),
      Number.NaN,
      Number.NaN,
      0,
      0,
      0,
      0,
      0,
    ];
    records.push(rec);
    req.benchRecord = rec;
    res.on('close', () => {
      rec[9] = res.writableFinished ? res.statusCode : -1;
      if (!res.writableFinished) rec.gone = true;
    });
    handler(req, res);
  });
  server.keepAliveTimeout = 60_000;
  answerAsks((msg) => {
    if (msg.cmd === 'slow') chunks = SLOW_CHUNKS;
    if (msg.cmd === 'records') return { records, cpuS: cpuSeconds() };
    if (msg.cmd === 'cpu') return { cpuS: cpuSeconds() };
    return {};
  });
  server.listen(0, '127.0.0.1', () =>
    process.send({ url: `http://127.0.0.1:${server.address().port}` }),
  );
}

// ---------------------------------------------------------------------------------------------
// Children of the cost rounds: the server with three listeners, the client with three fetches.

async function serveCost() {
  const { Limiter } = await import('limits-core');
  const http = await import('limits-node-http');
  const features = await probeFeatures();
  const handler = (_req, res) => res.end('ok');
  const listeners = { plain: handler };
  listeners['loadShed, context on'] = http
    .loadShed({ limiter: new Limiter({ limit: 1000 }) })
    .wrap(handler);
  if (features.context) {
    listeners['loadShed, context off'] = http
      .loadShed({ limiter: new Limiter({ limit: 1000 }), context: false })
      .wrap(handler);
  }
  const urls = {};
  for (const [name, listener] of Object.entries(listeners)) {
    const server = createServer(listener);
    server.keepAliveTimeout = 60_000;
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    urls[name] = `http://127.0.0.1:${server.address().port}/`;
  }
  answerAsks((msg) => (msg.cmd === 'cpu' ? { cpuUs: cpuSeconds() * 1e6 } : {}));
  process.send({ urls, context: features.context });
}

async function costClient(url) {
  const { Limiter } = await import('limits-core');
  const http = await import('limits-node-http');
  const undici = await import('undici');
  const features = await probeFeatures();
  const agent = new undici.Agent({ keepAliveTimeout: 30_000, connections: 8 });
  const send = (input, init) => undici.fetch(input, { ...init, dispatcher: agent });
  const callers = { 'undici.fetch': send };
  if (features.propagate) {
    callers['limitFetch, propagate on'] = http.limitFetch(send, {
      limiter: new Limiter({ limit: 1000 }),
      propagate: true,
    });
    callers['limitFetch, propagate off'] = http.limitFetch(send, {
      limiter: new Limiter({ limit: 1000 }),
      propagate: false,
    });
    // The same time limit as the context's, without propagation: what a deadline costs by itself.
    callers['limitFetch, propagate off, timeoutMs 60000'] = http.limitFetch(send, {
      limiter: new Limiter({ limit: 1000 }),
      propagate: false,
      timeoutMs: 60_000,
    });
  } else {
    callers.limitFetch = http.limitFetch(send, { limiter: new Limiter({ limit: 1000 }) });
  }
  const inContext = (fn) =>
    features.runWithContext
      ? http.runWithContext({ timeoutMs: 60_000, criticality: 'sheddable', cohort: 'u1' }, fn)
      : fn();
  const batch = async (call, n) => {
    let i = 0;
    await Promise.all(
      Array.from({ length: 8 }, () =>
        inContext(async () => {
          while (i++ < n) {
            const r = await call(url);
            await r.text();
          }
        }),
      ),
    );
  };
  answerAsks(async (msg) => {
    if (msg.cmd === 'names') return { names: Object.keys(callers) };
    if (msg.cmd === 'cpu') return { cpuUs: cpuSeconds() * 1e6 };
    if (msg.cmd === 'batch') {
      const u0 = process.cpuUsage();
      const t0 = performance.now();
      await batch(callers[msg.name], msg.n);
      const u = process.cpuUsage(u0);
      return {
        cpuUs: (u.user + u.system) / msg.n,
        wallUs: ((performance.now() - t0) * 1000) / msg.n,
      };
    }
    return {};
  });
  process.send({ ready: true });
}

// ---------------------------------------------------------------------------------------------
// Parent.

async function runVariant(variant, undici) {
  const c = await startChild(SELF, ['--child=C']);
  const b = await startChild(SELF, [
    '--child=hop',
    '--role=B',
    `--variant=${variant}`,
    `--next=${c.first.url}`,
  ]);
  if (b.first.unsupported !== undefined) {
    await Promise.all([stopChild(b.child), stopChild(c.child)]);
    return { variant, unsupported: b.first.unsupported };
  }
  const a = await startChild(SELF, [
    '--child=hop',
    '--role=A',
    `--variant=${variant}`,
    `--next=${b.first.url}`,
  ]);
  const agent = new undici.Agent({ keepAliveTimeout: 30_000, connections: 128 });
  const url = `${a.first.url}/work`;
  // Warm the three hops' code paths and connections (not recorded).
  for (let i = 0; i < 20; i++) {
    await undici
      .request(url, {
        dispatcher: agent,
        headers: { 'x-bench-expiry': String(epochNow() + 60_000) },
      })
      .then((r) => r.body.text())
      .catch(() => {});
  }
  await ask(c.child, { cmd: 'records' }); // C's records so far are the warm-up: the analysis skips them
  const records = [];
  const pending = new Set();
  const fire = (_stream, phase) => {
    const sent = epochNow();
    const rec = { phase, sent, done: Number.NaN, status: 0 };
    records.push(rec);
    const p = undici
      .request(url, {
        dispatcher: agent,
        headers: {
          'x-request-timeout-ms': String(BUDGET_MS),
          'x-bench-expiry': String(sent + BUDGET_MS),
        },
        signal: AbortSignal.timeout(BUDGET_MS),
      })
      .then(async ({ statusCode, body }) => {
        await body.text();
        rec.done = epochNow();
        rec.status = statusCode;
      })
      .catch((error) => {
        rec.done = epochNow();
        rec.status = error?.name === 'TimeoutError' ? -1 : -2;
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  };
  const { windows, lag } = await openLoop(
    [
      { name: 'normal', ms: NORMAL_S * 1000, rates: { a: RATE } },
      { name: 'slow', ms: SLOW_S * 1000, rates: { a: RATE } },
    ],
    fire,
    (phase) => {
      // C turns slow when the slow phase starts.
      if (phase === 'slow') c.child.send({ cmd: 'slow', id: 0 });
    },
  );
  await Promise.all(pending);
  await pause(HOP_TIMEOUT_MS + 500); // let C finish what its callers sent, wanted or not
  const cpu = [];
  for (const x of [a, b]) cpu.push((await ask(x.child, { cmd: 'cpu' })).cpuS);
  const { records: cRecords, cpuS: cCpuS } = await ask(c.child, { cmd: 'records' });
  await Promise.all([stopChild(a.child), stopChild(b.child), stopChild(c.child)]);
  await agent.close();
  return {
    variant,
    windows,
    lag,
    client: records,
    c: cRecords,
    cpuS: cpu[0] + cpu[1] + cCpuS,
  };
}

function analyse(r) {
  const [s0, s1] = r.windows.slow;
  const sent = r.client.filter((x) => x.phase === 'slow');
  const ok = sent.filter((x) => x.status === 200 && x.done - x.sent <= BUDGET_MS + 1);
  const byStatus = {};
  for (const x of sent) {
    const k = x.status === -1 ? 'timeout' : x.status === -2 ? 'error' : String(x.status);
    byStatus[k] = (byStatus[k] ?? 0) + 1;
  }
  // C's requests whose user sent them in the slow phase (expiry − budget ≥ s0).
  const cs = r.c.filter((x) => x[1] - BUDGET_MS >= s0 - 1 && x[1] - BUDGET_MS < s1);
  // (NaN comes back from the child as null.)
  const started = cs.filter((x) => typeof x[3] === 'number' && !Number.isNaN(x[3]));
  const startedExpired = started.filter((x) => x[3] > x[1]);
  const expiredAtB = started.filter((x) => x[2] > x[1]);
  const cpuMs = cs.reduce((s, x) => s + x[7], 0);
  const wastedMs = cs.reduce((s, x) => s + x[8], 0);
  const stopped = cs.filter((x) => x[6] === 1).length;
  const refused = cs.filter((x) => x[9] === 503).length;
  const reached = cs.length;
  return {
    sent: sent.length,
    goodput: ok.length / SLOW_S,
    availability: ok.length / Math.max(1, sent.length),
    byStatus,
    reached,
    started: started.length,
    startedExpired: startedExpired.length,
    expiredAtB: expiredAtB.length,
    cpuMs,
    wastedMs,
    wastedShare: wastedMs / Math.max(1e-9, cpuMs),
    stopped,
    refused,
  };
}

async function costRounds() {
  const server = await startChild(SELF, ['--child=cost-server']);
  const client = await startChild(SELF, [
    '--child=cost-client',
    `--url=${server.first.urls.plain}`,
  ]);
  const undici = await import('undici');
  const agent = new undici.Agent({ keepAliveTimeout: 30_000, connections: 8 });
  const shedBatch = async (url, n) => {
    let i = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (i++ < n) {
          const r = await undici.request(url, { dispatcher: agent });
          await r.body.text();
        }
      }),
    );
  };
  const serverCells = Object.entries(server.first.urls).map(([name, url]) => ({
    name,
    run: async (n) => {
      const c0 = (await ask(server.child, { cmd: 'cpu' })).cpuUs;
      await shedBatch(url, n);
      const c1 = (await ask(server.child, { cmd: 'cpu' })).cpuUs;
      return (c1 - c0) / n;
    },
    samples: [],
  }));
  const { names } = await ask(client.child, { cmd: 'names' });
  const clientCells = names.map((name) => ({
    name,
    run: async (n) => (await ask(client.child, { cmd: 'batch', name, n })).cpuUs,
    samples: [],
  }));
  const cells = [...serverCells, ...clientCells];
  for (const cell of cells) await cell.run(Math.min(1000, COST_BATCH)); // warm-up
  for (let round = 0; round < COST_ROUNDS; round++) {
    for (let k = 0; k < cells.length; k++) {
      const cell = cells[(k + round) % cells.length];
      cell.samples.push(await cell.run(COST_BATCH));
    }
    process.stderr.write(`cost round ${round + 1}/${COST_ROUNDS}\n`);
  }
  const cpuS =
    ((await ask(server.child, { cmd: 'cpu' })).cpuUs +
      (await ask(client.child, { cmd: 'cpu' })).cpuUs) /
    1e6;
  await Promise.all([stopChild(server.child), stopChild(client.child)]);
  await agent.close();
  return { serverCells, clientCells, contextOff: server.first.context, cpuS };
}

async function main() {
  const undici = await import('undici');
  const meter = machineMeter();
  const cpu0 = process.cpuUsage();
  const features = await probeFeatures();
  const results = [];
  for (const v of chosen) {
    process.stderr.write(`${v} …\n`);
    results.push(await runVariant(v, undici));
  }
  const cost = runCost ? await costRounds() : undefined;
  const own = process.cpuUsage(cpu0);
  const childCpuS = results.reduce((s, r) => s + (r.cpuS ?? 0), 0);
  const machine = meter.end((own.user + own.system) / 1e6 + childCpuS + (cost?.cpuS ?? 0));

  const lines = headerLines(
    '## S6 — deadline propagation: A → B → C, a 1 s budget at A, C 10× slower',
    `node bench/s6-deadline-propagation.mjs ${args.join(' ')}`.trim(),
    machine.others,
    `undici ${packageInfo('undici').version}; limitFetch propagate: ${features.propagate ? 'yes' : 'no'}; loadShed context: ${features.context ? 'yes' : 'no'}`,
  );
  lines.push(
    `- C: ${NORMAL_CHUNKS} then ${SLOW_CHUNKS} chunks of ${CHUNK_MS} ms CPU per request, limit ${C_LIMIT} (slow capacity ${Math.round(1000 / (SLOW_CHUNKS * CHUNK_MS))} req/s); offered ${RATE} req/s open loop, ${NORMAL_S} s normal + ${SLOW_S} s slow per variant; budget ${BUDGET_MS} ms; hop time limit ${HOP_TIMEOUT_MS} ms; machine busy ${machine.busy.toFixed(2)} cores with processes + ${machine.irq.toFixed(2)} with interrupts (loopback TCP) on average`,
  );
  if (results.length > 0) {
    lines.push(
      '',
      'Slow phase:',
      '',
      '| variant | goodput req/s (answered 200 within 1 s) | answers at the client | requests reaching C | started at C | started after the user gave up | of them sent by B after it | C CPU ms (work) | of it after the user gave up or the caller left | stopped by the context signal | refused at C | send lag max / p99 ms |',
      '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
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
        `| ${r.variant}: ${VARIANTS[r.variant]} | ${a.goodput.toFixed(1)} (${pct(a.availability)}) | ${Object.entries(
          a.byStatus,
        )
          .map(([k, n]) => `${k} ${n}`)
          .join(
            ', ',
          )} | ${a.reached} | ${a.started} | ${a.startedExpired} | ${a.expiredAtB} | ${Math.round(a.cpuMs)} | ${Math.round(a.wastedMs)} (${pct(a.wastedShare, 2)}) | ${a.stopped} | ${a.refused} | ${ms0(r.lag.max)} / ${ms0(r.lag.p99)} |`,
      );
    }
    lines.push(
      '',
      'Target: C CPU spent after the caller gave up ≤ 1 % of its work (propagate row).',
    );
  }
  if (cost !== undefined) {
    const row = (cell, ref) => {
      const m = median(cell.samples);
      const lo = Math.min(...cell.samples);
      const hi = Math.max(...cell.samples);
      return `| ${cell.name} | ${m.toFixed(1)} | ${ref === undefined ? '–' : (m - median(ref.samples)).toFixed(1)} | ${lo.toFixed(1)}–${hi.toFixed(1)} |`;
    };
    const find = (cells, name) => cells.find((c) => c.name === name);
    lines.push(
      '',
      `Per-call cost (${COST_ROUNDS} interleaved rounds of ${COST_BATCH} calls, 8 at a time; CPU µs per call of the server process, resp. of the calling process):`,
      '',
      '| what | median CPU µs/call | minus the row it is compared with | min–max |',
      '|---|---:|---:|---:|',
    );
    const plain = find(cost.serverCells, 'plain');
    const off = find(cost.serverCells, 'loadShed, context off');
    lines.push(row(plain));
    if (off !== undefined) lines.push(row(off, plain));
    lines.push(row(find(cost.serverCells, 'loadShed, context on'), off ?? plain));
    const fetchPlain = find(cost.clientCells, 'undici.fetch');
    const fetchOff = find(cost.clientCells, 'limitFetch, propagate off');
    lines.push(row(fetchPlain));
    if (fetchOff !== undefined) {
      lines.push(row(fetchOff, fetchPlain));
      const timed = find(cost.clientCells, 'limitFetch, propagate off, timeoutMs 60000');
      lines.push(row(timed, fetchOff));
      lines.push(row(find(cost.clientCells, 'limitFetch, propagate on'), fetchOff));
      lines.push(
        row(
          {
            ...find(cost.clientCells, 'limitFetch, propagate on'),
            name: 'limitFetch, propagate on (vs. the same time limit without propagation)',
          },
          timed,
        ),
      );
    } else lines.push(row(find(cost.clientCells, 'limitFetch'), fetchPlain));
    lines.push(
      '',
      'Compared: loadShed context off with the plain handler, context on with context off; limitFetch propagate off with undici.fetch; its time limit alone and propagate on with propagate off; propagate on with the same time limit without propagation.',
    );
  }
  console.log(lines.join('\n'));
  const json = opt('json');
  if (json !== undefined) writeJson(json, { args, results, cost });
  setTimeout(() => process.exit(0), 200).unref();
}

const child = opt('child');
if (child === 'C') await serveC();
else if (child === 'hop') await serveHop(opt('role'), opt('variant'), opt('next'));
else if (child === 'cost-server') await serveCost();
else if (child === 'cost-client') await costClient(opt('url'));
else await main();
