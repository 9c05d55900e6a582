import { checkNumber } from '../internal/validate.js';
import type { LimitAlgorithm, LimitDecision, Sample } from './LimitAlgorithm.js';

/**
 * A limit that never changes: the classic semaphore. The limiter skips RTT measurement
 * for it unless someone listens to `release`, which makes it the cheapest choice.
 *
 * @example
 * ```ts
 * const limiter = new Limiter({ algorithm: new FixedLimit(20) }); // same as { limit: 20 }
 * ```
 */
export class FixedLimit implements LimitAlgorithm {
  /** The fixed limit. */
  readonly limit: number;
  /** Always `fixed`, once a sample has been seen. */
  lastDecision?: LimitDecision;

  /**
   * @param limit - the limit, an integer ≥ 1.
   * @throws RangeError when `limit` is not an integer ≥ 1.
   */
  constructor(limit: number) {
    this.limit = checkNumber('limit', limit, 1, { min: 1, integer: true });
  }

  /** The highest limit: the fixed limit itself. */
  get maxLimit(): number {
    return this.limit;
  }

  /** Returns the fixed limit; the sample is ignored. */
  update(sample: Sample): number {
    this.lastDecision = { reason: 'fixed', rttMs: sample.rtt };
    return this.limit;
  }
}
