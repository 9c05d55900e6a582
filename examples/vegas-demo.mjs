// A limiter in front of a simulated downstream that slows down, then recovers.
//
// The downstream serves 20 calls at once in 20 ms (1,000 calls/s); past 20 in flight, calls queue inside
// it and take longer (20 ms × in-flight / 20). From second 3 to second 6 its base latency jumps to 400 ms.
// Requests arrive at a steady 1,500 per second, more than it can serve, whatever happens to earlier ones
// (an open loop, like users hitting a service); each goes through a Vegas-limited limiter, and a request
// the limiter refuses falls back at once (a real service would answer from a cache). Watch the limit find
// ~20, drop during the slowdown, and come back. The closing line counts requests: each is either served
// by the downstream or falls back, once.
//
// Run: node vegas-demo.mjs            (about 10 s)
//      node vegas-demo.mjs --quick    (about 2 s, used by the test suite)
import { LimitExceededError, Limiter, VegasLimit } from 'limits-core';

const quick = process.argv.includes('--quick');
const seconds = quick ? 2 : 10;
const spike = quick ? [0.8, 1.4] : [3, 6];
const CAPACITY = 20;

const started = performance.now();
const elapsed = () => (performance.now() - started) / 1000;

let downstreamInflight = 0;
let peakInflight = 0;
/** The simulated dependency: latency grows with its own in-flight count past its capacity. */
async function downstream() {
  downstreamInflight++;
  peakInflight = Math.max(peakInflight, downstreamInflight);
  const t = elapsed();
  const base = t >= spike[0] && t < spike[1] ? 400 : 20;
  const ms = base * Math.max(1, downstreamInflight / CAPACITY) * (0.95 + Math.random() * 0.1);
  await new Promise((resolve) => setTimeout(resolve, ms));
  downstreamInflight--;
}

const limiter = new Limiter({
  algorithm: new VegasLimit({ initialLimit: 10, maxLimit: 200 }),
  probeSlots: 2,
});

let lastPrint = 0;
limiter.on('limit', (e) => {
  const now = elapsed();
  if (now - lastPrint < 0.1 && e.decision?.reason !== 'probe') return;
  lastPrint = now;
  const d = e.decision;
  console.log(
    `${now.toFixed(2).padStart(6)}s  limit ${String(e.previous).padStart(3)} → ${String(e.limit).padEnd(3)}` +
      `  ${(d?.reason ?? '').padEnd(11)} rtt ${d?.rttMs.toFixed(0).padStart(4)} ms` +
      `  baseline ${d?.baselineRttMs?.toFixed(0).padStart(4)} ms  queue ${d?.queue ?? '-'}`,
  );
});

const RATE = 1500; // requests per second offered
let served = 0;
let fellBack = 0;
const requests = [];

/** One request: served by the downstream through the limiter, or refused at once and served by a fallback. */
async function request() {
  try {
    await limiter.run(downstream);
    served++;
  } catch (error) {
    if (!(error instanceof LimitExceededError)) throw error;
    fellBack++; // a real service would serve a cached or degraded answer here
  }
}

console.log(
  `downstream: capacity ${CAPACITY} in flight, 20 ms (400 ms from ${spike[0]}s to ${spike[1]}s); ` +
    `${RATE} requests/s offered`,
);
// Every 5 ms, start the requests that are due by now.
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
await limiter.close();
console.log(
  `done in ${elapsed().toFixed(1)}s: ${requests.length} requests, ${served} served by the downstream, ` +
    `${fellBack} fell back at once; peak in flight at the downstream ${peakInflight}, final limit ${limiter.limit}`,
);
if (served === 0 || served + fellBack !== requests.length) process.exitCode = 1;
