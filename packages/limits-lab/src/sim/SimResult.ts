import type { RejectReason } from 'limits-core';
import type { Timeline } from '../TimelineRecorder.js';
import type { SpikeRecovery } from './GoodputBins.js';

/** What one configuration did in one simulated run. Rates are per second of simulated time. */
export interface SimResult {
  /** The configuration's name. */
  name: string;
  /** The measured span, in ms: calls ending later (the drain after the last arrival) are not counted in rates. */
  durationMs: number;
  /** Requests offered to the limiter. */
  arrivals: number;
  /** Requests the limiter let through to the downstream (at once or after queueing). */
  admitted: number;
  /** Successes per second (calls the downstream answered with `success`, ended within the span). */
  goodputPerS: number;
  /** Successes per second that also ended within their caller's budget (all successes without budgets). */
  goodputInBudgetPerS: number;
  /** Calls answered by the downstream, by outcome (all of them, the drain included). */
  outcomes: { success: number; failure: number; overload: number };
  /**
   * Latency of the calls the downstream answered, from arrival (queue wait included) to the answer,
   * in ms: nearest-rank quantiles from a log histogram (within 0.5 %), exact mean and max.
   */
  latencyMs: { p50: number; p99: number; mean: number; max: number };
  /** Requests the limiter refused, by `LimitExceededError.reason` (reasons that never happened left out). */
  refused: Partial<Record<RejectReason, number>>;
  /** All refusals. */
  refusedTotal: number;
  /**
   * Wasted work: calls that ran at the downstream but ended after their caller's budget, and the
   * downstream time they took (ms).
   */
  wasted: { calls: number; serviceMs: number };
  /** Calls in flight on the downstream: the peak, and the time-weighted mean over the span. */
  inflight: { peak: number; mean: number };
  /** Recovery after each spike, in spike order. */
  spikes: SpikeRecovery[];
  /** The limiter's timeline (limit, in flight, outcomes, latency, refusals), when recorded. */
  timeline: Timeline | undefined;
}
