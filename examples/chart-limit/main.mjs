// Chart a limiter's limit from its events: limits-lab's TimelineRecorder listens to a Limiter (or a
// limits-breaker guard) and keeps fixed time buckets — limit, peak in flight, outcomes, latency,
// refusals — and renderTimelineSvg draws them as a self-contained SVG. Nothing polls the limiter: the
// chart is built only from the `limit`, `acquire`, `release` and `reject` events it emits.
//
// A Vegas limiter sits in front of a simulated downstream (20 calls at once in 20 ms) that slows to
// 300 ms for a while; 800 requests/s arrive whatever happens, and the ones it refuses fall back at once.
//
//   node chart-limit/main.mjs                  about 6 s
//   node chart-limit/main.mjs --quick          about 3 s (the test suite runs this)
//   node chart-limit/main.mjs --out=limit.svg  where to write the chart (default: chart-limit.svg in
//                                              the system's temp dir)
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LimitExceededError, Limiter, VegasLimit } from 'limits-core';
import { renderTimelineSvg, TimelineRecorder } from 'limits-lab';

const quick = process.argv.includes('--quick');
const outArg = process.argv.find((a) => a.startsWith('--out='));
const out = outArg ? outArg.slice('--out='.length) : join(tmpdir(), 'chart-limit.svg');
const seconds = quick ? 3 : 6;
const slow = quick ? [1, 2] : [2, 4];
const CAPACITY = 20;
const RATE = 800;

const limiter = new Limiter({ algorithm: new VegasLimit({ maxLimit: 100 }), probeSlots: 2 });
// Start recording before the first call: 100 ms buckets, kept in memory (bounded by maxPoints).
const recorder = new TimelineRecorder({ bucketMs: 100 }).track(limiter);

const started = performance.now();
const elapsed = () => (performance.now() - started) / 1000;

let downstreamInflight = 0;
async function downstream() {
  downstreamInflight++;
  const t = elapsed();
  const base = t >= slow[0] && t < slow[1] ? 300 : 20;
  await new Promise((r) => setTimeout(r, base * Math.max(1, downstreamInflight / CAPACITY)));
  downstreamInflight--;
}

async function request() {
  try {
    await limiter.run(downstream);
  } catch (error) {
    if (!(error instanceof LimitExceededError)) throw error; // refused: a real service serves a fallback
  }
}

console.log(
  `Vegas in front of a downstream of ${CAPACITY} at once, 20 ms (300 ms from ${slow[0]} s to ${slow[1]} s), ${RATE} requests/s`,
);
const requests = [];
let inSlowdown = false;
await new Promise((resolve) => {
  const tick = setInterval(() => {
    const t = elapsed();
    // Shade the slowdown on the chart: begin/end mark a span at the recorder's current time.
    if (!inSlowdown && t >= slow[0] && t < slow[1]) {
      inSlowdown = true;
      recorder.begin('slowdown');
    } else if (inSlowdown && t >= slow[1]) {
      inSlowdown = false;
      recorder.end('slowdown');
    }
    const due = Math.floor(Math.min(t, seconds) * RATE);
    while (requests.length < due) requests.push(request());
    if (t >= seconds) {
      clearInterval(tick);
      resolve();
    }
  }, 5);
});
await Promise.all(requests);
await limiter.close();
recorder.stop(); // removes the recorder's listeners

const timeline = recorder.timeline();
// The same data as the chart, as text: one row per 500 ms (five buckets).
console.log('    t  limit  peak in flight  mean latency  completed  refused');
for (let i = 0; i < timeline.points.length; i += 5) {
  const rows = timeline.points.slice(i, i + 5);
  const sum = (f) => rows.reduce((a, p) => a + f(p), 0);
  const completed = sum((p) => p.success + p.dropped);
  const latency = sum((p) =>
    Number.isFinite(p.latencyMs) ? p.latencyMs * (p.success + p.dropped) : 0,
  );
  console.log(
    `${(rows[0].t / 1000).toFixed(1).padStart(4)}s ${String(rows.at(-1).limit).padStart(6)}` +
      ` ${String(Math.max(...rows.map((p) => p.inflightMax))).padStart(15)}` +
      ` ${completed > 0 ? `${(latency / completed).toFixed(0)} ms`.padStart(13) : '            -'}` +
      ` ${String(completed).padStart(10)} ${String(sum((p) => p.rejected)).padStart(8)}`,
  );
}
const svg = renderTimelineSvg([{ name: 'vegas', timeline }], {
  title: `Vegas: downstream 20 ms → 300 ms from ${slow[0]} s to ${slow[1]} s`,
});
writeFileSync(out, svg);
console.log(
  `${timeline.points.length} buckets of ${timeline.bucketMs} ms; chart written to ${out}`,
);
