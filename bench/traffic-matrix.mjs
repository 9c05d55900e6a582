// The adaptive algorithms across downstream shapes: for each shape and each way of retrying (outside
// the permit, as the README recommends, and inside it, as `limiter.run(() => fetchWithRetry(url))`
// does), the time a fixed batch of jobs takes through Vegas, Gradient, AIMD and Windowed (AIMD, p90),
// beside a reference controller (after Vector's adaptive request concurrency: starts at 1, +1 per round
// trip, ×0.9 when the RTT rises) and the best fixed limit, with the most units ever granted beyond
// `max(floor(limit), probeSlots)` and whether that broke the late-probe bound `max(3, 8 − limit)`.
//
//   npx -y pnpm@12.4.2 --filter limits-core run build
//   node bench/traffic-matrix.mjs                  every shape (~1 min)
//   node bench/traffic-matrix.mjs --shapes=capDrop,capDefer --seed=2
//
// Deterministic: a real `Limiter` from the built package on simulated time (the world of
// packages/limits-core/test/support/traffic.mjs, which limits-core's tests also run), seeded jitter
// (±5 %). A job ends when an attempt is answered "ok" within the client timeout (1 s); a failed
// attempt ("try later", or no answer by the timeout) is retried after a Fibonacci backoff (100 ms,
// 100, 200, 300, … capped at 5 s). The shapes (SHAPES in traffic.mjs): an unlimited link (100 ms);
// a gentle knee (100 ms, ×1.1 per request past 10 at once; a request whose client gave up leaves the
// server); a hard cap of 5 at once that answers "try later" beyond (capDefer) or drops without an
// answer (capDrop); a rate limit of 100 starts per second; a slow link (100 ms × requests on it);
// open-loop senders slower than the link (50 per second on the unlimited link); S1's spike (50 ms,
// 3 s for requests started in [2 s, 10 s)) under 200 per second; S2's database (4 workers, 100 ms,
// a queue behind them) under 60 per second.

import {
  AimdLimit,
  GradientLimit,
  Limiter,
  seededRandom,
  VegasLimit,
  WindowedLimit,
} from 'limits-core';
import {
  Downstream,
  ReferenceLimit,
  SHAPES,
  SimClock,
  Traffic,
} from '../packages/limits-core/test/support/traffic.mjs';

const arg = (name, fallback) =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const seed = Number(arg('seed', '1'));
const maxLateProbes = (limit) => Math.max(3, 8 - limit);

/** What each shape is sent: a batch at once, or arrivals for a while. */
const WORK = {
  unlimited: { shape: 'unlimited', what: '2,000 at once', send: (t) => t.burst(2000) },
  knee: { shape: 'knee', what: '1,000 at once', send: (t) => t.burst(1000) },
  capDefer: { shape: 'capDefer', what: '500 at once', send: (t) => t.burst(500) },
  capDrop: { shape: 'capDrop', what: '500 at once', send: (t) => t.burst(500) },
  rate: { shape: 'rate', what: '1,000 at once', send: (t) => t.burst(1000) },
  slowLink: { shape: 'slowLink', what: '200 at once', send: (t) => t.burst(200) },
  openLoop: { shape: 'unlimited', what: '50/s for 20 s', send: (t) => t.arrivals(20, 20_000) },
  s1: { shape: 's1', what: '200/s for 14 s', send: (t) => t.arrivals(5, 14_000) },
  s2: { shape: 's2', what: '60/s for 10 s', send: (t) => t.arrivals(1000 / 60, 10_000) },
};

const ALGORITHMS = {
  Vegas: () => new VegasLimit({ random: seededRandom(seed) }),
  Gradient: () => new GradientLimit({ random: seededRandom(seed) }),
  AIMD: () => new AimdLimit(),
  'Windowed (AIMD, p90)': () => new WindowedLimit(new AimdLimit(), { aggregate: 0.9 }),
};

const FIXED = [
  1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 40, 50, 70, 100, 150, 200, 300, 500, 1000, 2000,
];
const GIVE_UP_MS = 600_000;

/** One run: seconds until the last job ended (Infinity if not all within GIVE_UP_MS), and the bound. */
function run(work, retries, limit) {
  const clock = new SimClock();
  const limiter = new Limiter({
    ...(typeof limit === 'number' ? { limit } : { algorithm: limit }),
    clock,
    maxQueued: Infinity,
  });
  const downstream = new Downstream(SHAPES[work.shape], clock, seededRandom(seed));
  const traffic = new Traffic({ limiter, downstream, clock, retries, bound: maxLateProbes });
  work.send(traffic);
  const done = traffic.runUntilDone(GIVE_UP_MS);
  return {
    s: done ? traffic.lastDoneAt / 1000 : Infinity,
    beyond: traffic.beyond,
    overBound: traffic.overBound,
  };
}

const shapes = arg('shapes', Object.keys(WORK).join(',')).split(',');
const rows = [];
let cells = 0;
let within = 0;
for (const name of shapes) {
  const work = WORK[name];
  for (const retries of ['outside', 'inside']) {
    const reference = run(work, retries, new ReferenceLimit());
    let best = { s: Infinity, n: 0 };
    for (const n of FIXED) {
      const r = run(work, retries, n);
      if (r.s < best.s) best = { s: r.s, n };
    }
    const goal = Math.min(reference.s, best.s);
    const row = [`${name} (${work.what})`, retries, fmt(reference.s), `${fmt(best.s)} (${best.n})`];
    for (const make of Object.values(ALGORITHMS)) {
      const r = run(work, retries, make());
      const ratio = r.s / goal;
      cells++;
      if (ratio <= 1.25 && r.overBound === 0) within++;
      row.push(
        `${fmt(r.s)} · ${ratio === Infinity ? '∞' : ratio.toFixed(2)}× · +${r.beyond}${r.overBound > 0 ? ' ✗' : ''}`,
      );
    }
    rows.push(row);
  }
}

function fmt(s) {
  return s === Infinity ? `> ${GIVE_UP_MS / 1000}` : s.toFixed(1);
}

console.log(
  `seed ${seed}; each cell: seconds to finish · ratio to the better of the reference and the best fixed limit · most units beyond max(floor(limit), probeSlots) at a grant (✗: past the late-probe bound)\n`,
);
console.log(
  `| shape (work) | retries | reference s | best fixed s (limit) | ${Object.keys(ALGORITHMS).join(' | ')} |`,
);
console.log(
  `|---|---|---:|---:|${Object.keys(ALGORITHMS)
    .map(() => '---:')
    .join('|')}|`,
);
for (const row of rows) console.log(`| ${row.join(' | ')} |`);
console.log(`\n${within} of ${cells} cells within 1.25× with no grant past the bound`);
