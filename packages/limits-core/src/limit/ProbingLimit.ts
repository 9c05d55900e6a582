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
 * A subclass's `update` holds only its own rule, between two calls to the base:
 * 1. `admit(sample)` ignores an unusable sample ({@link usableSample}) and feeds the {@link NoLoadRtt}
 *    baseline, whose probe schedule may start or end a dip (its answer is left in `probe`);
 * 2. `hold(sample, reason?)` keeps the limit (a probe sample, `warmup`), or `apply(reason, next, sample)`
 *    applies the rule's target: growth is suppressed while `2 × inflight < limit` (reason
 *    `app-limited`; falls still apply), the target is clamped to `[minLimit, maxLimit]` and smoothed
 *    (`smooth`), a non-finite result keeps the last good limit, and {@link SlowStart} hears of it.
 * Both record the decision, built into {@link ProbingLimit.lastDecision} only when someone reads it.
 * The rule stays in the subclass's `update` (not behind a template method) and the helpers are small
 * so that V8 inlines all of the per-sample path into that one function, within its inlining budget:
 * a template method measured about 20 % slower per update.
 *
 * While a probe runs, {@link ProbingLimit.limit} answers the dip limit; the algorithm's own estimate
 * (`estimate`) is kept and restored when the dip ends.
 */
export abstract class ProbingLimit implements LimitAlgorithm {
  readonly #minLimit: number;
  readonly #maxLimit: number;
  readonly #noLoad: NoLoadRtt;
  readonly #slowStart: SlowStart;
  #estimate: number;
  // The last decision, kept as numbers and built on demand: the limiter reads it only for `limit`
  // event listeners.
  #reason: LimitReason | undefined = undefined;
  #rtt = 0;
  #base = 0;
  /** What the baseline's probe schedule said about the sample `admit` last let through. */
  protected probe: ProbeState = 'none';

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

  /**
   * The probe-measured no-load RTT in ms the algorithm compares with (`Infinity` before the first
   * positive, finite RTT).
   */
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

  /** Feeds one sample; returns the new limit. */
  abstract update(sample: Sample): number;

  /** The algorithm's own limit, which a probe dip does not change. */
  protected get estimate(): number {
    return this.#estimate;
  }

  /** True while growth doubles per round ({@link SlowStart}). */
  protected get slowStart(): boolean {
    return this.#slowStart.active;
  }

  /** Queueing ends slow start (see {@link SlowStart.end}). */
  protected endSlowStart(startTime: number): void {
    this.#slowStart.end(startTime);
  }

  /**
   * The sample the algorithm may learn from, fed to the baseline (which sets `probe`), or
   * `undefined` to ignore it (then `update` returns `limit`).
   */
  protected admit(input: Sample): Sample | undefined {
    const sample = usableSample(input);
    if (sample !== undefined) {
      this.probe = this.#noLoad.observe(sample, this.#estimate, this.#minLimit);
    }
    return sample;
  }

  /**
   * Keeps the limit and records why: by default the probe's reason (`probe` while the dip holds,
   * `probe-end` on the sample that ends it). Returns the limit.
   */
  protected hold(
    sample: Sample,
    reason: LimitReason = this.probe === 'dip' ? 'probe' : 'probe-end',
  ): number {
    this.#reason = reason;
    this.#rtt = sample.rtt;
    this.#base = this.#noLoad.value;
    return this.limit;
  }

  /**
   * Applies the rule's target `next` for `sample` (see the class comment) and records the decision.
   * Returns the limit.
   */
  protected apply(reason: LimitReason, next: number, sample: Sample): number {
    const L = this.#estimate;
    if (next > L && 2 * sample.inflight < L) {
      next = L;
      reason = 'app-limited';
    }
    const estimate = this.smooth(L, clamp(next, this.#minLimit, this.#maxLimit));
    if (Number.isFinite(estimate)) this.#estimate = estimate;
    if (sample.dropped) this.#slowStart.drop(L);
    else
      this.#slowStart.after(this.#estimate, reason === 'increase', sample.startTime + sample.rtt);
    this.#reason = reason;
    this.#rtt = sample.rtt;
    this.#base = this.#noLoad.value;
    return this.limit;
  }

  /** The new estimate from the old one and the clamped target. */
  protected abstract smooth(limit: number, next: number): number;

  /** Adds the algorithm's own numbers of the last decision to `d`. */
  protected abstract explain(d: LimitDecision): void;
}
