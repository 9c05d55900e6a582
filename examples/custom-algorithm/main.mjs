// A limit algorithm of your own, plugged into a limits-core Limiter.
//
// An algorithm is any object with a numeric `limit` and an `update(sample)` method: the limiter times
// each call, hands the algorithm a sample ({ startTime, rtt, inflight, dropped }) when the call ends,
// and reads `limit` back. No timers, no requests: the algorithm only does arithmetic.
//
// This one keeps a latency target: it remembers the fastest call it has seen and treats anything more
// than `tolerance` times slower as a sign of queueing. It grows by about one per round trip while
// calls are fast (only when the limit is actually used), and halves once per round trip when calls come back slow or dropped.
//
// It runs against a simulated downstream that serves 10 calls at once in 20 ms and slows to 200 ms
// for a while; 600 requests per second arrive regardless (open loop) and the ones the limiter refuses
// fall back at once (a real service would answer from a cache).
//
//   node custom-algorithm/main.mjs            about 6 s
//   node custom-algorithm/main.mjs --quick    about 3.5 s (the test suite runs this)
import { LimitExceededError, Limiter } from 'limits-core';

// ---- the algorithm: the whole of it is this 29-line class ----
class LatencyTargetLimit {
  constructor({ initialLimit = 5, minLimit = 1, maxLimit = 100, tolerance = 2 } = {}) {
    this.limit = initialLimit;
    this.minLimit = minLimit;
    this.maxLimit = maxLimit; // optional: lets the limiter refuse a cost it could never admit
    this.tolerance = tolerance;
    this.fastestMs = Number.POSITIVE_INFINITY; // never forgets: a real one would re-measure it now and then
    this.cutAtMs = Number.NEGATIVE_INFINITY;
  }

  update({ startTime, rtt, inflight, dropped }) {
    this.fastestMs = Math.min(this.fastestMs, rtt);
    let reason = 'steady';
    if (dropped || rtt > this.tolerance * Math.max(this.fastestMs, 1)) {
      reason = dropped ? 'drop' : 'queueing';
      // Cut once per round trip: calls already in flight at the last cut saw the old limit's queue.
      if (startTime >= this.cutAtMs) {
        this.limit = Math.max(this.minLimit, this.limit * 0.5);
        this.cutAtMs = startTime + rtt;
      }
    } else if (inflight * 2 >= this.limit) {
      // Grow only when the limit is in use: a limit no call reaches says nothing about capacity.
      reason = 'increase';
      this.limit = Math.min(this.maxLimit, this.limit + 1 / this.limit);
    }
    this.lastDecision = { reason, rttMs: rtt, baselineRttMs: this.fastestMs }; // optional: shown in `limit` events
    return this.limit;
  }
}
// ---- end of the algorithm ----

const quick = process.argv.includes('--quick');
const seconds = quick ? 3.5 : 6;
const slow = quick ? [1, 2.5] : [2, 4]; // seconds during which the downstream is slow
const CAPACITY = 10;
const RATE = 600; // requests per second offered

const started = performance.now();
const elapsed = () => (performance.now() - started) / 1000;
const phaseAt = (t) => (t < slow[0] ? 'before' : t < slow[1] ? 'slow' : 'after');

/** The simulated dependency: 20 ms (200 ms while slow), longer still past 10 calls at once. */
let downstreamInflight = 0;
async function downstream() {
  downstreamInflight++;
  const base = phaseAt(elapsed()) === 'slow' ? 200 : 20;
  const ms = base * Math.max(1, downstreamInflight / CAPACITY);
  await new Promise((resolve) => setTimeout(resolve, ms));
  downstreamInflight--;
}

const limiter = new Limiter({ algorithm: new LatencyTargetLimit(), probeSlots: 1 });

// The limiter emits `limit` when the integer limit changes. Print at most every 100 ms (and every
// fall), and keep per-phase statistics for the summary.
const stats = { before: [], slow: [], after: [] };
let lastPrint = -1;
limiter.on('limit', ({ previous, limit, decision }) => {
  const t = elapsed();
  if (t - lastPrint < 0.1 && limit > previous) return;
  lastPrint = t;
  console.log(
    `${t.toFixed(2).padStart(5)}s  ${phaseAt(t).padEnd(6)}  limit ${String(previous).padStart(2)} → ${String(limit).padEnd(2)}` +
      `  ${decision.reason.padEnd(8)}  rtt ${decision.rttMs.toFixed(0).padStart(3)} ms` +
      `  (fastest ${decision.baselineRttMs.toFixed(0)} ms)`,
  );
});
// Sample the limit every 50 ms, so each phase's mean weighs time, not events.
const sampler = setInterval(() => stats[phaseAt(elapsed())].push(limiter.limit), 50);

let served = 0;
let fellBack = 0;
async function request() {
  try {
    await limiter.run(downstream);
    served++;
  } catch (error) {
    if (!(error instanceof LimitExceededError)) throw error;
    fellBack++;
  }
}

console.log(
  `downstream: ${CAPACITY} calls at once in 20 ms, 200 ms from ${slow[0]} s to ${slow[1]} s; ${RATE} requests/s offered`,
);
const requests = [];
await new Promise((resolve) => {
  const tick = setInterval(() => {
    const t = elapsed();
    const due = Math.floor(Math.min(t, seconds) * RATE);
    while (requests.length < due) requests.push(request());
    if (t >= seconds) {
      clearInterval(tick);
      resolve();
    }
  }, 5);
});
await Promise.all(requests);
clearInterval(sampler);
await limiter.close();

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
for (const phase of ['before', 'slow', 'after']) {
  // "mean limit" is a fixed marker the test reads: keep the shape `<phase>: mean limit <n>`.
  console.log(
    `${phase}: mean limit ${mean(stats[phase]).toFixed(1)}, min ${Math.min(...stats[phase])}, max ${Math.max(...stats[phase])}`,
  );
}
console.log(
  `${requests.length} requests: ${served} served by the downstream, ${fellBack} fell back`,
);
if (served === 0 || served + fellBack !== requests.length) process.exitCode = 1;
