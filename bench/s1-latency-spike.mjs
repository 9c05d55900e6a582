// Scenario S1 (seed 004) — a downstream's latency jumps from 50 ms to 3,000 ms, then recovers.
//
//   node bench/s1-latency-spike.mjs                 3 rounds × 5 strategies × 21 s (~6 min)
//   node bench/s1-latency-spike.mjs --rounds=5      more rounds
//   node bench/s1-latency-spike.mjs --quick         1 round, 2 s + 3 s + 2 s (smoke test)
//   node bench/s1-latency-spike.mjs --only=vegas,static
//   node bench/s1-latency-spike.mjs --only=vegas+breaker --spike-s=8.25   another spike length (the
//                                                   recovery's phase against timers that repeat)
//   node bench/s1-latency-spike.mjs --record=DIR    also writes DIR/<strategy>-round<r>.jsonl: the
//                                                   /external requests as the load generator saw them
//                                                   (a trace limits-lab's readTrace reads, see below)
//
// Three processes on 127.0.0.1 per run (examples/latency-spike/: downstream.mjs, app.mjs, and this
// process as the open-loop load generator, scenario.mjs): the app has a worker pool (200 in flight
// + 100 waiting, 503 beyond), `/internal` (2 ms of timer work) and `/external` (the downstream through
// the strategy under test, strategies.mjs: none, static 50, Vegas, Gradient, Vegas + breaker with a
// fallback; every limiter with default options, Vegas and Gradient starting at 20). Load: 100 req/s
// to each route, measured from the scheduled send time. Phases: 5 s calm, 8 s spike, 8 s calm.
// Strategies run one at a time (never two at once), in a rotated order each round; the report gives
// every round's figures and the median per strategy. Column meanings: see scenario.mjs's header.
//
// A recorded trace has one JSON line per /external request, sorted by `start`: `start` (its scheduled
// send, ms since the run's start), `duration` (to the end of its answer, ms), `status` (0: no answer
// within the client's 10 s timeout, or the connection failed) and `outcome`: `success` for the
// downstream's own answer; `refused` when the app answered without the downstream (the guard's
// fallback, a refusal by the strategy's limiter or breaker, the worker pool full: its duration says
// nothing about the downstream); `failure` for a failed call; `overload` for no answer.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runStrategy, summarize, table } from '../examples/latency-spike/scenario.mjs';
import { STRATEGIES } from '../examples/latency-spike/strategies.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const rounds = Number(args.find((a) => a.startsWith('--rounds='))?.slice(9) ?? (quick ? 1 : 3));
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const strategies = only ?? STRATEGIES;
const spikeS = Number(args.find((a) => a.startsWith('--spike-s='))?.slice(10) ?? (quick ? 3 : 8));
if (!(spikeS > 0))
  throw new RangeError(`--spike-s must be a positive number of seconds, got ${spikeS}`);
const phases = quick ? { beforeS: 2, spikeS, afterS: 2 } : { beforeS: 5, spikeS, afterS: 8 };
const recordDir = args.find((a) => a.startsWith('--record='))?.slice(9);
if (recordDir === '') throw new RangeError('--record needs a directory: --record=DIR');
if (recordDir !== undefined) mkdirSync(recordDir, { recursive: true });

/** How the load generator saw one /external request (see the header). */
function outcomeOf(rec) {
  if (rec.status === 0) return 'overload';
  if (rec.status === 200 && rec.source === 'live') return 'success';
  if (rec.source === 'fallback' || rec.source === 'refused' || rec.source === 'busy')
    return 'refused';
  return 'failure';
}

function writeTrace(run, round) {
  const lines = run.records
    .filter((rec) => rec.route === 'external')
    .sort((a, b) => a.at - b.at)
    .map((rec) =>
      JSON.stringify({
        start: Number(rec.at.toFixed(3)),
        duration: Number((rec.end - rec.at).toFixed(3)),
        status: rec.status,
        outcome: outcomeOf(rec),
      }),
    );
  const file = join(recordDir, `${run.name}-round${round}.jsonl`);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const byStrategy = new Map(strategies.map((s) => [s, []]));
for (let r = 0; r < rounds; r++) {
  const order = strategies.map((_, i) => strategies[(i + r) % strategies.length]);
  for (const name of order) {
    const run = await runStrategy(name, phases);
    const summary = summarize(run);
    byStrategy.get(name).push(summary);
    const trace = recordDir === undefined ? '' : `, trace ${writeTrace(run, r + 1)}`;
    process.stderr.write(
      `round ${r + 1}/${rounds} ${name}: peak ${summary.peakInflight}, recovery ${summary.recoveryS} s${trace}\n`,
    );
  }
}

const median = (values) => {
  const v = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length < values.length / 2) return Number.NaN; // most rounds did not recover within the run
  return v.length === 0
    ? Number.NaN
    : v.length % 2
      ? v[(v.length - 1) / 2]
      : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const medians = strategies.map((name) => {
  const runs = byStrategy.get(name);
  const m = { strategy: name };
  for (const key of Object.keys(runs[0])) {
    if (key !== 'strategy') m[key] = median(runs.map((s) => s[key]));
  }
  return m;
});
console.log(
  `S1, ${rounds} round(s), phases ${phases.beforeS} s + ${phases.spikeS} s spike + ${phases.afterS} s, Node ${process.version}\n`,
);
console.log('Medians:\n');
console.log(table(medians));
// Why the best recovery a strategy without a backlog can read is 0.5 s (see scenario.mjs's header).
console.log(
  `\nFirst 250 ms after the spike (medians): answers from the downstream, and of them sent before the spike ended; a 0.25 s recovery needs ≥ 0.9 × before × 0.25 s:\n`,
);
for (const m of medians) {
  console.log(
    `- ${m.strategy}: ${m.firstBinLive} (${m.firstBinFromSpike} sent before the end); needs ≥ ${(0.9 * m.goodputBefore * 0.25).toFixed(1)}`,
  );
}
for (let r = 0; r < rounds; r++) {
  console.log(`\nRound ${r + 1}:\n`);
  console.log(table(strategies.map((name) => byStrategy.get(name)[r])));
}
