/** Most buckets kept; beyond, the two oldest merge (their calls then count as started at the older time). */
const MAX_BUCKETS = 64;

/**
 * @internal The timed calls in flight of an adaptive limiter, counted per tick of its stall detector
 * (one bucket per tick interval, by start time), so that those still in flight past the algorithm's
 * `lateAfterMs` can be reported once each (`LimitAlgorithm.onLate`) without a timer or a clock read
 * per call: a grant adds one to the newest bucket, a release takes one from its start time's bucket
 * (found from the newest, usually the first or second), and a tick reports and forgets the buckets
 * that ended before `now − lateAfterMs`. A call is reported up to one tick after it became late.
 */
export class LateCalls {
  /** Start of each bucket (clock ms); a bucket ends where the next begins. Live from `#head`. */
  readonly #begins: number[] = [];
  readonly #counts: number[] = [];
  #head = 0;
  /** Calls that started before this were reported late or excused: they are no longer tracked. */
  #forgotBefore = -Infinity;

  /** A timed call started at `startTime` (the limiter's clock, not before the last tick). */
  started(startTime: number): void {
    const last = this.#counts.length - 1;
    if (last < this.#head) {
      this.#begins.push(startTime);
      this.#counts.push(1);
    } else {
      (this.#counts[last] as number)++;
    }
  }

  /**
   * A timed call that started at `startTime` ended.
   * @returns whether it had been reported late (or excused by a stall) and was no longer tracked.
   */
  released(startTime: number): boolean {
    if (startTime < this.#forgotBefore) return true;
    const begins = this.#begins;
    let i = begins.length - 1;
    while (i > this.#head && (begins[i] as number) > startTime) i--;
    if (i >= this.#head && (this.#counts[i] as number) > 0) (this.#counts[i] as number)--;
    return false;
  }

  /** Calls tracked and not reported late (nor excused): the calls in flight that are not late. */
  get tracked(): number {
    let n = 0;
    for (let i = this.#head; i < this.#counts.length; i++) n += this.#counts[i] as number;
    return n;
  }

  /**
   * A tick at `now`: forgets the buckets that ended at or before `now − lateAfterMs` and returns how
   * many calls they still held (now late); then opens a bucket for the calls that start from `now`.
   */
  tick(now: number, lateAfterMs: number): number {
    const begins = this.#begins;
    const counts = this.#counts;
    const threshold = now - lateAfterMs;
    let late = 0;
    // A bucket ends where the next begins: the newest one is still open and never reported here.
    while (this.#head < begins.length - 1 && (begins[this.#head + 1] as number) <= threshold) {
      late += counts[this.#head] as number;
      this.#forgotBefore = begins[this.#head + 1] as number;
      this.#head++;
    }
    this.#open(now);
    return late;
  }

  /**
   * Every call reported late so far started before this time (clock ms): the end of the newest
   * bucket a tick has reported.
   */
  get reportedBefore(): number {
    return this.#forgotBefore;
  }

  /** A stall was detected at `now`: every call in flight overlapped it; none will be reported. */
  excuse(now: number): void {
    this.#forgotBefore = now;
    this.#begins.length = 0;
    this.#counts.length = 0;
    this.#head = 0;
  }

  #open(now: number): void {
    const begins = this.#begins;
    const counts = this.#counts;
    // An empty newest bucket alone holds no call: move its start. (With an older bucket before it,
    // moving it would move that bucket's end, and so when its calls are reported.)
    if (counts.length - 1 === this.#head && counts[this.#head] === 0) {
      begins[this.#head] = now;
    } else {
      begins.push(now);
      counts.push(0);
    }
    // Empty oldest buckets hold no call: drop them.
    while (this.#head < counts.length - 1 && counts[this.#head] === 0) this.#head++;
    if (counts.length - this.#head > MAX_BUCKETS) {
      counts[this.#head + 1] = (counts[this.#head + 1] as number) + (counts[this.#head] as number);
      begins[this.#head + 1] = begins[this.#head] as number;
      this.#head++;
    }
    if (this.#head > MAX_BUCKETS) {
      begins.splice(0, this.#head);
      counts.splice(0, this.#head);
      this.#head = 0;
    }
  }
}
