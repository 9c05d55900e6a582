// The main demo (`npm run demo`): scenario S1 of seed 004, time-compressed. A service's dependency goes
// from 50 ms to 3,000 ms for a few seconds, then recovers, while 100 req/s hit a route that uses it and
// 100 req/s a route that does not. Each strategy runs in turn on real processes over loopback (see
// scenario.mjs); the demo prints the comparison table (one column per strategy, one row per figure and
// window) and writes an SVG chart, one row per strategy, of the limit, in-flight calls, latency,
// calls per second and circuit state over time, drawn from the events each strategy's limiter or
// guard emitted (limits-lab's TimelineRecorder + renderTimelineSvg). Every figure is measured in this
// run; README.md beside this file defines each one.
//
//   node latency-spike/demo.mjs                 ~1 min: every strategy, 2.5 s calm, 5 s spike, 3 s calm
//   node latency-spike/demo.mjs --quick         ~12 s: vegas and vegas+breaker, shorter phases (tests)
//   node latency-spike/demo.mjs --out=file.svg  where to write the chart (default latency-spike.svg
//                                               in the system's temp dir)
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderTimelineSvg } from 'limits-lab';
import { runStrategy, SPIKE_LABEL, summarize, table, windows } from './scenario.mjs';
import { STRATEGIES } from './strategies.mjs';

const quick = process.argv.includes('--quick');
const outArg = process.argv.find((a) => a.startsWith('--out='));
const out = outArg ? outArg.slice('--out='.length) : join(tmpdir(), 'latency-spike.svg');
const phases = quick
  ? { beforeS: 1.5, spikeS: 2, afterS: 1.5 }
  : { beforeS: 2.5, spikeS: 5, afterS: 3 };
const strategies = quick ? ['vegas', 'vegas+breaker'] : STRATEGIES;
const WARM_UP_S = 1.5;
const total = phases.beforeS + phases.spikeS + phases.afterS;
const interactive = process.stdout.isTTY === true;

console.log(
  `S1 latency spike: downstream 50 ms → 3,000 ms from ${phases.beforeS} s to ${phases.beforeS + phases.spikeS} s; ` +
    `100 req/s to /external (uses it) and 100 req/s to /internal (does not); ${strategies.length} strategies in turn.`,
);
// This process, the load generator, runs slowly for its first second or two (its code not optimised
// yet, its sockets not open): the first strategy's "before" figures paid for it. A short run without
// a spike, not reported, warms it up first.
console.log(`  warming up the load generator: ${WARM_UP_S} s of calm traffic, not reported`);
await runStrategy(strategies[0], { beforeS: WARM_UP_S, spikeS: 0, afterS: 0 });
const summaries = [];
const series = [];
let lastRun;
for (const name of strategies) {
  const progress = (s) => {
    const phase =
      s < phases.beforeS ? 'calm' : s < phases.beforeS + phases.spikeS ? 'SPIKE' : 'recovering';
    const line = `  ${name.padEnd(14)} ${String(s).padStart(2)} s / ${total} s  ${phase}`;
    if (interactive) process.stdout.write(`\r${line.padEnd(60)}`);
  };
  const run = await runStrategy(name, { ...phases, onTick: progress });
  lastRun = run;
  const summary = summarize(run);
  summaries.push(summary);
  if (interactive) process.stdout.write(`${'\r'.padEnd(62)}\r`);
  console.log(
    `  ${name.padEnd(14)} done: peak ${summary.peakInflight} in flight on the downstream, ` +
      `/internal ${(100 * summary.internalSuccess).toFixed(1)} % ok during the spike` +
      (summary.breaker !== 1
        ? ''
        : Number.isNaN(summary.circuitOpenedS)
          ? ', circuit never opened'
          : `, circuit opened ${summary.circuitOpenedS.toFixed(1)} s into the spike`),
  );
  const timeline = run.app.timeline;
  // JSON turned NaN into null; "none" has no limit to draw (its counter's limit is unreachable).
  for (const p of timeline.points) {
    if (name === 'none' || p.limit === null) p.limit = Number.NaN;
    if (p.latencyMs === null) p.latencyMs = Number.NaN;
    if (p.latencyMaxMs === null) p.latencyMaxMs = Number.NaN;
  }
  // The service's recorder started with its process, before the load: move its time so that 0 is
  // the load's start (its spike mark at the moment the load generator started the spike), as in the
  // table. Buckets that start before the load are left out.
  const spike = timeline.marks.find((m) => m.label === SPIKE_LABEL);
  const shift = spike === undefined ? 0 : run.spikeFrom - spike.fromMs;
  timeline.points = timeline.points.map((p) => ({ ...p, t: p.t + shift })).filter((p) => p.t >= 0);
  timeline.marks = timeline.marks.map((m) => ({
    ...m,
    fromMs: m.fromMs + shift,
    toMs: m.toMs + shift,
  }));
  series.push({ name, timeline });
}
console.log(`\n${table(summaries)}\n${windows(lastRun)}\n`);
writeFileSync(
  out,
  renderTimelineSvg(series, {
    title: 'S1: downstream latency 50 ms → 3,000 ms, 100 req/s to the route that calls it',
  }),
);
console.log(`Chart (one row per strategy: in flight, latency, calls/s, circuit state): ${out}`);
console.log(
  '\nReplay the same scenario in the lab (simulated, in a second, for any configuration):\n' +
    'npx limits-lab model examples/latency-spike/s1.lab.json --config fixed:50 --config vegas --config gradient --out s1-lab.html',
);
