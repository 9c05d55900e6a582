import { checkNumber } from '../internal/validate.js';

/** Options of {@link CostEstimator}. */
export interface CostEstimatorOptions {
  /** Weight of a new observation in the exponential average, in (0, 1]. @default 0.2 */
  factor?: number;
  /** Lowest estimate (also the estimate of a kind never observed, unless `initial` says otherwise). @default 1 */
  floor?: number;
  /** Highest estimate; keeps one pathological request from skewing a kind. @default 60000 */
  ceiling?: number;
  /** Estimate of a kind before its first observation. @default floor */
  initial?: number;
  /**
   * Estimate per input byte: the average is kept of `actual / bytes`, and an estimate is that times
   * the request's bytes (for work that scales with its input, e.g. parsing or uploads).
   * @default false
   */
  perByte?: boolean;
  /** Kinds remembered; the least recently used is forgotten beyond it. @default 1000 */
  maxKinds?: number;
}

interface KindStats {
  average: number;
  ratio: number;
  seen: number;
}

/**
 * Estimates what a request will cost (e.g. milliseconds of database time) per kind of request, from
 * what requests of that kind actually cost: an exponential moving average, clamped to
 * `[floor, ceiling]`, optionally per input byte. Fair queueing charges tenants these estimates, so a
 * cost is decided by the server from measurements, never taken from what a caller claims.
 *
 * @example
 * ```ts
 * const costs = new CostEstimator({ floor: 1, ceiling: 5000 });
 * const limiter = new Limiter({ limit: 8, maxQueued: 100, fairness: { quantum: 50, estimator: costs } });
 * await limiter.run(query, { tenant: accountId, kind: 'search' }); // observed into `costs` when it ends
 * costs.ratio('search'); // actual / estimated, ≈ 1 when estimates are good
 * ```
 */
export class CostEstimator {
  readonly #factor: number;
  readonly #floor: number;
  readonly #initial: number;
  readonly #perByte: boolean;
  readonly #maxKinds: number;
  readonly #kinds = new Map<string, KindStats>();
  /** Highest estimate. */
  readonly ceiling: number;

  /** @throws RangeError/TypeError naming the option, the allowed range and the value given. */
  constructor(options: CostEstimatorOptions = {}) {
    this.#factor = checkNumber('costs.factor', options.factor, 0.2, {
      min: 0,
      max: 1,
      minExclusive: true,
    });
    this.#floor = checkNumber('costs.floor', options.floor, 1, { min: 0 });
    this.ceiling = checkNumber('costs.ceiling', options.ceiling, 60000, { min: this.#floor });
    this.#initial = checkNumber('costs.initial', options.initial, this.#floor, {
      min: this.#floor,
      max: this.ceiling,
    });
    this.#perByte = options.perByte ?? false;
    this.#maxKinds = checkNumber('costs.maxKinds', options.maxKinds, 1000, {
      min: 1,
      integer: true,
    });
  }

  /** Kinds currently remembered. */
  get kinds(): number {
    return this.#kinds.size;
  }

  /**
   * The estimated cost of a request of `kind`, clamped to `[floor, ceiling]`.
   * @param bytes - the request's input size, used when `perByte` is on.
   */
  estimate(kind: string, bytes = 0): number {
    const stats = this.#kinds.get(kind);
    if (stats === undefined) return this.#initial;
    const raw = this.#perByte ? stats.average * Math.max(1, bytes) : stats.average;
    return Math.min(this.ceiling, Math.max(this.#floor, raw));
  }

  /**
   * Records what a request of `kind` actually cost.
   * @param actual - the measured cost (same unit as the estimates), ≥ 0.
   * @param bytes - the request's input size, used when `perByte` is on.
   */
  observe(kind: string, actual: number, bytes = 0): void {
    checkNumber('actual', actual, 0, { min: 0 });
    const estimate = this.estimate(kind, bytes);
    const value = this.#perByte ? actual / Math.max(1, bytes) : actual;
    let stats = this.#kinds.get(kind);
    if (stats === undefined) {
      stats = { average: value, ratio: estimate > 0 ? actual / estimate : 1, seen: 1 };
      if (this.#kinds.size >= this.#maxKinds) {
        const oldest = this.#kinds.keys().next().value as string;
        this.#kinds.delete(oldest);
      }
    } else {
      this.#kinds.delete(kind); // re-inserted below: the Map's order is least recently used first
      stats.average += (value - stats.average) * this.#factor;
      stats.ratio += ((estimate > 0 ? actual / estimate : 1) - stats.ratio) * this.#factor;
      stats.seen++;
    }
    this.#kinds.set(kind, stats);
  }

  /**
   * The average of actual / estimated cost for `kind` (1 = estimates are right, 2 = requests cost twice
   * what was charged), or `undefined` for a kind never observed. Chart it: a ratio far from 1 means
   * fairness is being decided on wrong numbers.
   */
  ratio(kind: string): number | undefined {
    return this.#kinds.get(kind)?.ratio;
  }
}
