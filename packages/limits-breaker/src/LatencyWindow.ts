import * as hdr from 'hdr-histogram-js';

/** Latency percentiles in ms. */
export interface LatencySummary {
  /** Calls recorded in the window. */
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

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
 * happens lazily on record and read: no timer.
 */
export class LatencyWindow {
  readonly #buckets: hdr.Histogram[];
  readonly #sliceMs: number;
  readonly #now: () => number;
  #current = 0;
  #sliceStart: number;

  constructor(windowMs: number, buckets: number, now: () => number) {
    this.#buckets = Array.from({ length: buckets }, histogram);
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
    (this.#buckets[this.#current] as hdr.Histogram).recordValue(us);
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
      max: ms(merged.maxValue),
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
    }
  }
}
