import * as hdr from 'hdr-histogram-js';

/** Latency percentiles in ms. */
export interface LatencySummary {
  /** Calls recorded in the window. */
  count: number;
  /** Median latency in ms. */
  p50: number;
  /** 90th percentile in ms. */
  p90: number;
  /** 99th percentile in ms. */
  p99: number;
  /** Slowest call in the window, in ms (exact). */
  max: number;
}

/** Calls recorded one by one in each slice before recording is sampled. */
const SAMPLE_AFTER = 1024;
/**
 * Past SAMPLE_AFTER calls in a slice, one call in this many is recorded (with this weight): at 10⁵
 * calls/s that is still over 6,000 samples a second. A histogram update costs about 100 ns (a `log2`
 * and a `pow` in hdr-histogram-js), a fifth of a guarded call in bench/breaker-overhead.mjs's
 * sequential rows; sampled, recording costs about 15 ns.
 */
const SAMPLE_EVERY = 16;

/** Slowest latency tracked: 10 minutes, in µs. */
const HIGHEST_US = 600_000_000;

function histogram(): hdr.Histogram {
  return hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_US,
    numberOfSignificantValueDigits: 2,
    useWebAssembly: false,
  });
}

/**
 * A rolling latency window: `buckets` HDR histograms (microsecond precision, 2 significant digits,
 * about 14 KB each) that rotate every `windowMs / buckets` ms, so memory is bounded whatever the call
 * rate, and percentiles cost a merge of a few histograms instead of a sort of every sample. Rotation
 * happens lazily on record and read: no timer. Past 1,024 calls in a slice, one call in 16 is recorded
 * with weight 16 (the maximum stays exact).
 */
export class LatencyWindow {
  readonly #buckets: hdr.Histogram[];
  readonly #sliceMs: number;
  readonly #now: () => number;
  #current = 0;
  #sliceStart: number;
  /** Calls seen in the current slice (recorded or skipped). */
  #seen = 0;
  /** The slowest call of the window's slices, kept exactly even when recording is sampled. */
  readonly #maxUs: number[];

  constructor(windowMs: number, buckets: number, now: () => number) {
    this.#buckets = Array.from({ length: buckets }, histogram);
    this.#maxUs = Array.from({ length: buckets }, () => 0);
    this.#sliceMs = windowMs / buckets;
    this.#now = now;
    this.#sliceStart = now();
  }

  /**
   * Records one call's latency in ms.
   * @param now - the current clock time, if the caller has it (saves a clock read).
   */
  record(ms: number, now = this.#now()): void {
    this.#rotate(now);
    const us = Math.min(HIGHEST_US, Math.max(1, Math.round(ms * 1000)));
    if (us > (this.#maxUs[this.#current] as number)) this.#maxUs[this.#current] = us;
    // Every call is recorded until a slice holds SAMPLE_AFTER calls; past that (high call rates)
    // one call in SAMPLE_EVERY is recorded with that weight: percentiles stay unbiased, the max is
    // kept exactly, and a busy guard does not pay a histogram update on every call.
    const seen = ++this.#seen;
    if (seen <= SAMPLE_AFTER) {
      (this.#buckets[this.#current] as hdr.Histogram).recordValue(us);
    } else if (seen % SAMPLE_EVERY === 0) {
      (this.#buckets[this.#current] as hdr.Histogram).recordValueWithCount(us, SAMPLE_EVERY);
    }
  }

  /** Percentiles over the window, in ms (all 0 when empty). */
  summary(): LatencySummary {
    this.#rotate(this.#now());
    const merged = histogram();
    for (const b of this.#buckets) merged.add(b);
    const ms = (us: number) => us / 1000;
    return {
      count: merged.totalCount,
      p50: ms(merged.getValueAtPercentile(50)),
      p90: ms(merged.getValueAtPercentile(90)),
      p99: ms(merged.getValueAtPercentile(99)),
      max: ms(Math.max(...this.#maxUs)),
    };
  }

  #rotate(now: number): void {
    let slices = Math.floor((now - this.#sliceStart) / this.#sliceMs);
    if (slices <= 0) return;
    this.#sliceStart += slices * this.#sliceMs;
    slices = Math.min(slices, this.#buckets.length);
    for (let i = 0; i < slices; i++) {
      this.#current = (this.#current + 1) % this.#buckets.length;
      (this.#buckets[this.#current] as hdr.Histogram).reset();
      this.#maxUs[this.#current] = 0;
    }
    this.#seen = 0;
  }
}
