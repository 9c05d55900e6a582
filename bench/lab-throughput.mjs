// limits-lab's simulator speed and memory: a stream of arrivals through the four configurations of
// the lab's quick start, then a --tune grid of 100 candidates. Deterministic runs on virtual time;
// what is timed is this machine's CPU doing them (wall time of each phase, one process).
//
//   node bench/lab-throughput.mjs                        1,000,000 arrivals × 4 configurations, then
//                                                        tune: 100 candidates × 100,000 arrivals
//   node bench/lab-throughput.mjs --arrivals=100000      a shorter stream (peak RSS beside the long one
//                                                        shows whether memory grows with arrivals)
//   node bench/lab-throughput.mjs --no-tune              the stream only
//
// Needs the packages built (npx -y pnpm@12.4.2 run build). The model: Poisson arrivals at 2,000/s, a
// downstream of 10 ms (lognormal jitter, sigma 0.1) whose latency grows linearly past 40 calls in
// flight, 1 % errors, 8× slower for 5 s in every 100 s (one spike per 200,000 arrivals). The
// timelines are recorded as the CLI does (100 ms buckets, at most 36,000 kept).
import { loadavg } from 'node:os';
import {
  compare,
  ModelDownstream,
  modelArrivals,
  parseConfigSpec,
  parseModel,
  tune,
} from '../packages/limits-lab/dist/index.js';

const args = process.argv.slice(2);
const arrivals = Number(args.find((a) => a.startsWith('--arrivals='))?.slice(11) ?? 1_000_000);
const withTune = !args.includes('--no-tune');
if (!Number.isInteger(arrivals) || arrivals < 1) {
  throw new RangeError(`--arrivals must be a positive integer, got ${arrivals}`);
}

const RATE = 2_000;
function model(count) {
  const durationMs = (count / RATE) * 1000;
  const spikes = [];
  for (let from = 50_000; from + 5_000 <= durationMs; from += 100_000) {
    spikes.push({ fromMs: from, toMs: from + 5_000, latencyFactor: 8 });
  }
  return parseModel({
    name: 'throughput',
    durationMs,
    arrivals: { pattern: 'poisson', ratePerS: RATE },
    downstream: {
      baseMs: 10,
      knee: 40,
      growth: 1,
      jitter: { kind: 'lognormal', sigma: 0.1 },
      errorRate: 0.01,
      spikes,
    },
  });
}

function runOf(m) {
  const downstream = new ModelDownstream(m.downstream);
  return {
    downstream,
    arrivals: modelArrivals(m, 1),
    seed: 1,
    durationMs: m.durationMs,
    spikes: downstream.spikes,
    timeline: { bucketMs: 100 },
  };
}

const rssMiB = () => (process.resourceUsage().maxRSS / 1024).toFixed(0);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const m = model(arrivals);
const run = runOf(m);
console.log(`load average before: ${load()}`);
console.log(
  `stream: ${arrivals.toLocaleString('en-US')} arrivals (${(m.durationMs / 1000).toFixed(0)} s simulated) per configuration`,
);
let total = 0;
for (const spec of ['fixed:40', 'vegas', 'gradient', 'aimd']) {
  const t0 = performance.now();
  const [r] = compare([parseConfigSpec(spec)], run);
  const ms = performance.now() - t0;
  total += ms;
  console.log(
    `  ${spec.padEnd(9)} ${(ms / 1000).toFixed(2).padStart(6)} s  ${(((r.arrivals / ms) * 1000) / 1e6).toFixed(2)} M arrivals/s  goodput ${r.goodputPerS.toFixed(0)}/s  p99 ${r.latencyMs.p99.toFixed(1)} ms  timeline ${r.timeline.points.length} buckets  heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB`,
  );
}
console.log(`  total     ${(total / 1000).toFixed(2).padStart(6)} s  peak RSS ${rssMiB()} MiB`);

if (withTune) {
  const small = model(100_000);
  const t0 = performance.now();
  const result = tune({
    space:
      'vegas:maxLimit=20|40|80|160|320,maxQueued=0|25|100|400|1000,maxQueueWaitMs=50|200|1000|Infinity,probeSlots=1',
    objective: 'max goodput, p99<=200',
    trials: 100,
    run: runOf(small),
  });
  const ms = performance.now() - t0;
  console.log(
    `tune: ${result.trials.length} candidates × 100,000 arrivals in ${(ms / 1000).toFixed(2)} s (${result.mode}); best ${result.best?.spec ?? 'none'}; peak RSS ${rssMiB()} MiB`,
  );
}
console.log(`load average after: ${load()}`);
