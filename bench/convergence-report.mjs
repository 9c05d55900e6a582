// Prints the sample counts behind limits-core's README "Measured behaviour" (algorithm convergence,
// latency-spike cut and regain, app-limited decay, small pools on a simulated dependency). Run by
// hand, against the built package:
//
//   npx -y pnpm@12.4.2 --filter limits-core run build
//   node bench/convergence-report.mjs
//
// The simulation is packages/limits-core/test/support/closedLoop.mjs, the one the convergence tests
// run (test/convergence.test.ts and test/convergence.delayBased.test.ts assert on it; this prints the
// numbers). Deterministic: seeded noise and probe spacing, simulated time. `tickMs: 25` simulates the
// ticks of a Limiter's stall detector (default `stallThresholdMs` 50), which report calls still in
// flight past the algorithm's `lateAfterMs`; "fed directly" runs without them. Takes a few
// seconds.

import { AimdLimit, GradientLimit, seededRandom, VegasLimit } from 'limits-core';
import { closedLoop, tracing } from '../packages/limits-core/test/support/closedLoop.mjs';

const C = 50;
const B = 50;
const SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);
const TICK = 25;

/** Runs `samples` completions of the closed loop with the noise of `model.seed` (default 1). */
function simulateTraced(algorithm, model, samples) {
  const { traced, reasons } = tracing(algorithm);
  return { steps: closedLoop(traced, model, samples, seededRandom(model.seed ?? 1)), reasons };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const pct = (x) => `${(100 * x).toFixed(1)} %`;

/** [name, make(initialLimit, seed, extra), downstream model] */
const makers = [
  [
    'Vegas',
    (i, seed = 7, extra = {}) =>
      new VegasLimit({ initialLimit: i, random: seededRandom(seed), ...extra }),
    { capacity: C, baseLatencyMs: B, tickMs: TICK },
  ],
  [
    'Gradient',
    (i, seed = 7, extra = {}) =>
      new GradientLimit({ initialLimit: i, random: seededRandom(seed), ...extra }),
    { capacity: C, baseLatencyMs: B, tickMs: TICK },
  ],
  [
    'AIMD',
    (i) => new AimdLimit({ initialLimit: i }),
    { capacity: C, baseLatencyMs: B, timeoutMs: 1.25 * B },
  ],
];

const rows = [
  '| algorithm | start | last sample outside ±30 % (seed 1) | band after settling, no dips (seed 1) | samples below 70 % of the settled limit (20 seeds) | last 500 of 3,000 samples within ±30 %, worst of 20 seeds |',
  '|---|---|---|---|---|---|',
];
for (const [name, make, model] of makers) {
  for (const initial of [10, 500]) {
    const t = simulateTraced(make(initial), model, 10000);
    let lastOut = -1;
    let min = Infinity;
    let max = -Infinity;
    t.steps.forEach((s, i) => {
      if (t.reasons[i] === 'probe') return;
      if (s.limit < 0.7 * C || s.limit > 1.3 * C) lastOut = i;
      if (i >= 5000) {
        min = Math.min(min, s.limit);
        max = Math.max(max, s.limit);
      }
    });
    let below = 0;
    let total = 0;
    let worst = 1;
    for (const seed of name === 'AIMD' ? [1] : SEEDS) {
      const run = simulateTraced(make(initial, seed), { ...model, seed }, 10000);
      const limits = run.steps.slice(2000).map((s) => s.limit);
      const settled = median(limits);
      below += limits.filter((l) => l < 0.7 * settled).length;
      total += limits.length;
      let inBand = 0;
      for (let i = 2500; i < 3000; i++) {
        const l = run.steps[i].limit;
        if (l >= 0.7 * C && l <= 1.3 * C) inBand++;
      }
      worst = Math.min(worst, inBand / 500);
    }
    rows.push(
      `| ${name} | ${initial} | ${lastOut} | ${min.toFixed(1)}–${max.toFixed(1)} | ${pct(below / total)} | ${pct(worst)} |`,
    );
  }
}

rows.push(
  '',
  'Latency spike: base latency 50 ms → 3,000 ms for calls started within 8 s of the 3,000th sample (20 seeds, median / worst):',
  '',
  '| algorithm | client timeout | late reports | samples to ≤ 25 % (from the spike) | samples to ≥ 90 % after recovery |',
  '|---|---|---|---|---|',
);
for (const [name, make] of makers.slice(0, 2)) {
  for (const timeoutMs of [1000, Infinity]) {
    for (const tickMs of [TICK, Infinity]) {
      const cuts = [];
      const regains = [];
      for (const seed of SEEDS) {
        let t0 = Infinity;
        const model = {
          capacity: C,
          baseLatencyMs: (k, start) => {
            if (k >= 3000 && t0 === Infinity) t0 = start;
            return start >= t0 && start < t0 + 8000 ? 60 * B : B;
          },
          timeoutMs,
          seed,
          tickMs,
        };
        const t = simulateTraced(make(50, seed), model, 6000);
        let p = 2999;
        while (t.reasons[p]?.startsWith('probe')) p--;
        const prior = t.steps[p].limit;
        let cut = 3000;
        while (cut < 6000 && t.steps[cut].limit > 0.25 * prior) cut++;
        let back = 3000;
        while (back < 6000 && t.steps[back].sample.startTime < t0 + 8000) back++;
        let regain = back;
        while (regain < 6000 && t.steps[regain].limit < 0.9 * prior) regain++;
        cuts.push(cut - 3000);
        regains.push(regain - back);
      }
      rows.push(
        `| ${name} | ${timeoutMs === Infinity ? 'none' : `${timeoutMs} ms`} | ${tickMs === Infinity ? 'none (fed directly)' : 'limiter ticks'} | ${median(cuts)} / ${Math.max(...cuts)} | ${median(regains)} / ${Math.max(...regains)} |`,
      );
    }
  }
}

rows.push(
  '',
  'App-limited decay (caller uses 5 of an initial limit of 20 for 2,000 samples, then saturates), small pool (4 slots of 100 ms, `maxLimit: 8`), `maxLimit: 200` against C = 1,000, and a start at 500 whose first samples all queue (`burst`), 20 seeds:',
  '',
  '| algorithm | limit after 2,000 app-limited samples (median) | samples to 90 % of C when demand returns (median / worst) | small pool: mean limit (median / worst) | limit after 10,000 samples, `maxLimit` 200 | from 500 (burst): last sample above 1.3 C (median / worst) |',
  '|---|---|---|---|---|---|',
);
for (const [name, make] of makers.slice(0, 2)) {
  const decayed = [];
  const grow = [];
  const pool = [];
  const high = [];
  for (const seed of SEEDS) {
    const t = simulateTraced(
      make(20, seed),
      {
        capacity: C,
        baseLatencyMs: B,
        seed,
        tickMs: TICK,
        demand: (k) => (k < 2000 ? 5 : Infinity),
      },
      3000,
    );
    let p = 1999;
    while (t.reasons[p]?.startsWith('probe')) p--;
    decayed.push(t.steps[p].limit);
    let g = 2000;
    while (g < 3000 && t.steps[g].limit < 0.9 * C) g++;
    grow.push(g - 2000);
    const s = simulateTraced(
      make(8, seed, { maxLimit: 8 }),
      { capacity: 4, baseLatencyMs: 100, seed, tickMs: TICK },
      3000,
    );
    const late = s.steps.slice(1000);
    pool.push(late.reduce((a, x) => a + x.limit, 0) / late.length);
    const b = simulateTraced(
      make(500, seed),
      { capacity: C, baseLatencyMs: B, seed, tickMs: TICK, burst: true },
      3000,
    );
    let last = -1;
    b.steps.forEach((x, i) => {
      if (x.limit > 1.3 * C) last = i;
    });
    high.push(last);
  }
  const m = simulateTraced(
    make(20, 1, { maxLimit: 200 }),
    { capacity: 1000, baseLatencyMs: B },
    10000,
  );
  rows.push(
    `| ${name} | ${median(decayed).toFixed(1)} | ${median(grow)} / ${Math.max(...grow)} | ${median(pool).toFixed(2)} / ${Math.max(...pool).toFixed(2)} | ${m.steps[9999].limit} | ${median(high)} / ${Math.max(...high)} |`,
  );
}
console.log(rows.join('\n'));
