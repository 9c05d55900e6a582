import { checkKeys, checkNumber, formatValue } from '../internal/validate.js';
import { checkAlgorithm } from './checkAlgorithm.js';
import type { LimitAlgorithm, LimitDecision, Sample } from './LimitAlgorithm.js';
import { usableSample } from './usableSample.js';

const KEYS = ['windowMs', 'maxSamples', 'minSamples', 'aggregate'] as const;

/** Options of {@link WindowedLimit}. */
export interface WindowedLimitOptions {
  /**
   * A window ends when its samples span this many ms (by end time: `startTime + rtt`); the next
   * one starts empty. Netflix's WindowedLimit uses 1 s windows.
   * @default 1000
   */
  windowMs?: number;
  /** A window also ends once it holds this many samples, an integer ≥ 1. @default `max(100, minSamples)` */
  maxSamples?: number;
  /**
   * Until a window holds this many samples, the aggregate of the last window that did is used
   * (each sample's own RTT before any did), an integer in `[1, maxSamples]`.
   * @default `min(10, maxSamples)`
   */
  minSamples?: number;
  /**
   * The aggregate RTT handed to the wrapped algorithm: a percentile in (0, 1] (0.99 = p99), or
   * `'average'`. A tail percentile reacts to queueing that an average hides.
   * @default 'average'
   */
  aggregate?: number | 'average';
}

/**
 * Smooths the RTTs a wrapped algorithm hears: each sample is handed on at once, with its own start,
 * in-flight count and drop, but with the aggregate RTT of the window it falls in (the average, or a
 * percentile: a tail percentile reacts to queueing that an average hides), over the window's samples
 * so far; while a window is younger than `minSamples`, over the last window that reached it.
 *
 * Each sample still reaches the wrapped algorithm when it ends: its rules count in samples and judge
 * a sample against the limit it was admitted under (Vegas and AIMD step once per round of `limit`
 * samples, a probe wants samples admitted under its dip, the app-limited rule compares a sample's
 * in-flight count with the limit), and holding a window's samples back would slow each of them by
 * the window and have them judge a limit that moved since.
 *
 * @example
 * ```ts
 * const limit = new WindowedLimit(new VegasLimit(), { windowMs: 500, aggregate: 0.9 });
 * ```
 */
export class WindowedLimit implements LimitAlgorithm {
  /** The wrapped algorithm. */
  readonly delegate: LimitAlgorithm;
  readonly #windowMs: number;
  readonly #maxSamples: number;
  readonly #minSamples: number;
  readonly #percentile: number | undefined;
  /** The current window's RTTs, sorted (for a percentile), and their sum (for the average). */
  readonly #sorted: number[] = [];
  #sum = 0;
  /** End time of the window's first sample. */
  #firstEnd = 0;
  /** The aggregate of the last window that reached `minSamples` (NaN: none yet). */
  #last = Number.NaN;

  /**
   * @param delegate - the algorithm fed the samples with their window's aggregate RTT.
   * @throws RangeError/TypeError naming the option, the allowed range and the value given; TypeError
   *   for an unknown option (with the nearest valid name).
   */
  constructor(delegate: LimitAlgorithm, options: WindowedLimitOptions = {}) {
    this.delegate = checkAlgorithm('windowed.delegate', delegate);
    checkKeys('WindowedLimit', options, KEYS, 'windowed.');
    this.#windowMs = checkNumber('windowed.windowMs', options.windowMs, 1000, {
      min: 0,
      minExclusive: true,
      allowInfinity: true,
    });
    const whole = { min: 1, integer: true };
    const max = checkNumber('windowed.maxSamples', options.maxSamples, Number.NaN, whole);
    const min = checkNumber('windowed.minSamples', options.minSamples, Number.NaN, whole);
    if (min > max) {
      throw new RangeError(
        `limits: option "windowed.minSamples" must be an integer in [1, ${max}] (≤ "windowed.maxSamples"), got ${min}`,
      );
    }
    // A default fits the value given.
    this.#maxSamples = Number.isNaN(max) ? Math.max(100, Number.isNaN(min) ? 0 : min) : max;
    this.#minSamples = Number.isNaN(min) ? Math.min(10, this.#maxSamples) : min;
    const agg = options.aggregate;
    if (agg === undefined || agg === 'average') this.#percentile = undefined;
    else if (typeof agg === 'number') {
      this.#percentile = checkNumber('windowed.aggregate', agg, 0.5, {
        min: 0,
        max: 1,
        minExclusive: true,
      });
    } else {
      throw new TypeError(
        `limits: option "windowed.aggregate" must be "average" or a number in (0, 1], got ${formatValue(agg)}`,
      );
    }
  }

  /** The wrapped algorithm's limit. */
  get limit(): number {
    return this.delegate.limit;
  }

  /** The wrapped algorithm's highest limit, if it has one. */
  get maxLimit(): number | undefined {
    return this.delegate.maxLimit;
  }

  /** The wrapped algorithm's last decision. */
  get lastDecision(): LimitDecision | undefined {
    return this.delegate.lastDecision;
  }

  /** The wrapped algorithm's `lateAfterMs` (`undefined` when it has none: no call is ever late). */
  get lateAfterMs(): number | undefined {
    return this.delegate.lateAfterMs;
  }

  /** Late calls go straight to the wrapped algorithm (not through the window), if it takes them. */
  onLate(count: number, inflight: number): void {
    this.delegate.onLate?.(count, inflight);
  }

  /** Adds the sample to its window and feeds it to the delegate with the window's aggregate RTT. */
  update(input: Sample): number {
    const sample = usableSample(input);
    if (sample === undefined) return this.delegate.limit;
    const end = sample.startTime + sample.rtt;
    const sorted = this.#sorted;
    if (sorted.length >= this.#maxSamples || end - this.#firstEnd >= this.#windowMs) {
      sorted.length = 0;
      this.#sum = 0;
    }
    if (sorted.length === 0) this.#firstEnd = end;
    this.#insert(sample.rtt);
    let rtt = sample.rtt;
    if (sorted.length >= this.#minSamples) {
      rtt = this.#aggregate();
      this.#last = rtt;
    } else if (!Number.isNaN(this.#last)) {
      rtt = this.#last;
    }
    return this.delegate.update({
      startTime: sample.startTime,
      rtt,
      inflight: sample.inflight,
      dropped: sample.dropped,
    });
  }

  /** Inserts `rtt` into the window's sorted RTTs. */
  #insert(rtt: number): void {
    const sorted = this.#sorted;
    this.#sum += rtt;
    let i = sorted.length;
    sorted.push(rtt);
    while (i > 0 && (sorted[i - 1] as number) > rtt) {
      sorted[i] = sorted[i - 1] as number;
      i--;
    }
    sorted[i] = rtt;
  }

  #aggregate(): number {
    const n = this.#sorted.length;
    if (this.#percentile === undefined) return this.#sum / n;
    return this.#sorted[Math.min(n - 1, Math.ceil(this.#percentile * n) - 1)] as number;
  }
}
