import type { TraceRecord } from '../../src/index.js';
import { normal, seeded } from './random.js';

/** The downstream a synthetic trace is drawn from, and the load offered to it. */
export interface KneeModel {
  /** latency(t, n) = baseMs(t) × max(1, n / knee)^exponent × e^(sigma × z). */
  baseMs: (tMs: number) => number;
  knee: number;
  exponent: number;
  sigma: number;
  /** Poisson arrivals at this rate (calls per second) at time t. */
  ratePerS: (tMs: number) => number;
  durationMs: number;
  seed: number;
  /** Share of calls refused before the downstream (they do not load it). */
  refusedShare?: number;
  /** Share of the downstream's calls that end `overload`, as a function of time. */
  overloadShare?: (tMs: number) => number;
}

/**
 * The records of a trace drawn from `model`, in start order: Poisson arrivals; each call meets the
 * calls then in flight (itself included: `n`), counted here by brute force over the calls not yet
 * ended, and takes the model's latency for `n`.
 */
export function* kneeTrace(model: KneeModel): Generator<TraceRecord> {
  const random = seeded(model.seed);
  const ends: number[] = [];
  let t = 0;
  for (;;) {
    t += (-Math.log(1 - random()) / model.ratePerS(t)) * 1000;
    if (t >= model.durationMs) return;
    if (random() < (model.refusedShare ?? 0)) {
      yield { startMs: t, durationMs: 0.5, outcome: 'refused' };
      continue;
    }
    let live = 0;
    for (let i = 0; i < ends.length; i++)
      if ((ends[i] as number) > t) ends[live++] = ends[i] as number;
    ends.length = live;
    const n = live + 1;
    const durationMs =
      model.baseMs(t) *
      Math.max(1, n / model.knee) ** model.exponent *
      Math.exp(model.sigma * normal(random));
    ends.push(t + durationMs);
    const overload = random() < (model.overloadShare?.(t) ?? 0);
    yield { startMs: t, durationMs, outcome: overload ? 'overload' : 'success' };
  }
}
