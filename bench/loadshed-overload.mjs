// Overload at the door. A Fastify 5 route whose work is an outbound call
// to a downstream that turns slow is offered twice what the downstream can serve; limits-node-http's
// loadShed (Vegas, Gradient, and a fixed limit that knows the downstream's capacity, for reference)
// against @fastify/under-pressure (what Fastify users reach for today: it sheds on event-loop delay,
// heap and event-loop utilization, not on concurrency) and against nothing.
//
//   node bench/loadshed-overload.mjs                 full run: per variant 5 s warm + 40 s slow (~4.5 min)
//   node bench/loadshed-overload.mjs --quick         smoke test: 1 s warm + 3 s slow per variant
//   node bench/loadshed-overload.mjs --only=none,loadshed-vegas --slow-s=60 --rate=80
//   node bench/loadshed-overload.mjs --json=out.json   also write every request record as JSON
//
// Needs the built packages: npx -y pnpm@12.4.2 -r --filter "./packages/**" run build
//
// Processes (all on 127.0.0.1): the downstream (a node:http server, one child process, shared by
// the variants, which run one after the other), the app (a Fastify 5 server with the variant, a
// fresh child process per variant) and the load generator (this process).
//
// The downstream serves at most N = 20 requests at once (the rest wait in an unbounded FIFO queue);
// each takes 20 ms in the warm phase and 500 ms in the slow phase: it can serve 1,000 req/s, then
// 40 req/s. A queued request whose connection closed is dropped before it starts (a well-behaved
// server); one already started finishes and its answer is thrown away ("wasted" below).
//
// The app's route `GET /work` makes one call to the downstream with undici's `request` (keep-alive,
// no connection cap) and answers 200 'ok' (502 if the downstream call fails). Every variant's route
// aborts its downstream call when its own client disconnects, as a careful application does.
//
// Load: open loop at a fixed rate R = 2 × the slow capacity = 80 req/s, request n sent at
// phase start + n / R whatever happened to earlier ones, for the warm phase then the slow phase.
// Each request carries `x-request-timeout-ms: 2000` and the client gives up after 2,000 ms
// (AbortSignal.timeout): an answer later than that is useless. undici Agent, no connection cap.
//
// Variants:
//   none               no load shedding;
//   under-pressure     @fastify/under-pressure { maxEventLoopDelay: 100, maxEventLoopUtilization: 0.9,
//                      eventLoopUtilizationMode: 'interval', retryAfter: 1 } (documented options);
//   loadshed-vegas     loadShed({ limiter: new Limiter({ algorithm: new VegasLimit({ initialLimit: 20,
//                      maxLimit: 500 }), maxQueued: 100, maxQueueWaitMs: 2000 }) });
//   loadshed-gradient  the same with new GradientLimit({ initialLimit: 20, maxLimit: 500 });
//   loadshed-fixed     the same with limit: 20 (the downstream's N: the best a static limit can do,
//                      knowing the capacity in advance).
// loadShed reads the time limit header by default: a request that cannot be served within its
// 2,000 ms given the queue ahead is refused at once (503) rather than queued.
//
// Reported per phase: goodput (200 answers received during the phase, within the client's 2 s, per
// second of the phase); for the requests sent during the phase, p50/p99 latency of their 200
// answers, the share shed (503), the share that timed out at the client or failed. For the slow
// phase, also the downstream's calls served from its start to the end of the run, how many of them
// for a client already gone (wasted), and its peak queue. The warm phase's goodput and p99 are shown
// too (no variant should shed there). "goodput, 2nd half" counts only the second half of the slow
// phase: the steady state, after an adaptive limit has had time to relearn the downstream's latency.
// "max send lag" is how late the load generator's timer fired at worst (the open loop held if small).

import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { headerLines, packageInfo, writeJson } from './harness.mjs';

const SELF = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const QUICK = flag('quick');
const WARM_S = Number(opt('warm-s') ?? (QUICK ? 1 : 5));
const SLOW_S = Number(opt('slow-s') ?? (QUICK ? 3 : 40));
const N = Number(opt('downstream-n') ?? 20);
const FAST_MS = 20;
const SLOW_MS = 500;
const RATE = Number(opt('rate') ?? (2 * N * 1000) / SLOW_MS); // 2 × the slow capacity
const CLIENT_TIMEOUT_MS = 2000;

const VARIANTS = {
  none: 'no load shedding',
  'under-pressure':
    '@fastify/under-pressure `{ maxEventLoopDelay: 100, maxEventLoopUtilization: 0.9, eventLoopUtilizationMode: "interval" }`',
  'loadshed-vegas':
    'loadShed, `VegasLimit({ initialLimit: 20, maxLimit: 500 })`, `maxQueued: 100, maxQueueWaitMs: 2000`',
  'loadshed-gradient':
    'loadShed, `GradientLimit({ initialLimit: 20, maxLimit: 500 })`, `maxQueued: 100, maxQueueWaitMs: 2000`',
  'loadshed-fixed': `loadShed, fixed limit ${N} (the downstream's N), \`maxQueued: 100, maxQueueWaitMs: 2000\``,
};
const only = opt('only')?.split(',');
const chosen = Object.keys(VARIANTS).filter((v) => only === undefined || only.includes(v));

// ---------------------------------------------------------------------------------------------
// Child: the downstream.

function serveDownstream() {
  let latencyMs = FAST_MS;
  let active = 0;
  const queue = [];
  let stats = { served: 0, wasted: 0, dropped: 0, maxQueued: 0 };
  const finish = (res) => {
    active--;
    if (res.destroyed) stats.wasted++;
    else res.end('ok');
    stats.served++;
    next();
  };
  const next = () => {
    while (active < N && queue.length > 0) {
      const res = queue.shift();
      if (res.destroyed) {
        stats.dropped++;
        continue;
      }
      active++;
      setTimeout(finish, latencyMs, res);
    }
  };
  const server = createServer((_req, res) => {
    queue.push(res);
    stats.maxQueued = Math.max(stats.maxQueued, queue.length);
    next();
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () =>
    process.send({ url: `http://127.0.0.1:${server.address().port}/` }),
  );
  process.on('message', (msg) => {
    if (msg.phase !== undefined) latencyMs = msg.phase === 'slow' ? SLOW_MS : FAST_MS;
    if (msg.stats) {
      process.send({ stats });
      stats = { served: 0, wasted: 0, dropped: 0, maxQueued: queue.length };
    }
    if (msg.stop) server.close(() => process.exit(0));
  });
}

// ---------------------------------------------------------------------------------------------
// Child: the app.

async function serveApp(variant, downstream) {
  const { default: Fastify } = await import('fastify');
  const undici = await import('undici');
  const app = Fastify({ logger: false });
  if (variant === 'under-pressure') {
    const { default: underPressure } = await import('@fastify/under-pressure');
    await app.register(underPressure, {
      maxEventLoopDelay: 100,
      maxEventLoopUtilization: 0.9,
      eventLoopUtilizationMode: 'interval',
      retryAfter: 1,
    });
  } else if (variant.startsWith('loadshed-')) {
    const { Limiter, VegasLimit, GradientLimit } = await import('limits-core');
    const { loadShed } = await import('limits-node-http');
    const limit =
      variant === 'loadshed-vegas'
        ? new VegasLimit({ initialLimit: 20, maxLimit: 500 })
        : variant === 'loadshed-gradient'
          ? new GradientLimit({ initialLimit: 20, maxLimit: 500 })
          : N;
    const limiter = new Limiter({
      ...(typeof limit === 'number' ? { limit } : { algorithm: limit }),
      maxQueued: 100,
      maxQueueWaitMs: 2000,
    });
    await app.register(loadShed({ limiter }).fastify);
  }
  app.get('/work', async (_request, reply) => {
    const controller = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) controller.abort();
    };
    reply.raw.on('close', onClose);
    try {
      const { statusCode, body } = await undici.request(downstream, { signal: controller.signal });
      await body.text();
      return statusCode === 200 ? 'ok' : reply.code(502).send('bad gateway');
    } catch {
      return reply.code(502).send('downstream failed');
    } finally {
      reply.raw.off('close', onClose);
    }
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  process.send({ url });
  // A disposable process: exit without waiting for keep-alive connections to wind down.
  process.on('message', (msg) => {
    if (msg === 'stop') process.exit(0);
  });
}

// ---------------------------------------------------------------------------------------------
// Parent: the load generator.

function start(childArgs) {
  return new Promise((resolve, reject) => {
    const child = fork(SELF, childArgs, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (msg) => resolve({ child, url: msg.url }));
    child.once('error', reject);
  });
}

function ask(child, msg) {
  return new Promise((resolve) => {
    child.once('message', resolve);
    child.send(msg);
  });
}

const percentile = (sorted, p) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

async function runVariant(variant, downstream, undici) {
  const app = await start([
    `--child=app`,
    `--variant=${variant}`,
    `--downstream=${downstream.url}`,
  ]);
  const url = `${app.url}/work`;
  const agent = new undici.Agent({ keepAliveTimeout: 30_000 });
  const records = [];
  const pending = new Set();
  let maxLag = 0;
  const fire = (phase, sentAt) => {
    const record = {
      phase,
      sentAt,
      doneAt: Number.NaN,
      status: 0,
      latencyMs: Number.NaN,
      result: 'error',
    };
    records.push(record);
    const p = undici
      .request(url, {
        dispatcher: agent,
        headers: { 'x-request-timeout-ms': String(CLIENT_TIMEOUT_MS) },
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      })
      .then(async ({ statusCode, body }) => {
        await body.text();
        record.status = statusCode;
        record.doneAt = performance.now();
        record.latencyMs = record.doneAt - sentAt;
        record.result = statusCode === 200 ? 'ok' : statusCode === 503 ? 'shed' : 'error';
      })
      .catch((error) => {
        record.latencyMs = performance.now() - sentAt;
        record.result =
          error?.name === 'TimeoutError' || error?.name === 'AbortError' ? 'timeout' : 'error';
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  };
  const windows = {};
  const phase = async (name, seconds) => {
    downstream.child.send({ phase: name });
    const count = Math.round(RATE * seconds);
    const t0 = performance.now();
    windows[name] = [t0, t0 + seconds * 1000];
    for (let i = 0; i < count; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      maxLag = Math.max(maxLag, performance.now() - due);
      fire(name, performance.now());
    }
  };
  await ask(downstream.child, { stats: true }); // reset
  await phase('fast', WARM_S);
  await ask(downstream.child, { stats: true }); // reset: count the slow phase only
  await phase('slow', SLOW_S);
  await Promise.all(pending);
  const { stats } = await ask(downstream.child, { stats: true });
  downstream.child.send({ phase: 'fast' });
  await sleep(1000); // the downstream drains before the next variant
  await new Promise((resolve) => {
    app.child.once('exit', resolve);
    app.child.send('stop');
  });
  await agent.close();

  const summary = (name, seconds) => {
    const rs = records.filter((r) => r.phase === name);
    const ok = rs.filter((r) => r.result === 'ok');
    const [from, to] = windows[name];
    const done = records.filter((r) => r.result === 'ok' && r.doneAt >= from && r.doneAt < to);
    const lat = ok.map((r) => r.latencyMs).sort((a, b) => a - b);
    const share = (result) => rs.filter((r) => r.result === result).length / Math.max(1, rs.length);
    const half = (from + to) / 2;
    return {
      sent: rs.length,
      goodput: done.length / seconds,
      goodputLate: done.filter((r) => r.doneAt >= half).length / (seconds / 2),
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      shed: share('shed'),
      timeout: share('timeout'),
      error: share('error'),
    };
  };
  return {
    variant,
    warm: summary('fast', WARM_S),
    slow: summary('slow', SLOW_S),
    downstream: stats,
    maxLagMs: maxLag,
    records,
  };
}

async function main() {
  const undici = await import('undici');
  const downstream = await start(['--child=downstream']);
  const results = [];
  for (const v of chosen) {
    process.stderr.write(`${v} …\n`);
    results.push(await runVariant(v, downstream, undici));
  }
  downstream.child.send({ stop: true });

  const pct = (x) => `${(x * 100).toFixed(1)} %`;
  const ms = (x) => (Number.isNaN(x) ? '–' : Math.round(x));
  const lines = headerLines(
    '## loadShed under overload: a Fastify route calling a downstream that turns slow, offered 2× its capacity',
    `node bench/loadshed-overload.mjs ${args.join(' ')}`.trim(),
    undefined,
    `fastify ${packageInfo('fastify').version}, @fastify/under-pressure ${packageInfo('@fastify/under-pressure').version}, undici ${packageInfo('undici').version}`,
  );
  lines.push(
    `- downstream: ${N} at once, ${FAST_MS} ms then ${SLOW_MS} ms (capacity ${Math.round((N * 1000) / FAST_MS)} then ${Math.round((N * 1000) / SLOW_MS)} req/s); offered ${RATE} req/s open loop; ${WARM_S} s warm + ${SLOW_S} s slow per variant; client budget ${CLIENT_TIMEOUT_MS} ms`,
    '',
    'Slow phase (requests sent while the downstream took 500 ms):',
    '',
    '| variant | goodput req/s | goodput, 2nd half | p50 ms (ok) | p99 ms (ok) | shed (503) | timed out | other errors | downstream calls | wasted | peak downstream queue | warm goodput / p99 ms | max send lag ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const r of results) {
    lines.push(
      `| ${r.variant}: ${VARIANTS[r.variant]} | ${r.slow.goodput.toFixed(1)} | ${r.slow.goodputLate.toFixed(1)} | ${ms(r.slow.p50)} | ${ms(r.slow.p99)} | ${pct(r.slow.shed)} | ${pct(r.slow.timeout)} | ${pct(r.slow.error)} | ${r.downstream.served} | ${r.downstream.wasted} | ${r.downstream.maxQueued} | ${r.warm.goodput.toFixed(1)} / ${ms(r.warm.p99)} | ${ms(r.maxLagMs)} |`,
    );
  }
  console.log(lines.join('\n'));
  const json = opt('json');
  if (json !== undefined) writeJson(json, { args, results });
  setTimeout(() => process.exit(0), 200).unref();
}

const child = opt('child');
if (child === 'downstream') serveDownstream();
else if (child === 'app') await serveApp(opt('variant'), opt('downstream'));
else await main();
