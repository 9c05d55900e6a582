import { clamp } from '../internal/validate.js';
import type { LimitAlgorithm, LimitDecision, LimitReason, Sample } from './LimitAlgorithm.js';
import type { NoLoadRtt, NoLoadRttOptions, ProbeState } from './NoLoadRtt.js';
import { SlowStart } from './SlowStart.js';
import { usableSample } from './usableSample.js';

/** The bounds every probe-based algorithm takes, with the probe options of its {@link NoLoadRtt}. */
export interface ProbingLimitOptions extends NoLoadRttOptions {
  /** Starting limit, ≥ 1. @default 20, clamped into `[minLimit, maxLimit]` */
  initialLimit?: number;
  /** Lowest limit the algorithm answers, ≥ 1 (probe slots of the limiter are separate). @default 1 */
  minLimit?: number;
  /** Highest limit, ≥ 1. @default `max(1000, minLimit, initialLimit)` */
  maxLimit?: number;
}

/**
 * The shared base of the delay-based algorithms ({@link VegasLimit}, {@link GradientLimit}); not
 * exported from the package. After Netflix's `AbstractLimit`: one place applies a new limit.
 *
 * `update` here does what both algorithms do around their own rule:
 * 1. ignores an unusable sample ({@link usableSample});
 * 2. feeds the {@link NoLoadRtt} baseline, which may start or end a probe dip;
 * 3. asks the algorithm for its target (`decide`); a `probe`, `probe-end` or `warmup` answer keeps
 *    the limit where it is;
 * 4. otherwise applies the target: growth is suppressed while `2 × inflight < limit` (reason
 *    `app-limited`; falls still apply), the target is clamped to `[minLimit, maxLimit]` and smoothed
 *    (`smooth`), a non-finite result keeps the last good limit, and {@link SlowStart} hears of it;
 * 5. records the decision, built into {@link ProbingLimit.lastDecision} only when someone reads it.
 *
 * While a probe runs, {@link ProbingLimit.limit} answers the dip limit; the algorithm's own estimate
 * is kept and restored when the dip ends.
 */
export abstract class ProbingLimit implements LimitAlgorithm {
  readonly #minLimit: number;
  readonly #maxLimit: number;
  readonly #noLoad: NoLoadRtt;
  readonly #slowStart: SlowStart;
  #estimate: number;
  #reason: LimitReason | undefined = undefined;
  #rtt = 0;
  #base = 0;
  /** The target `decide` sets when it returns a reason that moves the limit. */
  protected target = 0;

  /**
   * Takes its parts already checked, so the subclass keeps the order in which options are checked
   * (keys, bounds, its own, then the probe options).
   * @param bounds - from `checkLimits`.
   * @param noLoad - the baseline, built from the algorithm's options with its prefix.
   */
  protected constructor(bounds: { initial: number; min: number; max: number }, noLoad: NoLoadRtt) {
    this.#minLimit = bounds.min;
    this.#maxLimit = bounds.max;
    this.#noLoad = noLoad;
    this.#estimate = bounds.initial;
    this.#slowStart = new SlowStart(bounds.max);
  }

  /** The highest limit this algorithm can answer (the limiter refuses costlier requests). */
  get maxLimit(): number {
    return this.#maxLimit;
  }

  /** The current limit (the dip limit while a probe runs). */
  get limit(): number {
    return this.#noLoad.probing ? this.#noLoad.dipLimit : this.#estimate;
  }

  /** The probe-measured no-load RTT in ms the algorithm compares with (`Infinity` before the first usable sample). */
  get baselineRttMs(): number {
    return this.#noLoad.value;
  }

  /** Why the last update decided what it did, and the numbers behind it. */
  get lastDecision(): LimitDecision | undefined {
    if (this.#reason === undefined) return undefined;
    const d: LimitDecision = { reason: this.#reason, rttMs: this.#rtt, baselineRttMs: this.#base };
    this.explain(d);
    return d;
  }

  /** True while growth doubles per round ({@link SlowStart}). */
  protected get slowStart(): boolean {
    return this.#slowStart.active;
  }

  /** Queueing ends slow start (see {@link SlowStart.end}). */
  protected endSlowStart(startTime: number): void {
    this.#slowStart.end(startTime);
  }

  /** Feeds one sample; returns the new limit. */
  update(input: Sample): number {
    const sample = usableSample(input);
    if (sample === undefined) return this.limit;
    const probe = this.#noLoad.observe(sample, this.#estimate, this.#minLimit);
    const base = this.#noLoad.value;
    const L = this.#estimate;
    let reason = this.decide(sample, probe, L, base);
    if (reason !== 'probe' && reason !== 'probe-end' && reason !== 'warmup') {
      let next = this.target;
      if (next > L && 2 * sample.inflight < L) {
        next = L;
        reason = 'app-limited';
      }
      const estimate = this.smooth(L, clamp(next, this.#minLimit, this.#maxLimit));
      if (Number.isFinite(estimate)) this.#estimate = estimate;
      if (sample.dropped) this.#slowStart.drop(L);
      else
        this.#slowStart.after(this.#estimate, reason === 'increase', sample.startTime + sample.rtt);
    }
    // Kept as numbers and built on demand: the limiter reads it only for `limit` event listeners.
    this.#reason = reason;
    this.#rtt = sample.rtt;
    this.#base = base;
    return this.limit;
  }

  /**
   * The algorithm's rule for one usable sample: returns the reason and, for a reason that moves the
   * limit, sets {@link ProbingLimit.target} (before app-limiting, clamping and smoothing). Returning
   * `probe`, `probe-end` or `warmup` keeps the limit.
   * @param probe - what the baseline's probe schedule says about this sample.
   * @param limit - the current estimate (not the dip limit).
   * @param baseline - the no-load RTT after this sample.
   */
  protected abstract decide(
    sample: Sample,
    probe: ProbeState,
    limit: number,
    baseline: number,
  ): LimitReason;

  /** The new estimate from the old one and the clamped target. */
  protected abstract smooth(limit: number, next: number): number;

  /** Adds the algorithm's own numbers of the last decision to `d`. */
  protected abstract explain(d: LimitDecision): void;
}
