import { checkKeys, checkNumber, formatValue } from '../internal/validate.js';
import { checkAlgorithm } from './checkAlgorithm.js';
import type { LimitAlgorithm, LimitDecision, Sample } from './LimitAlgorithm.js';
import { usableSample } from './usableSample.js';

const KEYS = ['windowMs', 'maxSamples', 'minSamples', 'aggregate'] as const;

/** Options of {@link WindowedLimit}. */
export interface WindowedLimitOptions {
  /**
   * A window closes when its samples span this many ms (by end time: `startTime + rtt`).
   * Netflix's WindowedLimit closes windows after 1 s.
   * @default 1000
   */
  windowMs?: number;
  /** A window also closes once it holds this many samples, an integer ≥ 1. @default `max(100, minSamples)` */
  maxSamples?: number;
  /**
   * A closed window with fewer samples is skipped (too little data to judge), an integer in
   * `[1, maxSamples]`.
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
 * Feeds the wrapped algorithm one aggregate sample per window of samples instead of every sample:
 * smooths noisy RTTs and cuts the algorithm's work at high call rates.
 *
 * The aggregate sample has the window's earliest `startTime`, the aggregate RTT, the largest
 * `inflight`, and `dropped` set if any sample in the window was dropped.
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
  readonly #rtts: number[] = [];
  #start = Infinity;
  #firstEnd = 0;
  #sum = 0;
  #maxInflight = 0;
  #dropped = false;

  /**
   * @param delegate - the algorithm fed one sample per window.
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

  /** Adds the sample to the window; feeds the delegate when the window closes. */
  update(input: Sample): number {
    const sample = usableSample(input);
    if (sample === undefined) return this.delegate.limit;
    const end = sample.startTime + sample.rtt;
    if (this.#rtts.length === 0) this.#firstEnd = end;
    this.#rtts.push(sample.rtt);
    this.#sum += sample.rtt;
    if (sample.startTime < this.#start) this.#start = sample.startTime;
    if (sample.inflight > this.#maxInflight) this.#maxInflight = sample.inflight;
    if (sample.dropped) this.#dropped = true;
    const n = this.#rtts.length;
    if (n < this.#maxSamples && end - this.#firstEnd < this.#windowMs) return this.delegate.limit;
    let result = this.delegate.limit;
    if (n >= this.#minSamples) {
      result = this.delegate.update({
        startTime: this.#start,
        rtt: this.#aggregate(),
        inflight: this.#maxInflight,
        dropped: this.#dropped,
      });
    }
    this.#rtts.length = 0;
    this.#sum = 0;
    this.#start = Infinity;
    this.#maxInflight = 0;
    this.#dropped = false;
    return result;
  }

  #aggregate(): number {
    const n = this.#rtts.length;
    if (this.#percentile === undefined) return this.#sum / n;
    this.#rtts.sort((a, b) => a - b);
    return this.#rtts[Math.min(n - 1, Math.ceil(this.#percentile * n) - 1)] as number;
  }
}
