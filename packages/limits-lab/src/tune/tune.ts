import { parseConfigSpec } from '../configs/parseConfigSpec.js';
import { type CompareRun, compare } from '../sim/compare.js';
import type { SimResult } from '../sim/SimResult.js';
import { feasible, METRICS, type Objective, parseObjective, score } from './objective.js';
import { paretoFront } from './pareto.js';
import { candidates, parseSearchSpace } from './searchSpace.js';

/** Options of {@link tune}. */
export interface TuneOptions {
  /** The search space: see {@link parseSearchSpace}. */
  space: string;
  /** What to look for: see {@link parseObjective}. @default 'max goodput' */
  objective?: string;
  /** Candidates to run, an integer in [1, 100,000]. @default the whole grid, at most 100; 100 for a random search */
  trials?: number;
  /** The run every candidate goes through (its timeline is not recorded). */
  run: CompareRun;
}

/** One candidate and how it did. */
export interface TuneTrial {
  /** Its configuration spec (the `--config` that reruns it). */
  spec: string;
  /** What it did. */
  result: SimResult;
  /** It meets every bound of the objective. */
  feasible: boolean;
  /** The objective's value, higher is better (`-Infinity` when not a number). */
  score: number;
}

/** What {@link tune} found. */
export interface TuneResult {
  /** The objective, parsed. */
  objective: Objective;
  /** A whole or sampled grid, or a random search. */
  mode: 'grid' | 'random';
  /** Every candidate, in the order run. */
  trials: TuneTrial[];
  /**
   * The Pareto front of the feasible candidates: the objective's metric against p99 latency (lower
   * better; against goodput when the objective is a latency), best objective first.
   */
  front: TuneTrial[];
  /** The feasible candidate with the best score (the first run among equals), if any. */
  best: TuneTrial | undefined;
}

/**
 * Searches a configuration space (a grid, or a seeded random search) on one run and returns every
 * candidate, the Pareto front and the best by the objective. Deterministic for a given run and seed.
 * @throws RangeError for a bad space, objective or trial count; a candidate's own option errors.
 */
export function tune(options: TuneOptions): TuneResult {
  const objective = parseObjective(options.objective ?? 'max goodput');
  const space = parseSearchSpace(options.space);
  const trials = options.trials ?? (space.mode === 'grid' ? Math.min(space.size, 100) : 100);
  if (!Number.isInteger(trials) || trials < 1 || trials > 100_000) {
    throw new RangeError(
      `limits-lab: the number of trials must be an integer in [1, 100000], got ${trials}`,
    );
  }
  const specs = candidates(space, trials, options.run.seed ?? 1);
  const configs = specs.map((spec) => parseConfigSpec(spec));
  const results = compare(configs, { ...options.run, timeline: false });
  const all: TuneTrial[] = results.map((result, i) => ({
    spec: specs[i] as string,
    result,
    feasible: feasible(objective, result),
    score: score(objective, result),
  }));
  const ok = all.filter((t) => t.feasible);
  const latencyGoal = objective.metric === 'p99' || objective.metric === 'p50';
  const front = paretoFront(
    ok,
    (t) => t.score,
    (t) => (latencyGoal ? METRICS.goodput(t.result) : -METRICS.p99(t.result)),
  );
  let best: TuneTrial | undefined;
  for (const t of ok) if (best === undefined || t.score > best.score) best = t;
  return { objective, mode: space.mode, trials: all, front, best };
}
