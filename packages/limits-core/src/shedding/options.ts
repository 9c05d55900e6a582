import type { Criticality } from './criticality.js';

/**
 * Options of importance-based shedding, {@link LimiterOptions.shedding}. Every option is checked at
 * construction, each error naming `shedding.<option>`, what it allows and the value given.
 */
export interface SheddingOptions {
  /**
   * The queue wait, in ms, above which the limiter counts as overloaded and the threshold rises; it
   * falls again once the wait is under half of it (the band between holds it still). A number > 0.
   * @default 20
   */
  targetWaitMs?: number;
  /**
   * How often the threshold is reconsidered, in ms: an integer in [10, 10_000]. Shorter reacts
   * faster to a spike; longer sees more arrivals per decision.
   * @default 100
   */
  intervalMs?: number;
  /**
   * Cohorts per level: the calls' `cohort` keys are hashed into this many buckets, and within a
   * level the threshold sheds whole cohorts, the same ones while the overload lasts. An integer in
   * [1, 1024]; 1 turns cohorts off (a level is shed as a whole, its calls at random by rotation).
   * @default 128
   */
  cohorts?: number;
  /**
   * The hash of the cohorts changes every `resaltMs` of wall-clock time (with an injected clock,
   * of its time), so the users shed in a long overload change now and then: nobody is shed for
   * good. A number ≥ 60_000, or `Infinity` (never).
   * @default 3_600_000 (an hour)
   */
  resaltMs?: number;
  /**
   * Mixed into the cohort hash. Services that give the same `salt` (and run on synchronised clocks)
   * shed the same users, so a user refused by one is not also half-served by another.
   * @default ''
   */
  salt?: string;
}

/**
 * Where a shedding limiter's admission threshold stands (`snapshot().shedding`, and the `threshold`
 * event). Calls are ordered by criticality, then first attempts above retries, then by cohort; the
 * threshold refuses everything below one point of that order.
 */
export interface ShedThreshold {
  /**
   * The point in the order, from 0 (nothing is refused) up to `7 × cohorts`. The rank of a call is
   * `(level × 2 + (first attempt ? 1 : 0)) × cohorts + cohort`, with level 0 for `sheddable` up to 3
   * for `critical_plus`; calls ranked `r` with `r + 1 ≤ rank` are refused with reason `shed`, calls
   * with `r ≥ rank` pass, and of the one rank in between (a fractional `rank`) the share
   * `r + 1 − rank` passes.
   */
  rank: number;
  /**
   * The number of ranks: `8 × cohorts`. The threshold never passes `7 × cohorts`: first attempts of
   * `critical_plus` are never refused by it.
   */
  ranks: number;
  /**
   * The level the threshold cuts into: calls of lower levels are all refused, calls of higher
   * levels all pass; `undefined` when nothing is refused.
   */
  criticality: Criticality | undefined;
  /**
   * At that level, `true` once first attempts are refused too (cohorts below `cohort`); `false` while
   * only its retries are.
   */
  firstAttempts: boolean;
  /** At that level and attempt kind, the cohorts below this one are refused. */
  cohort: number;
}
