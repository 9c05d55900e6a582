// The cost of limits-node-http's loadShed on a trivial Fastify 5 route,
// measured with autocannon on 127.0.0.1: requests/s and p99 latency with and without it, side by side.
//
//   node bench/loadshed-overhead.mjs                 full run: 5 rounds × 5 s per variant (~1 min)
//   node bench/loadshed-overhead.mjs --quick         smoke test: 2 rounds × 1 s per variant
//   node bench/loadshed-overhead.mjs --rounds=9 --seconds=10 --connections=100
//   node bench/loadshed-overhead.mjs --only=bare,loadshed-fixed
//   node bench/loadshed-overhead.mjs --json=out.json   also write every round's numbers as JSON
//
// Needs the built packages: npx -y pnpm@12.4.2 -r --filter "./packages/**" run build
//
// Method. Each variant is a Fastify 5 app in its own child process (one per variant, all started at
// the start and idle while not measured), listening on 127.0.0.1:0, with one route `GET /` that
// returns the string 'ok' (logger off). Variants:
//   bare             no load shedding;
//   loadshed-fixed   `await app.register(loadShed({ limiter: new Limiter({ limit: 10_000 }) }).fastify)`:
//                    the admission machinery only (a permit per request, never a refusal);
//   loadshed-vegas   the same with `new Limiter({ algorithm: new VegasLimit({ initialLimit: 1000, maxLimit: 10_000 }), maxQueued: 1000 })`:
//                    adds the timing of every request and the algorithm's update.
// The parent runs autocannon 9 (in-process, `connections` keep-alive connections, no pipelining,
// closed loop: as fast as the server answers) against each variant for `seconds` seconds, after one
// untimed warm-up round per variant. Rounds alternate the variants (bare, fixed, vegas, bare, …) so
// they share the machine's noise; the table reports the median over rounds of autocannon's
// requests/s average and of its p99 latency, and every variant's non-2xx count (must be 0: a
// variant that shed would look faster than it is). The machine has few CPUs and the load generator
// shares them with the server: compare the columns, not the absolute numbers, with other machines.

import { fork } from 'node:child_process';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { cpuMicros, headerLines, machineBusy, median, packageInfo, writeJson } from './harness.mjs';

const SELF = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const QUICK = flag('quick');
const ROUNDS = Number(opt('rounds') ?? (QUICK ? 2 : 5));
const SECONDS = Number(opt('seconds') ?? (QUICK ? 1 : 5));
const CONNECTIONS = Number(opt('connections') ?? 50);
const VARIANTS = {
  bare: 'no load shedding',
  'loadshed-fixed': 'loadShed, `Limiter({ limit: 10_000 })`',
  'loadshed-vegas':
    'loadShed, `Limiter({ algorithm: VegasLimit({ initialLimit: 1000, maxLimit: 10_000 }), maxQueued: 1000 })`',
};
const only = opt('only')?.split(',');
const chosen = Object.keys(VARIANTS).filter((v) => only === undefined || only.includes(v));

// ---------------------------------------------------------------------------------------------
// Child: one Fastify app.

async function serveVariant(variant) {
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false });
  if (variant !== 'bare') {
    const { Limiter, VegasLimit } = await import('limits-core');
    const { loadShed } = await import('limits-node-http');
    const limiter =
      variant === 'loadshed-fixed'
        ? new Limiter({ limit: 10_000 })
        : new Limiter({
            algorithm: new VegasLimit({ initialLimit: 1000, maxLimit: 10_000 }),
            maxQueued: 1000,
          });
    await app.register(loadShed({ limiter }).fastify);
  }
  app.get('/', async () => 'ok');
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  process.send({ url });
  process.on('message', async (msg) => {
    if (msg === 'stop') {
      await app.close();
      process.send({ cpuUs: cpuMicros(process.cpuUsage()) }, () => process.exit(0));
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Parent.

function start(variant) {
  return new Promise((resolve, reject) => {
    const child = fork(SELF, [`--child=${variant}`], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', (msg) => resolve({ child, url: msg.url }));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${variant} exited with ${code}`)));
  });
}

function cannon(url, seconds) {
  return new Promise((resolve, reject) => {
    autocannon(
      { url, connections: CONNECTIONS, duration: seconds, pipelining: 1 },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

/** Stops a child and returns the CPU time it used, in µs. */
function stop({ child }) {
  child.removeAllListeners('exit');
  return new Promise((resolve) => {
    child.once('message', (msg) => resolve(msg.cpuUs ?? 0));
    child.send('stop');
  });
}

/** Share of a core other processes used during the run (machine busy time minus ours), or undefined. */
function othersShare(busy0, wallS, ownUs) {
  const busy1 = machineBusy();
  if (busy0 === undefined || busy1 === undefined) return undefined;
  return (busy1.busyS - busy0.busyS - ownUs / 1e6) / wallS;
}

async function main() {
  const busy0 = machineBusy();
  const started = performance.now();
  const servers = {};
  for (const v of chosen) servers[v] = await start(v);
  for (const v of chosen) await cannon(servers[v].url, Math.min(SECONDS, 2)); // warm-up
  const rounds = Object.fromEntries(chosen.map((v) => [v, []]));
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? chosen : [...chosen].reverse();
    for (const v of order) {
      const res = await cannon(servers[v].url, SECONDS);
      rounds[v].push({
        rps: res.requests.average,
        p99: res.latency.p99,
        p50: res.latency.p50,
        non2xx: res.non2xx,
        errors: res.errors + res.timeouts,
      });
      process.stderr.write(
        `round ${r + 1}/${ROUNDS} ${v}: ${Math.round(res.requests.average)} req/s\n`,
      );
    }
  }
  let ownUs = cpuMicros(process.cpuUsage());
  for (const v of chosen) ownUs += await stop(servers[v]);
  const others = othersShare(busy0, (performance.now() - started) / 1000, ownUs);

  const bare = chosen.includes('bare') ? median(rounds.bare.map((x) => x.rps)) : undefined;
  const lines = headerLines(
    '## loadShed overhead: a trivial Fastify route, with and without loadShed',
    `node bench/loadshed-overhead.mjs ${args.join(' ')}`.trim(),
    others,
    `fastify ${packageInfo('fastify').version}, autocannon ${packageInfo('autocannon').version}; ${ROUNDS} rounds × ${SECONDS} s per variant, ${CONNECTIONS} connections, rounds alternated; medians`,
  );
  lines.push(
    '',
    '| variant | req/s (median) | vs bare | p50 ms | p99 ms (median) | non-2xx | errors |',
    '|---|---:|---:|---:|---:|---:|---:|',
  );
  for (const v of chosen) {
    const rps = median(rounds[v].map((x) => x.rps));
    const vs = bare === undefined ? '' : `${(((rps - bare) / bare) * 100).toFixed(1)} %`;
    lines.push(
      `| ${v}: ${VARIANTS[v]} | ${Math.round(rps)} | ${vs} | ${median(rounds[v].map((x) => x.p50))} | ${median(rounds[v].map((x) => x.p99))} | ${rounds[v].reduce((s, x) => s + x.non2xx, 0)} | ${rounds[v].reduce((s, x) => s + x.errors, 0)} |`,
    );
  }
  lines.push(
    '',
    `CPUs: ${os.cpus().length}. Per-round req/s: ${chosen.map((v) => `${v} ${rounds[v].map((x) => Math.round(x.rps)).join('/')}`).join('; ')}.`,
  );
  console.log(lines.join('\n'));
  const json = opt('json');
  if (json !== undefined) writeJson(json, { rounds, args });
  setTimeout(() => process.exit(0), 200).unref();
}

const child = opt('child');
if (child !== undefined) await serveVariant(child);
else await main();
