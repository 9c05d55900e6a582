/**
 * The concurrency part of the downstream's latency, fitted by least squares on log latency:
 *
 *   log latency = log base(bucket) + exponent × max(0, log n − log knee) + noise
 *
 * with one free `log base` per time bucket (a fixed effect: whatever moves latency over time, a spike
 * included, is the bucket's and not concurrency's), so `exponent` and `knee` are fitted from how
 * latency varies with the concurrency `n` within the buckets. For each knee of a fixed grid (16 per
 * decade from 1 to 10,000) the sums the least squares need are kept per bucket while it is open and
 * folded into running totals when it closes: memory is the grid's, whatever the number of calls.
 * The knee with the least squared error wins; a concurrency effect is kept only when its exponent's
 * t statistic is at least {@link MIN_T} (otherwise latency does not depend on concurrency: no knee).
 */

/** The knee grid: 16 steps per decade (each 15.5 % above the last) from 1 to 10,000. */
export const KNEES: readonly number[] = Array.from({ length: 65 }, (_, i) => 10 ** (i / 16));

const LOG_KNEES = Float64Array.from(KNEES, Math.log);

/** The t statistic an exponent needs to count as a concurrency effect rather than noise. */
export const MIN_T = 4;

/** What {@link KneeRegression.result} found. */
export interface KneeFit {
  /** Index of the knee in {@link KNEES}, or -1 when latency does not depend on concurrency. */
  kneeIndex: number;
  /** The knee (calls in flight), `Infinity` when none. */
  knee: number;
  /** The exponent (0 when no knee). */
  exponent: number;
  /** The exponent's t statistic (0 when no knee). */
  exponentT: number;
  /** Share of the variance of log latency the model explains (time buckets and concurrency). */
  rSquared: number;
  /** Share of the variance within the time buckets concurrency explains. */
  concurrencyShare: number;
  /** Standard deviation of the residual, in log ms: the latency's jitter around the model. */
  sigma: number;
  /** Calls fitted. */
  count: number;
}

export class KneeRegression {
  // The open bucket's sums.
  #bucket = Number.NaN;
  #n = 0;
  #sy = 0;
  #syy = 0;
  readonly #sh = new Float64Array(KNEES.length);
  readonly #shh = new Float64Array(KNEES.length);
  readonly #shy = new Float64Array(KNEES.length);
  // The closed buckets' within-bucket sums, and the totals.
  readonly #wxx = new Float64Array(KNEES.length);
  readonly #wxy = new Float64Array(KNEES.length);
  #wyy = 0;
  #buckets = 0;
  #count = 0;
  #sumY = 0;
  #sumYY = 0;

  /**
   * One call's log latency `y` at log concurrency `logN`, started in time bucket `bucket` (buckets
   * come in order: a new one closes the last).
   */
  add(bucket: number, logN: number, y: number): void {
    if (bucket !== this.#bucket) {
      this.#fold();
      this.#bucket = bucket;
    }
    this.#n++;
    this.#sy += y;
    this.#syy += y * y;
    this.#count++;
    this.#sumY += y;
    this.#sumYY += y * y;
    for (let k = 0; k < LOG_KNEES.length && (LOG_KNEES[k] as number) < logN; k++) {
      const h = logN - (LOG_KNEES[k] as number);
      this.#sh[k] += h;
      this.#shh[k] += h * h;
      this.#shy[k] += h * y;
    }
  }

  #fold(): void {
    const n = this.#n;
    if (n === 0) return;
    this.#buckets++;
    this.#wyy += this.#syy - (this.#sy * this.#sy) / n;
    for (let k = 0; k < LOG_KNEES.length; k++) {
      const sh = this.#sh[k] as number;
      this.#wxx[k] += (this.#shh[k] as number) - (sh * sh) / n;
      this.#wxy[k] += (this.#shy[k] as number) - (sh * this.#sy) / n;
    }
    this.#n = 0;
    this.#sy = 0;
    this.#syy = 0;
    this.#sh.fill(0);
    this.#shh.fill(0);
    this.#shy.fill(0);
  }

  /** The fit of the calls added so far (closes the open bucket). */
  result(): KneeFit {
    this.#fold();
    const dof = Math.max(1, this.#count - this.#buckets - 1);
    let best = -1;
    let bestSse = this.#wyy;
    let bestExponent = 0;
    for (let k = 0; k < LOG_KNEES.length; k++) {
      const wxx = this.#wxx[k] as number;
      const wxy = this.#wxy[k] as number;
      // No spread of concurrency, no rise with it, or nothing within the buckets to explain (every
      // call of a bucket as long as the others): rounding, not an effect.
      if (!(wxx > 1e-9) || !(wxy > 1e-9 * wxx) || !(this.#wyy > 1e-12 * this.#count)) continue;
      const sse = this.#wyy - (wxy * wxy) / wxx;
      if (sse < bestSse) {
        best = k;
        bestSse = sse;
        bestExponent = wxy / wxx;
      }
    }
    let t = 0;
    if (best !== -1) {
      const se = Math.sqrt(Math.max(0, bestSse) / dof / (this.#wxx[best] as number));
      t = se > 0 ? bestExponent / se : Number.POSITIVE_INFINITY;
      if (t < MIN_T) {
        best = -1;
        bestSse = this.#wyy;
        bestExponent = 0;
        t = 0;
      }
    }
    const sst = this.#sumYY - (this.#sumY * this.#sumY) / Math.max(1, this.#count);
    const share = (sse: number, total: number) =>
      total > 1e-12 ? Math.max(0, 1 - sse / total) : 1;
    return {
      kneeIndex: best,
      knee: best === -1 ? Number.POSITIVE_INFINITY : (KNEES[best] as number),
      exponent: bestExponent,
      exponentT: t,
      rSquared: share(Math.max(0, bestSse), sst),
      concurrencyShare: best === -1 ? 0 : share(Math.max(0, bestSse), this.#wyy),
      sigma: Math.sqrt(Math.max(0, bestSse) / dof),
      count: this.#count,
    };
  }
}

/** Adds, for every knee of the grid, `max(0, logN − log knee)` into `sums` from `offset`. */
export function addConcurrencyTerms(sums: Float64Array, offset: number, logN: number): void {
  for (let k = 0; k < LOG_KNEES.length && (LOG_KNEES[k] as number) < logN; k++) {
    sums[offset + k] += logN - (LOG_KNEES[k] as number);
  }
}
