// limits-node-http's limitFetch: a drop-in `fetch` whose requests need a permit from a limits-core
// Limiter, against a local HTTP server that slows down and recovers.
//
// The server answers in 20 ms with up to 20 requests at once (beyond that they queue inside it and
// take longer), and in 500 ms for a while. 300 requests/s arrive whatever happens (open loop). The
// Vegas limit sees the latency and shrinks, so only a handful of sockets wait on the slow server; the
// requests it refuses get a fallback at once instead of piling up; the limit climbs back once the
// server is fast again.
//
//   node wrap-fetch/main.mjs           about 7 s
//   node wrap-fetch/main.mjs --quick   about 3.5 s (the test suite runs this)
import { createServer } from 'node:http';
import { LimitExceededError, Limiter, VegasLimit } from 'limits-core';
import { limitFetch } from 'limits-node-http';

const quick = process.argv.includes('--quick');
const [BEFORE_S, SLOW_S, AFTER_S] = quick ? [1, 1.5, 1] : [2, 3, 2];
const SLOW_FROM = BEFORE_S;
const SLOW_TO = BEFORE_S + SLOW_S;
const END = SLOW_TO + AFTER_S;
const RATE = 300;

const started = performance.now();
const elapsed = () => (performance.now() - started) / 1000;
const phaseAt = (t) => (t < SLOW_FROM ? 'before' : t < SLOW_TO ? 'slow' : 'after');

// ---- the downstream: 20 ms (500 ms while slow), slower still past 20 requests at once ----
let serverInflight = 0;
const server = createServer((_req, res) => {
  serverInflight++;
  const base = phaseAt(elapsed()) === 'slow' ? 500 : 20;
  setTimeout(
    () => {
      serverInflight--;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[1,2,3]}');
    },
    base * Math.max(1, serverInflight / 20),
  );
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/recommendations`;

// ---- the pattern ----
const limiter = new Limiter({ algorithm: new VegasLimit({ maxLimit: 100 }), probeSlots: 2 });
// `api` has fetch's exact type. The permit is held until the body has been read (or cancelled), and
// every request has 2 s end to end: past it, it is aborted with a TimeoutError and counts as congestion.
const api = limitFetch(fetch, { limiter, timeoutMs: 2_000 });

async function recommendations() {
  try {
    const res = await api(url);
    return await res.json(); // reading the body returns the permit
  } catch (error) {
    // Refused by the limiter: nothing was sent. Answer from a cache (here: nothing to recommend).
    if (error instanceof LimitExceededError) return { items: [], fallback: true };
    throw error;
  }
}
// ---- end of the pattern ----

const stats = {};
for (const phase of ['before', 'slow', 'after']) {
  stats[phase] = { limits: [], peakInflight: 0, ok: 0, fellBack: 0, timedOut: 0 };
}
async function request() {
  const s = stats[phaseAt(elapsed())];
  try {
    const answer = await recommendations();
    if (answer.fallback) s.fellBack++;
    else s.ok++;
  } catch (error) {
    if (error.name !== 'TimeoutError') throw error;
    s.timedOut++;
  }
}

console.log(
  `server: 20 ms, 500 ms from ${SLOW_FROM} s to ${SLOW_TO} s; ${RATE} requests/s through limitFetch\n` +
    '    t  phase   limit  in flight at the server',
);
const requests = [];
let lastPrint = -1;
await new Promise((resolve) => {
  const tick = setInterval(() => {
    const t = elapsed();
    const s = stats[phaseAt(t)];
    s.limits.push(limiter.limit);
    s.peakInflight = Math.max(s.peakInflight, serverInflight);
    if (t - lastPrint >= 0.25) {
      lastPrint = t;
      console.log(
        `${t.toFixed(2).padStart(5)}s ${phaseAt(t).padEnd(7)} ${String(limiter.limit).padStart(5)} ${String(serverInflight).padStart(10)}`,
      );
    }
    const due = Math.floor(Math.min(t, END) * RATE);
    while (requests.length < due) requests.push(request());
    if (t >= END) {
      clearInterval(tick);
      resolve();
    }
  }, 5);
});
await Promise.all(requests);
await limiter.close();
server.closeAllConnections(); // fetch keeps idle keep-alive sockets open
server.close();

for (const [name, s] of Object.entries(stats)) {
  const mean = s.limits.reduce((a, b) => a + b, 0) / Math.max(1, s.limits.length);
  console.log(
    `${name}: limit mean ${mean.toFixed(1)} (min ${Math.min(...s.limits)}, max ${Math.max(...s.limits)}, at the end ${s.limits.at(-1)}), ` +
      `peak in flight at the server ${s.peakInflight}, ` +
      `${s.ok} answered, ${s.fellBack} fell back, ${s.timedOut} timed out`,
  );
}
