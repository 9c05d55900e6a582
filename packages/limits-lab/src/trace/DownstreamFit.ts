import type { TraceOutcome } from './TraceRecord.js';

/** A span of a trace where the base latency rose above 3 × its median. */
export interface LatencySpike {
  /** Its start, in the trace's ms. */
  fromMs: number;
  /** Its end (exclusive), in the trace's ms. */
  toMs: number;
  /** The highest base latency in it, ms. */
  peakMs: number;
}

/**
 * The downstream {@link fitDownstream} fitted to a trace:
 * `latency(t, n) = base(t) × max(1, n / knee)^exponent`, jittered, with outcome rates per time bucket.
 */
export interface DownstreamFit {
  /** The first bucket's start, in the trace's ms (the first record's `startMs`, down to a multiple of 250). */
  originMs: number;
  /** Bucket width, ms: 250, doubled as often as needed to keep at most 4,096 buckets. */
  bucketMs: number;
  /**
   * Per bucket, the latency at a concurrency ≤ knee, ms: the geometric mean of the bucket's
   * successful calls with the concurrency factor taken out; a bucket without one repeats the last.
   */
  baseMs: readonly number[];
  /** Per bucket, the share of calls reaching the downstream that ended `failure` (carried forward). */
  failureRate: readonly number[];
  /** Per bucket, the share that ended `overload` (carried forward). */
  overloadRate: readonly number[];
  /** The concurrency above which latency grows, calls in flight; `Infinity` when it does not grow. */
  knee: number;
  /** How fast latency grows beyond the knee (0 when there is none). */
  exponent: number;
  /** The exponent's t statistic (a knee is kept only at 4 or more; 0 when none). */
  exponentT: number;
  /** The jitter: standard deviation of log latency around the model. */
  sigma: number;
  /** Share of the variance of log latency the model explains (time buckets and concurrency). */
  rSquared: number;
  /** Share of the variance of log latency within a time bucket that concurrency explains. */
  concurrencyShare: number;
  /** Spans where the base latency rose above 3 × its median. */
  spikes: LatencySpike[];
  /** The median base latency, ms, over the buckets with successful calls. */
  medianBaseMs: number;
  /** The most calls in flight at once on the downstream (`refused` calls not counted). */
  peakConcurrency: number;
  /** Records read, by outcome. */
  records: Record<TraceOutcome, number>;
}
