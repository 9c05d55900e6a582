import type { SimResult } from '../sim/SimResult.js';

/** What a tuning run can optimise or bound: each metric read from a result. */
export const METRICS = {
  goodput: (r: SimResult) => r.goodputPerS,
  inbudget: (r: SimResult) => r.goodputInBudgetPerS,
  p50: (r: SimResult) => r.latencyMs.p50,
  p99: (r: SimResult) => r.latencyMs.p99,
  refused: (r: SimResult) => r.refusedTotal,
  wasted: (r: SimResult) => r.wasted.calls,
  peak: (r: SimResult) => r.inflight.peak,
  // The slowest recovery, in ms; a spike never recovered from counts as Infinity.
  recovery: (r: SimResult) =>
    r.spikes.reduce((worst, s) => Math.max(worst, s.recoveryMs ?? Number.POSITIVE_INFINITY), 0),
} as const;

/** A metric's name: a key of {@link METRICS}. */
export type Metric = keyof typeof METRICS;

/** A bound on a metric, e.g. `p99<=500`. */
export interface Constraint {
  /** The bounded metric. */
  metric: Metric;
  /** How it compares with `value`. */
  op: '<=' | '>=' | '<' | '>';
  /** The bound, in the metric's unit. */
  value: number;
}

/** What `--tune` looks for: the best `metric` in `direction` among results meeting every constraint. */
export interface Objective {
  /** Whether more or less of `metric` is better. */
  direction: 'max' | 'min';
  /** The metric to optimise. */
  metric: Metric;
  /** Bounds every candidate must meet. */
  constraints: Constraint[];
  /** The objective as written. */
  text: string;
}

const NAMES = Object.keys(METRICS) as Metric[];

function metric(name: string, text: string): Metric {
  if (!(NAMES as string[]).includes(name)) {
    throw new RangeError(
      `limits-lab: objective "${text}": unknown metric "${name}"; metrics: ${NAMES.join(', ')}`,
    );
  }
  return name as Metric;
}

/**
 * Parses an objective: `max|min <metric>` then any bounds `<metric><op><number>` (`op` one of
 * `<=`, `>=`, `<`, `>`), comma-separated: `"max goodput, p99<=500, refused<1000"`. Metrics:
 * `goodput` and `inbudget` (successes/s, all and within budget), `p50` and `p99` (ms), `refused`,
 * `wasted` (calls), `peak` (in flight), `recovery` (the slowest after a spike, ms).
 * @throws RangeError naming the part that is not understood.
 */
export function parseObjective(text: string): Objective {
  const [goal, ...bounds] = text.split(',').map((s) => s.trim());
  const g = /^(max|min)\s+(\w+)$/.exec(goal ?? '');
  if (g === null) {
    throw new RangeError(
      `limits-lab: objective "${text}" must start with "max <metric>" or "min <metric>", got ${JSON.stringify(goal)}`,
    );
  }
  const constraints = bounds.map((b) => {
    const m = /^(\w+)\s*(<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)$/.exec(b);
    if (m === null) {
      throw new RangeError(
        `limits-lab: objective "${text}": bound ${JSON.stringify(b)} must be <metric><op><number>, e.g. p99<=500`,
      );
    }
    return {
      metric: metric(m[1] as string, text),
      op: m[2] as Constraint['op'],
      value: Number(m[3]),
    };
  });
  return {
    direction: g[1] as 'max' | 'min',
    metric: metric(g[2] as string, text),
    constraints,
    text,
  };
}

/** Whether a result meets every bound of the objective. */
export function feasible(objective: Objective, r: SimResult): boolean {
  return objective.constraints.every(({ metric: m, op, value }) => {
    const v = METRICS[m](r);
    if (Number.isNaN(v)) return false;
    return op === '<=' ? v <= value : op === '>=' ? v >= value : op === '<' ? v < value : v > value;
  });
}

/** The objective's score of a result, higher is better (`-Infinity` when not a number). */
export function score(objective: Objective, r: SimResult): number {
  const v = METRICS[objective.metric](r);
  if (Number.isNaN(v)) return Number.NEGATIVE_INFINITY;
  return objective.direction === 'max' ? v : -v;
}
