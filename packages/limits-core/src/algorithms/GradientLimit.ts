import { checkFunction, checkKeys, checkLimits, checkNumber, clamp } from '../internal/validate.js';
import type { LimitDecision, LimitReason, Sample } from './LimitAlgorithm.js';
import { NO_LOAD_RTT_KEYS } from './noLoadRttOptions.js';
import { ProbingLimit, type ProbingLimitOptions } from './ProbingLimit.js';

const KEYS = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'tolerance',
  'queueAllowance',
  'smoothing',
  'shortWindow',
  'longWindow',
  'warmupSamples',
  'longCap',
  ...NO_LOAD_RTT_KEYS,
] as const;

/** Options of {@link GradientLimit}. */
export interface GradientLimitOptions extends ProbingLimitOptions {
  /**
   * How much queueing delay is tolerated before the limit falls: the gradient is
   * `tolerance × longRtt / shortRtt`. Netflix publishes 1.5, which settles near 1.5 × capacity;
   * 1.1 keeps the limit within ≈ 25 % of capacity and still ignores ordinary jitter. ≥ 1.
   * @default 1.1
   */
  tolerance?: number;
  /**
   * Requests allowed to queue at the downstream, added on every update (the growth term):
   * a number ≥ 0 or a function of the current limit returning one (a function that returns anything
   * else makes `update` throw a RangeError, which the limiter reports on its `error` event).
   * At equilibrium `limit ≈ tolerance × capacity + allowance`.
   * @default 4
   */
  queueAllowance?: number | ((limit: number) => number);
  /** Weight of the new value: `limit = (1 − smoothing) × limit + smoothing × next`. @default 0.2 */
  smoothing?: number;
  /** Samples in the short RTT average (exponential). 1 = the sample itself. @default `min(5, longWindow)` */
  shortWindow?: number;
  /** Samples in the long RTT average (exponential), Netflix's 600. @default `max(600, shortWindow)` */
  longWindow?: number;
  /** Samples before the first decision (the averages warm up). @default 10 */
  warmupSamples?: number;
  /**
   * The long average is capped at `longCap × baseline`, where the baseline is the probe-measured
   * no-load RTT: under sustained load the long average would otherwise follow the queueing delay up
   * and the limit would climb to `maxLimit`.
   * @default 1
   */
  longCap?: number;
}

/** The range of a `queueAllowance` function's answer (kept here: checked on every update). */
const NON_NEGATIVE = { min: 0 };

/** Lowest gradient: a sample can at most cut the level it was admitted at to this share. */
const MIN_GRADIENT = 0.25;

/** Exponential moving average that averages plainly over its first `window` values. */
class Ewma {
  value = 0;
  count = 0;
  readonly #window: number;
  constructor(window: number) {
    this.#window = window;
  }
  /** Starts over from `x` alone (its next values are averaged plainly again). */
  restart(x: number): number {
    this.count = 0;
    this.value = 0;
    return this.add(x);
  }

  add(x: number): number {
    this.count++;
    const w = Math.min(this.count, this.#window);
    this.value += (x - this.value) / w;
    return this.value;
  }
}

/**
 * Gradient2-style limit: compares a short and a long RTT average (after Netflix's Gradient2Limit).
 *
 * Per sample, with `L` the limit and `n` the in-flight the sample was admitted under:
 * `gradient = clamp(tolerance × long / short, 0.25, tolerance)`, `next = n × gradient + allowance`;
 * a gradient ≥ 1 (no queueing beyond the tolerance) never lowers the limit (`next = max(next, L)`),
 * and during slow start it aims at `max(next, 2n)`; a gradient < 1 never raises it
 * (`next = min(next, L)`). Then `L = L + smoothing × (next − L)`, clamped to `[minLimit, maxLimit]`
 * after smoothing (so `maxLimit` is reached). A dropped sample uses the lowest gradient:
 * `next = min(L, min(n, L) × 0.25 + allowance)`; a call reported late by the limiter counts the same
 * (reason `late`).
 *
 * Beyond the published version:
 * - the target comes from `n`, not `L`: a sample reports the load it was admitted under, so samples
 *   from an older limit cannot push the limit past what they measured (Gradient2's per-sample
 *   `L × gradient` swings around the capacity);
 * - a dropped sample counts as the worst gradient instead of being ignored;
 * - the long average is capped at `longCap ×` a probe-measured no-load RTT ({@link Baseline}), so it
 *   cannot drift up under sustained load; it is also pulled down (×0.95) when it exceeds twice the short;
 * - after late calls (`onLate`), an answer within `tolerance ×` the baseline while the short average
 *   reads the lowest gradient restarts that average: after a latency spike the gradient is back at
 *   once, not twenty samples later;
 * - app-limited (`1.5 × inflight < limit`, `2 ×` in slow start) stops growth only: falls still apply;
 * - a `steady` sample (it aims under the limit without queueing: the caller does not use it) pauses
 *   the initial slow start until a growing sample at full use resumes it.
 *
 * The baseline, the probe dips, slow start (and its re-arming after a collapse), the app-limited
 * decay, late calls (`onLate`) and applying the result come from {@link ProbingLimit}.
 *
 * @example
 * ```ts
 * const limiter = new Limiter({ algorithm: new GradientLimit({ maxLimit: 200 }) });
 * ```
 */
export class GradientLimit extends ProbingLimit {
  #gradient: number | undefined = undefined;
  #longRtt = 0;
  /** Late calls were reported since the short average last restarted (see `update`). */
  #lateSeen = false;
  /** The baseline at the previous sample (a rise since is a probe relearning a higher no-load RTT). */
  #lastBase = Infinity;
  readonly #tolerance: number;
  readonly #allowance: (limit: number) => number;
  readonly #smoothing: number;
  readonly #warmup: number;
  readonly #longCap: number;
  readonly #short: Ewma;
  readonly #long: Ewma;

  /**
   * @throws RangeError/TypeError naming the option, the allowed range and the value given; TypeError
   *   for an unknown option (with the nearest valid name).
   */
  constructor(options: GradientLimitOptions = {}) {
    checkKeys('GradientLimit', options, KEYS, 'gradient.');
    const bounds = checkLimits('gradient', options);
    const tolerance = checkNumber('gradient.tolerance', options.tolerance, 1.1, { min: 1 });
    const qa = options.queueAllowance;
    let allowance: (limit: number) => number;
    if (typeof qa === 'function') {
      const fn = checkFunction<(l: number) => number>('gradient.queueAllowance', qa) as (
        l: number,
      ) => number;
      allowance = (l) => checkNumber('gradient.queueAllowance(limit)', fn(l), 0, NON_NEGATIVE);
    } else {
      const n = checkNumber('gradient.queueAllowance', qa, 4, { min: 0 });
      allowance = () => n;
    }
    const smoothing = checkNumber('gradient.smoothing', options.smoothing, 0.2, {
      min: 0,
      max: 1,
      minExclusive: true,
    });
    const whole = { min: 1, integer: true };
    const short = checkNumber('gradient.shortWindow', options.shortWindow, Number.NaN, whole);
    const long = checkNumber('gradient.longWindow', options.longWindow, Number.NaN, whole);
    if (short > long) {
      throw new RangeError(
        `limits: option "gradient.shortWindow" (${short}) must be ≤ "gradient.longWindow" (${long})`,
      );
    }
    // A default fits the value given.
    const shortWindow = Number.isNaN(short) ? Math.min(5, Number.isNaN(long) ? 5 : long) : short;
    const longWindow = Number.isNaN(long) ? Math.max(600, shortWindow) : long;
    const warmup = checkNumber('gradient.warmupSamples', options.warmupSamples, 10, {
      min: 0,
      integer: true,
    });
    const longCap = checkNumber('gradient.longCap', options.longCap, 1, { min: 1 });
    super(bounds, options, 'gradient', Math.min(1.25, Math.max(1.1, tolerance)));
    this.#tolerance = tolerance;
    this.#allowance = allowance;
    this.#smoothing = smoothing;
    this.#warmup = warmup;
    this.#longCap = longCap;
    this.#short = new Ewma(shortWindow);
    this.#long = new Ewma(longWindow);
  }

  /** Feeds one sample; returns the new limit. */
  update(input: Sample): number {
    const sample = this.admit(input);
    if (sample === undefined) return this.limit;
    const L = this.estimate;
    // The concurrency this sample was admitted under: the level its RTT speaks for.
    const n = Math.min(Math.max(1, sample.inflight), this.maxLimit);
    let reason: LimitReason;
    let gradient = MIN_GRADIENT;
    let long = this.#long.value;
    let next: number;
    if (sample.dropped) {
      reason = 'drop';
      next = this.dropTarget(L, n);
    } else {
      let short = this.#short.add(sample.rtt);
      long = this.#long.add(sample.rtt);
      // An answer on time after late calls (within twice the baseline: the jitter of a healthy
      // downstream reaches past the tolerance), while the short average reads the lowest gradient
      // (a spike's RTTs): the slowdown is over, and the average starts over from it instead of
      // holding the gradient at its floor for about 20 more samples (with the spike's calls still
      // holding most permits, those come one at a time). Only after late calls: a queue that builds
      // (or a baseline a probe just lowered) is not a slowdown that ended.
      const base = this.baselineRttMs;
      if (
        this.#lateSeen &&
        sample.rtt <= 2 * base &&
        short * MIN_GRADIENT >= this.#tolerance * base
      ) {
        this.#lateSeen = false;
        short = this.#short.restart(sample.rtt);
      }
      // A probe raised the baseline (the no-load RTT moved up for good): the long average, a lag of
      // hundreds of samples behind it, starts from it (at a limit of a few calls of 500 ms after a
      // 20 ms downstream, about a minute of the gradient's floor otherwise).
      if (base > this.#lastBase && long < base) long = this.#long.value = base;
      this.#lastBase = base;
      if (long > 2 * short) long = this.#long.value = long * 0.95;
      long = Math.min(long, this.#longCap * base);
      this.#longRtt = long;
      if (this.probe !== 'none' || this.#long.count <= this.#warmup) {
        this.#gradient = undefined;
        return this.hold(sample, this.probe !== 'none' ? undefined : 'warmup');
      }
      // With a short average of 0 (rtt 0 from a millisecond clock) there is no sign of queueing.
      gradient =
        short > 0
          ? clamp((this.#tolerance * long) / short, MIN_GRADIENT, this.#tolerance)
          : this.#tolerance;
      next = n * gradient + this.#allowance(n);
      if (gradient >= 1 && this.slowStart) next = Math.max(next, 2 * n);
      // Without queueing beyond the tolerance a sample never lowers the limit (light traffic is
      // no evidence of congestion); with it, a sample never raises the limit (one admitted under an
      // older, higher in-flight would aim above the limit while latency is many times the baseline).
      if (gradient >= 1 ? next < L : next > L) next = L;
      reason = next > L ? 'increase' : next < L ? 'queueing' : 'steady';
      // Queueing ends slow start; a sample that aims under the limit without queueing (`steady`:
      // the caller does not use it) pauses the initial one until the caller uses the limit again.
      if (reason === 'queueing') this.endSlowStart(sample.startTime, true);
      else if (reason === 'steady') this.pauseSlowStart(sample.startTime);
    }
    this.#gradient = gradient;
    this.#longRtt = long;
    return this.apply(reason, next, sample);
  }

  /**
   * Late calls (see {@link ProbingLimit.onLate}); they also arm the restart of the short average on
   * the first answer on time after them.
   */
  override onLate(count: number, inflight: number): void {
    if (count >= 1) this.#lateSeen = true;
    super.onLate(count, inflight);
  }

  protected smooth(L: number, next: number): number {
    return L + this.#smoothing * (next - L);
  }

  protected dropTarget(L: number, inflight: number): number {
    // A drop never raises the limit (the allowance alone can exceed a small limit).
    return Math.min(L, Math.min(Math.max(1, inflight), L) * MIN_GRADIENT + this.#allowance(L));
  }

  protected explain(d: LimitDecision): void {
    d.longRttMs = this.#longRtt;
    if (this.#gradient !== undefined) d.gradient = this.#gradient;
  }
}
