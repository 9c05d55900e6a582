import { checkKeys, checkLimits, checkNumber, clamp } from '../internal/validate.js';
import type { LimitDecision, LimitReason, Sample } from './LimitAlgorithm.js';
import { NO_LOAD_RTT_KEYS } from './noLoadRttOptions.js';
import { LATE_RTTS, ProbingLimit, type ProbingLimitOptions } from './ProbingLimit.js';

const KEYS = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'smoothing',
  'alpha',
  'beta',
  'threshold',
  ...NO_LOAD_RTT_KEYS,
] as const;

/** Options of {@link VegasLimit}. */
export interface VegasLimitOptions extends ProbingLimitOptions {
  /**
   * Weight of the new value: `limit = (1 − smoothing) × limit + smoothing × next`. 1 applies each
   * step at once (Netflix's default); lower values damp noisy RTTs.
   * @default 1
   */
  smoothing?: number;
  /**
   * The limit grows while the estimated queue is under `alpha × L10` requests (Netflix's 3: a few
   * requests queued at the downstream keep it busy without adding much latency). Must be in
   * `[threshold, beta]`.
   * @default 3 (fitted into `[threshold, beta]` when those are given)
   */
  alpha?: number;
  /** The limit falls while the estimated queue is over `beta × L10` requests (Netflix's 6). @default `max(6, alpha)` */
  beta?: number;
  /**
   * With an estimated queue at or under `threshold × L10` (no queue at all), growth is fast:
   * `beta × L10` per round instead of `L10` (Netflix's 1). Must be ≤ `alpha`.
   * @default `min(1, alpha)`
   */
  threshold?: number;
}

/**
 * `max(1, floor(log10 limit))`: how Vegas' thresholds and steps scale with the limit (not exported
 * from the package).
 */
export function log10Scale(limit: number): number {
  return Math.max(1, Math.floor(Math.log10(Math.max(1, limit))));
}

/**
 * TCP Vegas as a concurrency limit (after Netflix's VegasLimit, with TCP Vegas' own averaging).
 *
 * Per sample, with `L` the limit, `L10 = max(1, floor(log10 L))`, `base` the no-load RTT and `avg`
 * the round's average RTT (an exponential average over `min(samples seen, L)` samples, each RTT
 * counted at most as `8 × base`): `queue = ceil(L × (1 − base / avg))`, with the thresholds
 * `a = min(alpha·L10, max(2, L/4))` and `b = min(beta·L10, max(2, L/3))` (shares of the limit bound
 * them at small limits, so a pool of 4–20 does not keep half its permits queued), then
 * - dropped sample → `L − L10` (reason `drop`; a call reported late by the limiter counts the same,
 *   reason `late`);
 * - `queue > b`, or `avg ≥ 2 × base` (a standing queue of half the limit or more, whatever its
 *   size) → `L − max(L10, queue − beta·L10) / L` (reason `queueing`);
 * - `queue < a` → `L + step / L` (reason `increase`), where `step` is `beta·L10` when
 *   `queue ≤ min(threshold·L10, a)`, else `L10`; during slow start `step = max(L, step)` (doubling
 *   per round);
 * - otherwise unchanged (reason `steady`).
 * Growth is suppressed while `1.5 × inflight < L` (`2 ×` in slow start; reason `app_limited`; after a
 * whole round of it the limit decays toward 1.5× the peak in-flight used); falls still apply. The result is smoothed,
 * `L' = (1 − smoothing) × L + smoothing × next`, and clamped to `[minLimit, maxLimit]`.
 *
 * Why it differs from Netflix's version, which applies whole steps per sample: a sample reports the
 * load of one round ago, so per-sample steps move the limit by a whole round of steps before the
 * first answer arrives and it swings between half and twice the capacity. Here a round of `L`
 * samples moves it by one step (one step per RTT, as TCP Vegas does), and the averaged RTT keeps
 * sample noise out of the queue estimate. The baseline, the probe dips (reasons `probe`/`probe_end`),
 * slow start (and its re-arming after a collapse), the app-limited decay, late calls (`onLate`) and
 * applying the result come from {@link ProbingLimit}.
 *
 * @example
 * ```ts
 * const limiter = new Limiter({ algorithm: new VegasLimit({ initialLimit: 20, maxLimit: 200 }) });
 * ```
 */
export class VegasLimit extends ProbingLimit {
  #queue: number | undefined = undefined;
  readonly #smoothing: number;
  readonly #alpha: number;
  readonly #beta: number;
  readonly #threshold: number;
  #rttAvg = 0;
  #rttCount = 0;
  /**
   * The limit the per-limit values below were computed for: they change only when it moves (a
   * `Math.log10` and three divisions less per sample; the divisions were `update`'s hot spots).
   */
  #scaleOf = Number.NaN;
  #l10 = 1;
  /** `1 / max(1, L)`: a sample's share of a round's step. */
  #perSample = 1;
  /** The thresholds at this limit: `min(alpha·L10, max(2, L/4))` and `min(beta·L10, max(2, L/3))`. */
  #alphaAt = 0;
  #betaAt = 0;
  /** Growth is fast with an estimated queue at or under `min(threshold·L10, alphaAt)`. */
  #fastAt = 0;

  /**
   * @throws RangeError/TypeError naming the option, the allowed range and the value given; TypeError
   *   for an unknown option (with the nearest valid name).
   */
  constructor(options: VegasLimitOptions = {}) {
    checkKeys('VegasLimit', options, KEYS, 'vegas.');
    const bounds = checkLimits('vegas', options);
    const smoothing = checkNumber('vegas.smoothing', options.smoothing, 1, {
      min: 0,
      max: 1,
      minExclusive: true,
    });
    // A default fits the values given: threshold ≤ alpha ≤ beta.
    const alpha = checkNumber('vegas.alpha', options.alpha, Number.NaN, { min: 0 });
    const beta = checkNumber('vegas.beta', options.beta, Number.NaN, { min: 0 });
    const threshold = checkNumber('vegas.threshold', options.threshold, Number.NaN, { min: 0 });
    if (alpha > beta) {
      throw new RangeError(
        `limits: option "vegas.alpha" (${alpha}) must be ≤ "vegas.beta" (${beta})`,
      );
    }
    if (threshold > alpha) {
      throw new RangeError(
        `limits: option "vegas.threshold" (${threshold}) must be ≤ "vegas.alpha" (${alpha})`,
      );
    }
    if (threshold > beta) {
      throw new RangeError(
        `limits: option "vegas.threshold" (${threshold}) must be ≤ "vegas.beta" (${beta})`,
      );
    }
    super(bounds, options, 'vegas');
    this.#smoothing = smoothing;
    const lo = Number.isNaN(threshold) ? 0 : threshold;
    this.#alpha = Number.isNaN(alpha) ? clamp(3, lo, Number.isNaN(beta) ? Infinity : beta) : alpha;
    this.#beta = Number.isNaN(beta) ? Math.max(6, this.#alpha) : beta;
    this.#threshold = Number.isNaN(threshold) ? Math.min(1, this.#alpha) : threshold;
  }

  /** Feeds one sample; returns the new limit. */
  update(input: Sample): number {
    const sample = this.admit(input);
    if (sample === undefined) return this.limit;
    const L = this.estimate;
    if (L !== this.#scaleOf) this.#scale(L);
    const l10 = this.#l10;
    let next = L;
    let reason: LimitReason;
    let queue: number | undefined;
    if (sample.dropped) {
      next = this.dropTarget(L, sample.inflight);
      reason = 'drop';
    } else {
      const base = this.baselineRttMs;
      // TCP Vegas compares with the average RTT of the last round, not one sample: the round's
      // average (an EWMA over L samples) keeps RTT noise out of the queue estimate. A sample is
      // counted at most as twice late (2 × LATE_RTTS × base, a queue of 7/8 of the limit): a spike's
      // 60× RTTs would otherwise hold the average up for rounds after latency is back.
      const w = Math.min(++this.#rttCount, Math.max(1, L));
      this.#rttAvg += (Math.min(sample.rtt, 2 * LATE_RTTS * base) - this.#rttAvg) / w;
      if (this.probe !== 'none') {
        this.#queue = undefined;
        return this.hold(sample);
      }
      const avg = this.#rttAvg;
      // No queue estimate without a positive baseline and average (rtt 0 from a millisecond clock).
      queue = base < Infinity && avg > 0 ? Math.ceil(L * (1 - base / avg)) : 0;
      // Steps are per round: a sample carries 1/L of a step, so a round of L samples (one RTT,
      // the delay of the loop's own feedback) moves the limit by one step.
      const perSample = this.#perSample;
      // Small limits (a pool of 4–20): the thresholds are also bounded by shares of the limit, and a
      // queue of half the limit (avg ≥ 2 × base) is never steady.
      if (queue > this.#betaAt || avg >= 2 * base) {
        next = L - Math.max(l10, queue - this.#beta * l10) * perSample;
        reason = 'queueing';
        this.endSlowStart(sample.startTime, true);
      } else if (queue < this.#alphaAt) {
        // Slow start doubles per round; otherwise + beta·L10 with no queue, + L10 with a small one.
        const step = queue <= this.#fastAt ? this.#beta * l10 : l10;
        next = L + (this.slowStart ? Math.max(L, step) : step) * perSample;
        reason = 'increase';
      } else {
        reason = 'steady';
        this.endSlowStart(sample.startTime, false);
      }
    }
    this.#queue = queue;
    return this.apply(reason, next, sample);
  }

  /** Computes the per-limit values for the limit `L`. */
  #scale(L: number): void {
    this.#scaleOf = L;
    const l10 = log10Scale(L);
    this.#l10 = l10;
    this.#perSample = 1 / Math.max(1, L);
    this.#alphaAt = Math.min(this.#alpha * l10, Math.max(2, L / 4));
    this.#betaAt = Math.min(this.#beta * l10, Math.max(2, L / 3));
    this.#fastAt = Math.min(this.#threshold * l10, this.#alphaAt);
  }

  protected dropTarget(L: number, _inflight: number): number {
    return L - log10Scale(L);
  }

  protected smooth(L: number, next: number): number {
    return (1 - this.#smoothing) * L + this.#smoothing * next;
  }

  protected explain(d: LimitDecision): void {
    if (this.#queue !== undefined) d.queue = this.#queue;
  }
}
