/**
 * @packageDocumentation
 * The app-limited rule of the delay-based algorithms (after TCP's congestion-window validation,
 * RFC 7661): a limit the caller leaves unused is no evidence of capacity, and a spike would fill all
 * of it before the first slow sample returns.
 *
 * The rule, in plain words:
 * - **A sample is app-limited** ({@link appLimited}) when the limit `L` it judges is more than 1.5×
 *   the units in flight it was admitted under (2× while slow start doubles per round: its samples
 *   were admitted under half the limit they now judge), unless it used every whole unit the limit
 *   lets through (`inflight ≥ floor(L)`). An app-limited sample never raises the limit (reason
 *   `app_limited`); falls still apply.
 * - **An unused limit decays** ({@link AppLimitedDecay}): once a whole round (`L` samples) of
 *   app-limited samples that were not drops, each decided `app_limited` or `steady`, has come, the
 *   limit decays toward 1.5× the peak in-flight of that round (never below `minLimit`; the peak, as
 *   RFC 7661's pipeACK, so a bursty caller keeps room for its bursts), closing half the gap per
 *   round (`1 / L` of that per sample). Each further whole round sets the target afresh, and the
 *   initial slow start pauses at the end of each (the decay and the growth rule then use the 1.5×
 *   headroom, not slow start's 2×).
 * - **A sample at use stops it**: a sample that was neither app-limited nor a drop forgets the round
 *   and the target.
 * Regrowth is fast: {@link SlowStart} keeps the last good level and aims back at it when demand
 * returns.
 *
 * Internal (not exported from the package): {@link ProbingLimit} applies it to every decision.
 */
import type { LimitReason } from './LimitAlgorithm.js';
import type { SlowStart } from './SlowStart.js';

/**
 * App-limited headroom: growth stops while the limit is more than this many times the in-flight a
 * sample was admitted under, and an unused limit decays toward this many times the peak in-flight
 * of a round (the peak, as RFC 7661's pipeACK, so a bursty caller keeps room for its bursts).
 */
const HEADROOM = 1.5;

/** Share of the gap to the app-limited target closed per round of `limit` samples. */
const DECAY_PER_ROUND = 0.5;

/**
 * The app-limited rule: a sample admitted under `inflight` units judges the limit `L` over 1.5× that
 * (2× while slow start doubles per round: its samples were admitted under half the limit they now
 * judge), unless it used every whole unit the limit lets through (`inflight ≥ floor(L)`): a limit of
 * 1.5 lets one call through, and a sample that took it is at full use. (Judged against `L` alone,
 * every estimate in (1.5, 2) would read one call in flight as unused, and the limit could never grow
 * from there.)
 * @param slowStart - slow start is doubling the limit per round.
 */
export function appLimited(slowStart: boolean, inflight: number, L: number): boolean {
  return (slowStart ? 2 : HEADROOM) * inflight < L && inflight < Math.floor(L);
}

/** The decay of a limit the caller leaves unused (see the file comment for its rule). */
export class AppLimitedDecay {
  readonly #minLimit: number;
  readonly #slowStart: SlowStart;
  /** The peak in-flight of the app-limited samples of the current round, and how many came. */
  #peak = 0;
  #count = 0;
  /** The target from the last whole round (0: not decaying). */
  #target = 0;

  /**
   * @param minLimit - the algorithm's minimum: the target never goes below it.
   * @param slowStart - the algorithm's slow start, paused at the end of each whole unused round.
   */
  constructor(minLimit: number, slowStart: SlowStart) {
    this.#minLimit = minLimit;
    this.#slowStart = slowStart;
  }

  /**
   * An app-limited sample that was not a drop, admitted under `inflight` units at `startTime`, whose
   * decision against the limit `L` was `reason` and gave `estimate`. Only `app_limited` and
   * `steady` decisions count (a fall by the algorithm's own rule is left as it is).
   * @returns the estimate after this sample's share of the decay: below `estimate` only while
   *   decaying.
   */
  idle(
    estimate: number,
    L: number,
    inflight: number,
    startTime: number,
    reason: LimitReason,
  ): number {
    if (reason !== 'app_limited' && reason !== 'steady') return estimate;
    if (inflight > this.#peak) this.#peak = inflight;
    if (++this.#count >= L) {
      this.#target = Math.max(this.#minLimit, HEADROOM * this.#peak);
      // A whole round unused: the initial slow start pauses (a growing sample at full use resumes
      // it), so the decay and the growth rule use the headroom, not slow start's 2×.
      this.#slowStart.pause(startTime);
      this.#peak = this.#count = 0;
    }
    const to = this.#target;
    if (to === 0 || estimate <= to) return estimate;
    return estimate - ((estimate - to) * DECAY_PER_ROUND) / Math.max(1, L);
  }

  /** A sample at use (neither app-limited nor a drop): the round and the target are forgotten. */
  used(): void {
    if (this.#count !== 0 || this.#target !== 0) this.#peak = this.#count = this.#target = 0;
  }
}
