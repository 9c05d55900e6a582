import { seededRandom } from '../../src/internal/random.js';
import type { LimitAlgorithm, Sample } from '../../src/limit/LimitAlgorithm.js';

/** Parameters of the simulated downstream (all times in simulated ms). */
export interface DownstreamModel {
  /** True capacity C: in-flight requests served without queueing. */
  capacity: number;
  /** Base latency B in ms; may change with the sample index (a latency spike). */
  baseLatencyMs: number | ((completed: number) => number);
  /** A request whose RTT exceeds this is reported as dropped. @default Infinity */
  timeoutMs?: number;
  /** Relative noise: rtt × (1 + noise × U[-1, 1)). @default 0.05 */
  noise?: number;
  /** Seed of the noise. @default 1 */
  seed?: number;
}

/** One step of a run: the sample fed and the limit after it. */
export interface Step {
  sample: Sample;
  limit: number;
}

/**
 * A deterministic closed-loop simulation: the caller always has more work than the limit, so
 * `floor(limit)` requests are kept in flight. A request started with `n` in flight (itself included)
 * takes `B × max(1, n / C)` ms with a little seeded noise; each completion feeds one sample to the
 * algorithm, then new requests start up to the new limit. Time is simulated, no timers are used.
 */
export function simulate(
  algorithm: LimitAlgorithm,
  model: DownstreamModel,
  samples: number,
): Step[] {
  const random = seededRandom(model.seed ?? 1);
  const noise = model.noise ?? 0.05;
  const timeoutMs = model.timeoutMs ?? Infinity;
  const base =
    typeof model.baseLatencyMs === 'number'
      ? () => model.baseLatencyMs as number
      : model.baseLatencyMs;
  // Min-heap of in-flight requests by completion time.
  const heap: Array<{ end: number; start: number; rtt: number; inflight: number }> = [];
  const push = (x: (typeof heap)[number]) => {
    heap.push(x);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((heap[p] as (typeof heap)[number]).end <= x.end) break;
      heap[i] = heap[p] as (typeof heap)[number];
      i = p;
    }
    heap[i] = x;
  };
  const pop = () => {
    const top = heap[0] as (typeof heap)[number];
    const last = heap.pop() as (typeof heap)[number];
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        let mv = last.end;
        if (l < heap.length && (heap[l] as (typeof heap)[number]).end < mv) {
          m = l;
          mv = (heap[l] as (typeof heap)[number]).end;
        }
        if (r < heap.length && (heap[r] as (typeof heap)[number]).end < mv) m = r;
        if (m === i) break;
        heap[i] = heap[m] as (typeof heap)[number];
        i = m;
      }
      heap[i] = last;
    }
    return top;
  };
  let now = 0;
  let completed = 0;
  const steps: Step[] = [];
  const fill = () => {
    const cap = Math.max(1, Math.floor(algorithm.limit));
    while (heap.length < cap) {
      const n = heap.length + 1;
      const rtt =
        base(completed) * Math.max(1, n / model.capacity) * (1 + noise * (2 * random() - 1));
      push({ start: now, end: now + rtt, rtt, inflight: n });
    }
  };
  fill();
  while (completed < samples) {
    const r = pop();
    now = r.end;
    completed++;
    const sample: Sample = {
      startTime: r.start,
      rtt: r.rtt,
      inflight: r.inflight,
      dropped: r.rtt > timeoutMs,
    };
    const limit = algorithm.update(sample);
    steps.push({ sample, limit });
    fill();
  }
  return steps;
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
  const reasons: string[] = [];
  const traced: LimitAlgorithm = {
    get limit() {
      return algorithm.limit;
    },
    update(sample) {
      const limit = algorithm.update(sample);
      reasons.push(algorithm.lastDecision?.reason ?? '');
      return limit;
    },
  };
  return { steps: simulate(traced, model, samples), reasons };
}

/** Limits of the steps in [from, to) that are not probe dips. */
export function undipped(t: Traced, from: number, to = t.steps.length): number[] {
  const out: number[] = [];
  for (let i = from; i < to; i++)
    if (t.reasons[i] !== 'probe') out.push((t.steps[i] as Step).limit);
  return out;
}
