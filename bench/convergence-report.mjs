// Prints the sample counts behind limits-core's README "Measured behaviour" (algorithm convergence
// and latency-spike recovery on a simulated dependency). Run by hand, against the built package:
//
//   npx -y pnpm@12.4.2 --filter limits-core run build
//   node bench/convergence-report.mjs
//
// The simulation is packages/limits-core/test/support/closedLoop.mjs, the one the convergence tests
// run (test/convergence.test.ts asserts on it; this prints the numbers). Deterministic: seeded noise
// and probe spacing, simulated time. Takes about a second.

import { AimdLimit, GradientLimit, seededRandom, VegasLimit } from 'limits-core';
import { closedLoop, tracing } from '../packages/limits-core/test/support/closedLoop.mjs';

const C = 50;
const B = 50;

/** Runs `samples` completions of the closed loop with the noise the tests use (seed 1). */
function simulateTraced(algorithm, model, samples) {
  const { traced, reasons } = tracing(algorithm);
  return { steps: closedLoop(traced, model, samples, seededRandom(1)), reasons };
}

/** [name, make(initialLimit), downstream model] */
const makers = [
  [
    'Vegas',
    (i) => new VegasLimit({ initialLimit: i, random: seededRandom(7) }),
    { capacity: C, baseLatencyMs: B },
  ],
  [
    'Gradient',
    (i) => new GradientLimit({ initialLimit: i, random: seededRandom(7) }),
    { capacity: C, baseLatencyMs: B },
  ],
  [
    'AIMD',
    (i) => new AimdLimit({ initialLimit: i }),
    { capacity: C, baseLatencyMs: B, timeoutMs: 1.25 * B },
  ],
];

const rows = [
  '| algorithm | start | last sample outside ±30 % | band after settling (no dips) | dip share |',
  '|---|---|---|---|---|',
];
for (const [name, make, model] of makers) {
  for (const initial of [10, 500]) {
    const t = simulateTraced(make(initial), model, 10000);
    let lastOut = -1;
    let min = Infinity;
    let max = -Infinity;
    let dips = 0;
    t.steps.forEach((s, i) => {
      if (t.reasons[i] === 'probe') {
        if (i >= 5000) dips++;
        return;
      }
      if (s.limit < 0.7 * C || s.limit > 1.3 * C) lastOut = i;
      if (i >= 5000) {
        min = Math.min(min, s.limit);
        max = Math.max(max, s.limit);
      }
    });
    rows.push(
      `| ${name} | ${initial} | ${lastOut} | ${min.toFixed(1)}–${max.toFixed(1)} | ${((100 * dips) / 5000).toFixed(1)} % |`,
    );
  }
}
rows.push(
  '',
  '| algorithm | client timeout | samples to ≤ 25 % (from first spiked) | samples to ≥ 90 % after recovery |',
  '|---|---|---|---|',
);
// A 60× latency spike over samples 3000–3249: how fast the limit falls, and how fast it regains.
for (const [name, make] of makers.slice(0, 2)) {
  for (const timeoutMs of [1000, Infinity]) {
    const t = simulateTraced(
      make(50),
      { capacity: C, baseLatencyMs: (k) => (k >= 3000 && k < 3250 ? 60 * B : B), timeoutMs },
      4500,
    );
    let p = 2999;
    while (t.reasons[p]?.startsWith('probe')) p--;
    const prior = t.steps[p].limit;
    let first = 3000;
    while (t.steps[first].sample.rtt < 10 * B) first++;
    let cut = first;
    while (cut < t.steps.length && t.steps[cut].limit > 0.25 * prior) cut++;
    let regain = 3250;
    while (regain < t.steps.length && t.steps[regain].limit < 0.9 * prior) regain++;
    rows.push(
      `| ${name} | ${timeoutMs === Infinity ? 'none' : `${timeoutMs} ms`} | ${cut - first} | ${regain - 3250} |`,
    );
  }
}
console.log(rows.join('\n'));
