import { addConcurrencyTerms, KNEES } from './KneeRegression.js';

/** The most buckets kept: a longer trace gets wider buckets (two merged into one, as often as needed). */
export const MAX_BUCKETS = 4096;

const K = KNEES.length;

/**
 * A trace's calls summed per time bucket, in bounded memory: per bucket the calls that reached the
 * downstream and how many failed or were overloaded, and for the successes their count, the sum of
 * their log latencies and of their concurrency terms for every knee of the grid (so the base latency
 * can be computed for whichever knee the fit picks). Buckets start `bucketMs` wide from the first
 * call; when the trace needs more than {@link MAX_BUCKETS}, neighbours are merged pairwise and the
 * width doubles.
 */
export class TraceBuckets {
  readonly originMs: number;
  #widthMs: number;
  #used = 0;
  readonly #calls = new Float64Array(MAX_BUCKETS);
  readonly #failures = new Float64Array(MAX_BUCKETS);
  readonly #overloads = new Float64Array(MAX_BUCKETS);
  readonly #successes = new Float64Array(MAX_BUCKETS);
  readonly #sumY = new Float64Array(MAX_BUCKETS);
  readonly #sumH = new Float64Array(MAX_BUCKETS * K);

  constructor(originMs: number, bucketMs: number) {
    this.originMs = originMs;
    this.#widthMs = bucketMs;
  }

  /** The buckets' width in ms. */
  get widthMs(): number {
    return this.#widthMs;
  }

  /** Buckets in use. */
  get length(): number {
    return this.#used;
  }

  /** A call that reached the downstream (not `refused`), at `startMs`; for a success its log latency. */
  add(
    startMs: number,
    outcome: 'success' | 'failure' | 'overload',
    logLatency: number,
    logN: number,
  ): void {
    let i = Math.floor((startMs - this.originMs) / this.#widthMs);
    while (i >= MAX_BUCKETS) {
      this.#halve();
      i = Math.floor((startMs - this.originMs) / this.#widthMs);
    }
    if (i + 1 > this.#used) this.#used = i + 1;
    this.#calls[i]++;
    if (outcome === 'failure') this.#failures[i]++;
    else if (outcome === 'overload') this.#overloads[i]++;
    else {
      this.#successes[i]++;
      this.#sumY[i] += logLatency;
      addConcurrencyTerms(this.#sumH, i * K, logN);
    }
  }

  /** Marks the trace as reaching `startMs` (a refused call: no data, but the time is the trace's). */
  reach(startMs: number): void {
    let i = Math.floor((startMs - this.originMs) / this.#widthMs);
    while (i >= MAX_BUCKETS) {
      this.#halve();
      i = Math.floor((startMs - this.originMs) / this.#widthMs);
    }
    if (i + 1 > this.#used) this.#used = i + 1;
  }

  #halve(): void {
    const half = MAX_BUCKETS / 2;
    for (const series of [
      this.#calls,
      this.#failures,
      this.#overloads,
      this.#successes,
      this.#sumY,
    ]) {
      for (let j = 0; j < half; j++)
        series[j] = (series[2 * j] as number) + (series[2 * j + 1] as number);
      series.fill(0, half);
    }
    const h = this.#sumH;
    for (let j = 0; j < half; j++) {
      for (let k = 0; k < K; k++) {
        h[j * K + k] = (h[2 * j * K + k] as number) + (h[(2 * j + 1) * K + k] as number);
      }
    }
    h.fill(0, half * K);
    this.#widthMs *= 2;
    this.#used = Math.ceil(this.#used / 2);
  }

  /**
   * The base latency per bucket, ms, for the knee at `kneeIndex` (-1: none) and `exponent`: the
   * geometric mean of the bucket's successes with the concurrency factor taken out. `NaN` for a bucket
   * without successes.
   */
  baseMs(kneeIndex: number, exponent: number): Float64Array {
    const base = new Float64Array(this.#used);
    for (let i = 0; i < this.#used; i++) {
      const n = this.#successes[i] as number;
      const h = kneeIndex === -1 ? 0 : (this.#sumH[i * K + kneeIndex] as number);
      base[i] = n === 0 ? Number.NaN : Math.exp(((this.#sumY[i] as number) - exponent * h) / n);
    }
    return base;
  }

  /** The share of `failure` and of `overload` per bucket (`NaN` for a bucket with no calls). */
  rates(): { failure: Float64Array; overload: Float64Array } {
    const failure = new Float64Array(this.#used);
    const overload = new Float64Array(this.#used);
    for (let i = 0; i < this.#used; i++) {
      const calls = this.#calls[i] as number;
      failure[i] = calls === 0 ? Number.NaN : (this.#failures[i] as number) / calls;
      overload[i] = calls === 0 ? Number.NaN : (this.#overloads[i] as number) / calls;
    }
    return { failure, overload };
  }
}
