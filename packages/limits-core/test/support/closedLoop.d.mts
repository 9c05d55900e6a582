import type { LimitAlgorithm, Sample } from '../../src/algorithms/LimitAlgorithm.js';

/** Parameters of the simulated downstream (all times in simulated ms). */
export interface DownstreamModel {
  /** True capacity C: in-flight requests served without queueing. */
  capacity: number;
  /**
   * Base latency B in ms; may change with the sample index or the request's start time in simulated
   * ms (a latency spike).
   */
  baseLatencyMs: number | ((completed: number, startMs: number) => number);
  /**
   * A client timeout: a request that would take longer ends at this many ms, as a dropped sample.
   * @default Infinity
   */
  timeoutMs?: number;
  /** Relative noise: rtt × (1 + noise × U[-1, 1)). @default 0.05 */
  noise?: number;
  /**
   * The most requests the caller wants in flight (app-limited below the limit); may change with the
   * sample index. @default Infinity (always more work than the limit)
   */
  demand?: number | ((completed: number) => number);
  /**
   * Simulates a limiter's tick every `tickMs` ms: outstanding requests past the algorithm's
   * `lateAfterMs` are reported once each through its `onLate`. @default Infinity (no ticks)
   */
  tickMs?: number;
  /**
   * Requests started together (a fill after a completion or the start) all take the latency of the
   * in-flight count they reach together, not of their own position in the fill: a start far above
   * the capacity then overloads even the first samples. @default false
   */
  burst?: boolean;
  /** Seed of the noise (used by simulate.ts). @default 1 */
  seed?: number;
}

/** One step of a run: the sample fed and the limit after it. */
export interface Step {
  sample: Sample;
  limit: number;
}

/** Runs `samples` completions of the closed loop (see closedLoop.mjs); `random` gives the noise. */
export function closedLoop(
  algorithm: LimitAlgorithm,
  model: DownstreamModel,
  samples: number,
  random: () => number,
): Step[];

/** `traced` feeds `algorithm` and pushes its `lastDecision.reason` after every sample to `reasons`. */
export function tracing(algorithm: LimitAlgorithm): { traced: LimitAlgorithm; reasons: string[] };
