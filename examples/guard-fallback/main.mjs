// limits-breaker's guard(): a circuit breaker over an adaptive limiter, with a fallback, against a
// local HTTP server that starts failing and then recovers.
//
// What to watch in the output:
// - the server fails: calls fail (fallback reason `error`) until the breaker's window has enough
//   failures, then the circuit OPENs and calls fail fast without touching the server (reason `open`);
// - after `resetTimeout` the circuit goes HALF_OPEN and lets up to `probeSlots` trial calls through
//   (the rest still fail fast); a failed trial re-opens it, a successful one closes it;
// - every caller gets an answer: the server's, or the fallback's (here a "cached" value).
//
//   node guard-fallback/main.mjs           about 7 s
//   node guard-fallback/main.mjs --quick   about 3.5 s (the test suite runs this)
import { createServer } from 'node:http';
import { guard } from 'limits-breaker';

const quick = process.argv.includes('--quick');
const failing = quick ? [1, 2.4] : [2, 5]; // seconds during which the server answers 500
const seconds = quick ? 3.5 : 7;
const PROBE_SLOTS = 2;

const started = performance.now();
const elapsed = () => (performance.now() - started) / 1000;
const at = () => `${elapsed().toFixed(2).padStart(5)}s`;

// ---- the dependency: answers in 10 ms, with a 500 while "failing" ----
const server = createServer((_req, res) => {
  const t = elapsed();
  const sick = t >= failing[0] && t < failing[1];
  setTimeout(() => {
    res.writeHead(sick ? 500 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(sick ? { error: 'database unavailable' } : { price: 42 }));
  }, 10);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/price`;

// ---- the guarded call ----
let trialsInFlight = 0;
let maxTrialsInFlight = 0;
const getPrice = guard(
  async (ctx) => {
    // A call that runs while the circuit is HALF_OPEN is one of its trial calls.
    const trial = getPrice.state === 'HALF_OPEN';
    if (trial) maxTrialsInFlight = Math.max(maxTrialsInFlight, ++trialsInFlight);
    try {
      const res = await fetch(url, { signal: ctx.signal }); // ctx.signal: aborted at the call's timeout
      const body = await res.json();
      if (trial) console.log(`${at()}  trial call → HTTP ${res.status}`);
      // A 500 is a failure for the breaker (the default classify: a thrown error that is not a timeout).
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${body.error}`);
      return body;
    } finally {
      if (trial) trialsInFlight--;
    }
  },
  {
    timeoutMs: 1000, // each call's end-to-end time limit
    probeSlots: PROBE_SLOTS, // trial calls at once while HALF_OPEN
    resetTimeout: quick ? 400 : 1000, // ms OPEN before trying again
    errorThresholdPercentage: 50, // open when half the calls of the window fail...
    volumeThreshold: 5, // ...and the window holds at least 5 calls
    rollingCountTimeout: 1000, // the window: the last second, in 10 buckets
    rollingCountBuckets: 10,
    // Every call that does not succeed ends here; `reason` says why: open | limiter | timeout | error.
    fallback: ({ reason }) => ({ price: 40, cached: true, reason }),
  },
);

// ---- what happened, from the guard's events ----
const fallbacks = { open: 0, limiter: 0, timeout: 0, error: 0 };
let sinceChange = { open: 0, limiter: 0, timeout: 0, error: 0 };
const firstOfReason = new Set();
getPrice.on('fallback', ({ reason, error }) => {
  fallbacks[reason]++;
  sinceChange[reason]++;
  // Print the first fallback of each reason with the error the caller would have had without one.
  if (!firstOfReason.has(reason)) {
    firstOfReason.add(reason);
    console.log(`${at()}  first fallback with reason "${reason}": ${error.name}: ${error.message}`);
  }
});
getPrice.on('state', ({ from, to }) => {
  const counts = Object.entries(sinceChange)
    .filter(([, n]) => n > 0)
    .map(([r, n]) => `${r} ${n}`);
  console.log(
    `${at()}  circuit ${from} → ${to}${counts.length > 0 ? `   (fallbacks before: ${counts.join(', ')})` : ''}`,
  );
  sinceChange = { open: 0, limiter: 0, timeout: 0, error: 0 };
});

// ---- the load: two calls every 20 ms ----
console.log(
  `server fails (HTTP 500) from ${failing[0]} s to ${failing[1]} s; 100 calls/s through guard(), probeSlots ${PROBE_SLOTS}`,
);
let fromServer = 0;
let fromFallback = 0;
const calls = [];
const tick = setInterval(() => {
  for (let i = 0; i < 2; i++) {
    calls.push(getPrice.fire().then((answer) => (answer.cached ? fromFallback++ : fromServer++)));
  }
}, 20);
await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
clearInterval(tick);
await Promise.all(calls);

console.log(
  `${calls.length} calls: ${fromServer} answered by the server, ${fromFallback} by the fallback ` +
    `(${Object.entries(fallbacks)
      .map(([r, n]) => `${r} ${n}`)
      .join(', ')}); most trial calls at once ${maxTrialsInFlight}; final state ${getPrice.state}`,
);
await getPrice.shutdown();
server.closeAllConnections(); // fetch keeps idle keep-alive sockets open
server.close();
