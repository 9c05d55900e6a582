import type { LimitAlgorithm } from '../../src/algorithms/LimitAlgorithm.js';
import { seededRandom } from '../../src/internal/random.js';
import { closedLoop, type DownstreamModel, type Step, tracing } from './closedLoop.mjs';

export type { DownstreamModel, Step };

/**
 * A deterministic closed-loop simulation (closedLoop.mjs) with the noise seeded by `model.seed`
 * (default 1): the caller always has more work than the limit, so `floor(limit)` requests are kept
 * in flight; a request started with `n` in flight takes `B × max(1, n / C)` ms ± noise.
 */
export function simulate(
  algorithm: LimitAlgorithm,
  model: DownstreamModel,
  samples: number,
): Step[] {
  return closedLoop(algorithm, model, samples, seededRandom(model.seed ?? 1));
}

/** Lowest and highest limit over `steps[from..to)`. */
export function range(
  steps: Step[],
  from: number,
  to = steps.length,
): { min: number; max: number } {
  let min = Infinity;
  let max = -Infinity;
  for (let i = from; i < to; i++) {
    const l = (steps[i] as Step).limit;
    if (l < min) min = l;
    if (l > max) max = l;
  }
  return { min, max };
}

/** Index of the first step at or after `from` whose limit satisfies `pred`, or -1. */
export function firstIndex(steps: Step[], from: number, pred: (limit: number) => boolean): number {
  for (let i = from; i < steps.length; i++) if (pred((steps[i] as Step).limit)) return i;
  return -1;
}

/** A run with the decision reason of every step. */
export interface Traced {
  steps: Step[];
  reasons: string[];
}

/** Like {@link simulate}, also recording `lastDecision.reason` after every sample. */
export function simulateTraced(
  algorithm: LimitAlgorithm,
  model: DownstreamModel,
  samples: number,
): Traced {
  const { traced, reasons } = tracing(algorithm);
  return { steps: simulate(traced, model, samples), reasons };
}

/** Limits of the steps in [from, to) that are not probe dips. */
export function undipped(t: Traced, from: number, to = t.steps.length): number[] {
  const out: number[] = [];
  for (let i = from; i < to; i++)
    if (t.reasons[i] !== 'probe') out.push((t.steps[i] as Step).limit);
  return out;
}
