// The per-call cost of limits-node-http's metrics on `Limiter.run`: a bare limiter beside the same
// limiter registered on prom-client (`registerMetrics`), on OpenTelemetry's no-op meter
// (`registerOtelMetrics` on `metrics.getMeter()` with no SDK installed), on an OpenTelemetry SDK
// meter (a MeterProvider whose reader is never read), and with three empty listeners on the events
// the registrations listen to (the cost of the events alone).
//
//   node bench/metrics-overhead.mjs            full run: 21 rounds (about 40 s)
//   node bench/metrics-overhead.mjs --quick    smoke test: 5 rounds, smaller batches (rough numbers)
//   node bench/metrics-overhead.mjs --rounds=31 --only=bare,otel-noop
//
// Needs the built packages: npx -y pnpm@12.4.2 run build
//
// Method. One process; each variant has its own `Limiter({ limit: 64, maxQueued: 100_000 })`. A
// round runs, for each variant in turn (the order rotates each round, so no variant always runs
// first or last), one batch of a trivial async task (`async () => { calls++; return 1; }`):
// sequential (`await limiter.run(task)` 20,000 times) and 10,000 at once (`Promise.all`, 9,936
// queued). The first 3 rounds are warm-up and not counted. Each cell is the median over rounds of
// the batch's ns per call, with the lowest and highest round beside it (the noise: variants that
// share a range are not told apart by this machine). Every batch checks its result (the task ran
// once per call, nothing left in flight or queued, the limiter's own counts of the registration's
// events where it has one), so a variant that skipped work would fail rather than look fast.

import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { metrics as otelApi } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { Limiter } from 'limits-core';
import { registerMetrics, registerOtelMetrics } from 'limits-node-http';
import { Registry } from 'prom-client';
import { fmt, headerLines, machineBusy, median, packageInfo } from './harness.mjs';

const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const QUICK = flag('quick');
const WARMUP = 3;
const ROUNDS = Number(opt('rounds') ?? (QUICK ? 5 : 21)) + WARMUP;
const SEQ = QUICK ? 2_000 : 20_000;
const BURST = 10_000;
const LIMIT = 64;

/** A reader nobody reads: the SDK aggregates every measurement, nothing is exported. */
class IdleReader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

const VARIANTS = {
  bare: ['bare Limiter.run (no metrics)', () => undefined],
  events: [
    'three empty listeners (acquire, release, reject)',
    (limiter) => {
      const nothing = () => {};
      for (const e of ['acquire', 'release', 'reject']) limiter.on(e, nothing);
    },
  ],
  prom: [
    'registerMetrics on a prom-client Registry',
    (limiter) => registerMetrics(new Registry(), limiter, { limiter: 'bench' }),
  ],
  'otel-noop': [
    'registerOtelMetrics on the no-op meter (no SDK)',
    (limiter) => registerOtelMetrics(otelApi.getMeter('bench'), limiter, { limiter: 'bench' }),
  ],
  'otel-sdk': [
    'registerOtelMetrics on an SDK meter (MeterProvider, idle reader)',
    (limiter) => {
      const provider = new MeterProvider({ readers: [new IdleReader()] });
      return registerOtelMetrics(provider.getMeter('bench'), limiter, { limiter: 'bench' });
    },
  ],
};
const only = opt('only')?.split(',');
const chosen = Object.keys(VARIANTS).filter((v) => only === undefined || only.includes(v));

let calls = 0;
const task = async () => {
  calls++;
  return 1;
};

function check(name, limiter, expected) {
  if (calls !== expected) throw new Error(`${name}: the task ran ${calls} times, not ${expected}`);
  if (limiter.inflight !== 0 || limiter.queued !== 0) {
    throw new Error(
      `${name}: ${limiter.inflight} in flight, ${limiter.queued} queued after a batch`,
    );
  }
}

async function sequential(name, limiter) {
  calls = 0;
  const t0 = performance.now();
  for (let i = 0; i < SEQ; i++) await limiter.run(task);
  const ns = ((performance.now() - t0) * 1e6) / SEQ;
  check(name, limiter, SEQ);
  return ns;
}

async function burst(name, limiter) {
  calls = 0;
  const batch = new Array(BURST);
  const t0 = performance.now();
  for (let i = 0; i < BURST; i++) batch[i] = limiter.run(task);
  await Promise.all(batch);
  const ns = ((performance.now() - t0) * 1e6) / BURST;
  check(name, limiter, BURST);
  return ns;
}

const limiters = Object.fromEntries(
  chosen.map((name) => {
    const limiter = new Limiter({ limit: LIMIT, maxQueued: 100_000 });
    VARIANTS[name][1](limiter);
    return [name, limiter];
  }),
);
const samples = Object.fromEntries(chosen.map((name) => [name, { seq: [], burst: [] }]));

const busy0 = machineBusy();
const cpu0 = process.cpuUsage();
const wall0 = performance.now();
for (let round = 0; round < ROUNDS; round++) {
  const order = chosen.map((_, i) => chosen[(i + round) % chosen.length]);
  for (const name of order) {
    const seq = await sequential(name, limiters[name]);
    const at = await burst(name, limiters[name]);
    if (round >= WARMUP) {
      samples[name].seq.push(seq);
      samples[name].burst.push(at);
    }
  }
}
const wallS = (performance.now() - wall0) / 1000;
const busy1 = machineBusy();
const cpu = process.cpuUsage(cpu0);
const others =
  busy0 === undefined || busy1 === undefined
    ? undefined
    : (busy1.busyS - busy0.busyS - (cpu.user + cpu.system) / 1e6) / wallS;

const versions = ['limits-core', 'limits-node-http', 'prom-client', '@opentelemetry/api']
  .map((p) => `${p} ${packageInfo(p).version}`)
  .join(', ');
const command = `node bench/metrics-overhead.mjs${args.length > 0 ? ` ${args.join(' ')}` : ''}`;
for (const line of headerLines('# metrics per call on Limiter.run', command, others, versions)) {
  console.log(line);
}
console.log(
  `- ${ROUNDS - WARMUP} rounds counted (after ${WARMUP} of warm-up), one process, ${SEQ} sequential calls and ${BURST} at once per variant and round, limit ${LIMIT}; ${os.cpus().length} CPUs`,
);
console.log('');
const cell = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return `${fmt(median(xs), 1)} (${fmt(sorted[0], 1)}–${fmt(sorted[sorted.length - 1], 1)})`;
};
const rows = chosen.map((name) => [
  VARIANTS[name][0],
  cell(samples[name].seq),
  cell(samples[name].burst),
]);
const header = ['variant', 'sequential ns/call (range)', '10,000 at once ns/call (range)'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (r) =>
  `| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
console.log(line(header));
console.log(
  `| ${widths.map((w, i) => (i === 0 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`,
);
for (const r of rows) console.log(line(r));
