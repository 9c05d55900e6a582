/**
 * One measured call, handed by the limiter to its algorithm when a permit is released.
 * All times are in milliseconds.
 */
export interface Sample {
  /** When the call started (clock ms); `startTime + rtt` is when it ended. */
  startTime: number;
  /**
   * Round-trip time of the call in ms, ≥ 0. It is often exactly 0 (a millisecond clock such as
   * `Date.now` measures fast calls as 0 ms) or below a microsecond: an algorithm must handle both.
   */
  rtt: number;
  /** Units in flight when the call was admitted, itself included. */
  inflight: number;
  /** The call ended in a congestion signal (timeout, overload); see `Permit.dropped()`. */
  dropped: boolean;
}

/**
 * A limit algorithm: pure, no timers, no requests. It is fed samples and answers the limit.
 * A custom algorithm is any object with a numeric `limit` and an `update` method; the limiter checks
 * both when it is built (`limit` finite and ≥ 0) and reads `limit` after each `update`.
 *
 * @example
 * ```ts
 * class HalveOnDrop implements LimitAlgorithm {
 *   limit = 20;
 *   update(s: Sample): number {
 *     this.limit = s.dropped ? Math.max(1, this.limit / 2) : Math.min(100, this.limit + 1 / this.limit);
 *     return this.limit;
 *   }
 * }
 * ```
 */
export interface LimitAlgorithm {
  /** The current limit, finite and ≥ 0 (may be fractional; the limiter uses its floor). */
  readonly limit: number;
  /**
   * Feeds one sample and returns the new limit. The limiter reads `limit` afterwards; the return
   * value is for callers that drive an algorithm directly.
   */
  update(sample: Sample): number;
  /** Why the last `update` decided what it did, if the algorithm explains itself. */
  readonly lastDecision?: LimitDecision;
  /**
   * The highest limit the algorithm can answer, if bounded: a limiter refuses a request whose cost
   * exceeds it (reason `too_large`) instead of queueing it forever.
   */
  readonly maxLimit?: number;
  /**
   * Optional, with {@link LimitAlgorithm.onLate}: the age in ms past which a call still in flight is
   * a congestion signal before it completes (`Infinity`, or absent: never). Vegas and Gradient answer
   * `4 ×` their no-load RTT.
   *
   * The rule: a limiter with an adaptive algorithm reads it on every tick of its stall detector (every
   * `stallThresholdMs / 2` ms while calls are in flight; none with `stallThresholdMs: Infinity`), and
   * reports each timed call (every call, or one in `sampleEvery`) still in flight past this age once,
   * through `onLate`, to within a tick. Calls overlapping an event-loop stall are not reported.
   */
  readonly lateAfterMs?: number;
  /**
   * Optional, with {@link LimitAlgorithm.lateAfterMs}: `count` calls still in flight have just become
   * late (each reported once; the call's own sample still comes when it completes). `inflight` is the
   * units in flight now. The limiter reads `limit` afterwards, as after `update`.
   */
  onLate?(count: number, inflight: number): void;
}

/**
 * Why an algorithm moved (or kept) its limit:
 * - `increase`: no sign of queueing, the limit grows;
 * - `queueing`: latency says requests queue at the downstream, the limit falls;
 * - `drop`: a dropped sample (timeout, overload), the limit falls;
 * - `late`: calls still in flight past `lateAfterMs` count as dropped samples (`onLate`);
 * - `app_limited`: growth suppressed because in-flight is well below the limit (and, after a round
 *   of it, the limit decays toward 1.5× the peak in-flight used);
 * - `probe`: a short dip to re-measure the no-load RTT;
 * - `probe_end`: the dip ended, the limit is restored;
 * - `steady`: inside the target band, no change;
 * - `warmup`: too few samples yet to judge;
 * - `fixed`: the algorithm never changes.
 */
export type LimitReason =
  | 'increase'
  | 'queueing'
  | 'drop'
  | 'late'
  | 'app_limited'
  | 'probe'
  | 'probe_end'
  | 'steady'
  | 'warmup'
  | 'fixed';

/** The reason of an algorithm's last decision and the numbers behind it. */
export interface LimitDecision {
  /** The reason; see {@link LimitReason}. */
  reason: LimitReason;
  /** The sample's RTT in ms. */
  rttMs: number;
  /** The no-load (baseline) RTT the algorithm compared with, in ms, if it keeps one. */
  baselineRttMs?: number;
  /** Vegas: the estimated number of requests queued at the downstream. */
  queue?: number;
  /** Gradient: the clamped gradient (long RTT / short RTT × tolerance). */
  gradient?: number;
  /** Gradient: the long RTT average in ms after capping. */
  longRttMs?: number;
}
