/** Relative width of a bucket: a quantile is reported within 1 % below the true one. */
const RATIO = 1.01;
const LOG_RATIO = Math.log(RATIO);
/** The smallest latency told apart from zero, in ms (1 µs). */
const FLOOR_MS = 0.001;
/** Buckets cover [1 µs, about 11.6 days]; larger values go in the last. */
const BUCKETS = 2_800;

/**
 * Latencies in fixed memory: a log-scale histogram (buckets 1 % wide, from 1 µs to about 11 days,
 * about 45 KiB) with the exact count, sum, min and max. A quantile is the lowest latency recorded in
 * its bucket: at most 1 % below the true one, and exact when the bucket holds a single value.
 */
export class LatencyHistogram {
  readonly #counts = new Float64Array(BUCKETS);
  /** The lowest latency recorded in each bucket (reported for it: exact when a bucket holds one value). */
  readonly #lows = new Float64Array(BUCKETS).fill(Number.POSITIVE_INFINITY);
  #zero = 0;
  #count = 0;
  #sum = 0;
  #min = Number.POSITIVE_INFINITY;
  #max = Number.NEGATIVE_INFINITY;

  /** Records one latency in ms (≥ 0; anything below 1 µs counts as 0). */
  record(ms: number): void {
    this.#count++;
    this.#sum += ms;
    if (ms < this.#min) this.#min = ms;
    if (ms > this.#max) this.#max = ms;
    if (ms < FLOOR_MS) {
      this.#zero++;
      return;
    }
    const log = Math.floor(Math.log(ms / FLOOR_MS) / LOG_RATIO);
    const i = log < BUCKETS ? log : BUCKETS - 1;
    (this.#counts as Float64Array)[i]++;
    if (ms < (this.#lows[i] as number)) this.#lows[i] = ms;
  }

  /** Latencies recorded. */
  get count(): number {
    return this.#count;
  }

  /** Their mean in ms (`NaN` when none). */
  get mean(): number {
    return this.#count === 0 ? Number.NaN : this.#sum / this.#count;
  }

  /** The largest, in ms (`NaN` when none). */
  get max(): number {
    return this.#count === 0 ? Number.NaN : this.#max;
  }

  /**
   * The `q` quantile (0 < q ≤ 1) by nearest rank, in ms: the lowest latency recorded in the bucket
   * holding the `ceil(q × count)`-th smallest one (the largest itself for the last rank). `NaN` when
   * none was recorded.
   */
  quantile(q: number): number {
    if (this.#count === 0) return Number.NaN;
    const rank = Math.max(1, Math.ceil(q * this.#count));
    if (rank >= this.#count) return this.#max;
    let seen = this.#zero;
    if (seen >= rank) return this.#min;
    const counts = this.#counts;
    for (let i = 0; i < BUCKETS; i++) {
      seen += counts[i] as number;
      if (seen >= rank) return this.#lows[i] as number;
    }
    return this.#max;
  }
}
