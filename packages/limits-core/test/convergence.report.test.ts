// Prints the sample counts behind the algorithm documentation (README "Measured behaviour").
// Not part of the suite: run with `LIMITS_REPORT=1 npx vitest run test/convergence.report.test.ts`.
import { describe, test } from 'vitest';
import { seededRandom } from '../src/internal/random.js';
import { AimdLimit } from '../src/limit/AimdLimit.js';
import { GradientLimit } from '../src/limit/GradientLimit.js';
import type { LimitAlgorithm } from '../src/limit/LimitAlgorithm.js';
import { VegasLimit } from '../src/limit/VegasLimit.js';
import { type DownstreamModel, type Step, simulateTraced } from './support/simulate.js';

const C = 50;
const B = 50;
const makers: Array<[string, (i: number) => LimitAlgorithm, DownstreamModel]> = [
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

describe.runIf(process.env.LIMITS_REPORT)('convergence report', () => {
  test('prints the measured sample counts', () => {
    const rows: string[] = [
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
    for (const [name, make] of makers.slice(0, 2)) {
      for (const timeoutMs of [1000, Infinity]) {
        const t = simulateTraced(
          make(50),
          {
            capacity: C,
            baseLatencyMs: (k) => (k >= 3000 && k < 3250 ? 60 * B : B),
            timeoutMs,
          },
          4500,
        );
        let p = 2999;
        while (t.reasons[p]?.startsWith('probe')) p--;
        const prior = (t.steps[p] as Step).limit;
        let first = 3000;
        while ((t.steps[first] as Step).sample.rtt < 10 * B) first++;
        let cut = first;
        while (cut < t.steps.length && (t.steps[cut] as Step).limit > 0.25 * prior) cut++;
        let regain = 3250;
        while (regain < t.steps.length && (t.steps[regain] as Step).limit < 0.9 * prior) regain++;
        rows.push(
          `| ${name} | ${timeoutMs === Infinity ? 'none' : `${timeoutMs} ms`} | ${cut - first} | ${regain - 3250} |`,
        );
      }
    }
    console.log(rows.join('\n'));
  });
});
