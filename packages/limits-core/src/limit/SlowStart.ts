/**
 * Slow start for the delay-based algorithms: growth doubles per round (each sample adds 1) instead
 * of the algorithm's additive step. Internal (not exported from the package since 0.2.0).
 *
 * It runs once from `initialLimit` until the first queueing, as in TCP. It runs again after a
 * collapse caused by drops (timeouts, overload replies): the limit held when the drops began is
 * remembered, and when growth resumes under half of it, slow start aims back at that level. That is
 * TCP's `ssthresh` without the halving: the level was good until the incident, and queueing ends the
 * doubling early if it no longer is. Without it, additive growth needs tens of rounds to climb back
 * from the floor after an outage. A fall from latency alone never re-arms it, so a limit that glides
 * down to the downstream's capacity does not bounce back up.
 */
export class SlowStart {
  /** True while growth doubles per round. */
  active = true;
  #target: number;
  #since = -Infinity;
  #dropLevel = 0;

  /** @param max - the level the initial slow start may reach (the algorithm's maximum). */
  constructor(max: number) {
    this.#target = max;
  }

  /**
   * Queueing ends slow start.
   * @param startTime - start of the sample that showed queueing: a call admitted before slow start
   *   began (still in flight from the incident) says nothing about the new limit and is ignored.
   */
  end(startTime: number): void {
    if (startTime >= this.#since) this.active = false;
  }

  /** A dropped sample: remembers the level held when a run of drops began. */
  drop(limit: number): void {
    if (this.#dropLevel === 0) this.#dropLevel = limit;
  }

  /**
   * Called after each decision that was not a drop.
   * @param limit - the new limit.
   * @param growing - the decision was an increase.
   * @param now - the end time of the sample (clock ms).
   */
  after(limit: number, growing: boolean, now: number): void {
    if (this.active && limit >= this.#target) this.active = false;
    if (growing && this.#dropLevel !== 0) this.#resume(limit, now);
  }

  // Apart from `after`, which runs on every sample: kept small, V8 inlines it into the algorithm.
  #resume(limit: number, now: number): void {
    if (!this.active && limit < this.#dropLevel / 2) {
      this.active = true;
      this.#since = now;
      this.#target = this.#dropLevel;
    }
    this.#dropLevel = 0;
  }
}
