import type { LimitReason, Sample } from './LimitAlgorithm.js';

/** A regain holds probes off for at most this many rounds at its target level (see `regaining`). */
const REGAIN_ROUNDS = 4;

/** A sample admitted under less than this share of the limit cannot validate it as a good level. */
const VALID_USE = 0.75;

/** A sample slower than this many no-load RTTs cannot validate its limit as a good level. */
const VALID_RTT = 1.25;

/**
 * Slow start for the delay-based algorithms: growth doubles per round (each sample adds 1) instead
 * of the algorithm's additive step. Internal (not exported from the package).
 *
 * It runs once from `initialLimit` until the first queueing, as in TCP. It runs again after a
 * collapse: the last good level is remembered (the limit of the last sample at full use that showed
 * no queueing — a decision `steady`, or `increase` outside slow start, that was not app-limited),
 * and when such a sample
 * shows up again (latency is back at the baseline) while the limit is under half of that level,
 * slow start aims back at it. That is TCP's `ssthresh` without the halving: the level was good until
 * the incident, and queueing ends the doubling early if it no longer is. It covers a collapse from
 * drops (timeouts), from late calls (`onLate`) and from latency alone (a spike of slow successes), and
 * the regrowth after an app-limited decay. A limit that glides down to the downstream's capacity
 * passes its good level down with it (it is refreshed at every validated sample at or above half
 * of it), so it does not bounce back up.
 */
export class SlowStart {
  /** True while growth doubles per round. */
  active = true;
  readonly #max: number;
  #target: number;
  #since = -Infinity;
  /** The limit of the last validated sample (see the class comment); 0 before the first. */
  #good = 0;
  /** Slow start was re-armed toward the good level (not the initial one). */
  #rearmed = false;
  /** The initial slow start is paused: the caller did not use the limit (see {@link SlowStart.pause}). */
  #paused = false;
  /** Decisions since slow start was re-armed. */
  #regainSamples = 0;

  /** @param max - the level the initial slow start may reach (the algorithm's maximum). */
  constructor(max: number) {
    this.#max = max;
    this.#target = max;
  }

  /**
   * True while a re-armed slow start climbs back toward the good level, for at most
   * {@link REGAIN_ROUNDS} rounds at that level (the algorithms hold their probes meanwhile: a regain
   * that stalls below the level, its samples steady, must not hold off the probe that would find
   * the baseline moved).
   */
  get regaining(): boolean {
    return this.active && this.#rearmed && this.#regainSamples < REGAIN_ROUNDS * this.#target;
  }

  /**
   * Queueing ends slow start; so does a sample inside the algorithm's target band (Vegas' `steady`)
   * for the initial slow start only: one re-armed toward a known good level stops at that level or
   * at queueing.
   * @param queueing - the sample read as queueing (not merely `steady`).
   * @param startTime - start of the sample that showed queueing: a call admitted before slow start
   *   began (still in flight from the incident) says nothing about the new limit and is ignored.
   */
  end(startTime: number, queueing: boolean): void {
    if (startTime >= this.#since && (queueing || !this.#rearmed)) {
      this.active = false;
      this.#paused = false;
    }
  }

  /**
   * Pauses the initial slow start: a sample aimed under the limit without queueing (Gradient's
   * `steady`: the caller does not use the limit, which tells nothing of the capacity). It resumes
   * toward the maximum at the first validated growing sample (the caller uses the limit again).
   * Paused, the app-limited rule uses its own headroom instead of slow start's 2×.
   * @param startTime - start of the sample; one admitted before slow start began is ignored.
   */
  pause(startTime: number): void {
    if (this.active && !this.#rearmed && startTime >= this.#since) {
      this.active = false;
      this.#paused = true;
    }
  }

  /**
   * Called after each decision that was not a drop. The sample validates the limit `before` it was
   * judged against as a good level when it was at full use (admitted at 75 % of that limit or more)
   * and showed no queueing, by the decision (`steady`, or `increase` outside slow start) and by its
   * own RTT (at most 1.25× the baseline: the averages lag a round, and at the top of an overshoot
   * they still read steady); an increase in slow start does not count: it doubles faster than its
   * samples can show queueing.
   * @param before - the limit the sample was judged against.
   * @param limit - the new limit.
   * @param reason - the decision.
   * @param sample - the sample decided on.
   * @param baseline - the no-load RTT the decision compared with (ms).
   */
  after(
    before: number,
    limit: number,
    reason: LimitReason,
    sample: Sample,
    baseline: number,
  ): void {
    const growing = reason === 'increase';
    const validated =
      (growing ? !this.active : reason === 'steady') &&
      sample.inflight >= VALID_USE * before &&
      sample.rtt <= VALID_RTT * baseline;
    const now = sample.startTime + sample.rtt;
    if (this.#rearmed) this.#regainSamples++;
    if (this.active && limit >= this.#target) this.active = false;
    if (this.#paused && validated && growing) {
      this.#paused = false;
      this.active = true;
      this.#since = now;
    }
    if (validated && (growing || before >= this.#good / 2)) {
      // Under half the good level only growth (latency back at the baseline) replaces it.
      if (before < this.#good / 2) this.#resume(now);
      this.#good = before;
    }
  }

  /**
   * Starts over as from an initial limit (toward the maximum, ended by the first queueing or steady
   * sample), forgetting the good level: a probe found the limit was judged against a wrong baseline.
   * @param now - the time (clock ms); calls admitted before say nothing about the new start.
   */
  restart(now: number): void {
    this.active = true;
    this.#rearmed = false;
    this.#paused = false;
    this.#since = now;
    this.#target = this.#max;
    this.#good = 0;
  }

  // Apart from `after`, which runs on every sample: kept small, V8 inlines it into the algorithm.
  #resume(now: number): void {
    if (this.active) return;
    this.active = true;
    this.#rearmed = true;
    this.#paused = false;
    this.#since = now;
    this.#target = this.#good;
    this.#regainSamples = 0;
  }
}
