import { clamp } from '../internal/validate.js';
import { AppLimitedDecay, appLimited } from './AppLimited.js';
import { Baseline } from './Baseline.js';
import type { LimitAlgorithm, LimitDecision, LimitReason, Sample } from './LimitAlgorithm.js';
import type { NoLoadRttOptions } from './noLoadRttOptions.js';
import { ProbeSchedule, type ProbeState } from './ProbeSchedule.js';
import { SlowStart } from './SlowStart.js';
import { usableSample } from './usableSample.js';

/**
 * A call still in flight after this many no-load RTTs is late: it counts as a dropped sample before
 * it completes ({@link ProbingLimit.onLate}). Vegas also caps the RTTs it averages here.
 */
export const LATE_RTTS = 4;

/** The bounds every probe-based algorithm takes, with the options of its {@link ProbeSchedule}. */
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
 * 1. `admit(sample)` ignores an unusable sample ({@link usableSample}) and feeds the {@link Baseline}
 *    (which may fall, or go stale) and then the {@link ProbeSchedule}, which may start or end a dip
 *    (its answer is left in `probe`);
 * 2. `hold(sample, reason?)` keeps the limit (a probe sample, `warmup`), or `apply(reason, next, sample)`
 *    applies the rule's target: growth is suppressed while the sample is app-limited
 *    ({@link appLimited}: `1.5 × inflight < limit`, `2 ×` during slow start; reason `app_limited`;
 *    falls still apply), the target is smoothed (`smooth`) and clamped to `[minLimit, maxLimit]`,
 *    the app-limited decay applies, a non-finite result keeps the last good limit, and
 *    {@link SlowStart} hears of it.
 *
 * The parts it composes, each a rule in its own file with its own tests:
 * - the **baseline** ({@link Baseline}, `Baseline.ts`): the no-load RTT, and when it goes stale;
 * - the **probe schedule** ({@link ProbeSchedule}, `ProbeSchedule.ts`): the dips that relearn it;
 *   while one runs, {@link ProbingLimit.limit} answers the dip limit, and the algorithm's own
 *   estimate (`estimate`) is kept and restored when the dip ends; a probe that finds the baseline
 *   collapsed restarts the estimate from the dip with a fresh slow start;
 * - the **app-limited decay** ({@link AppLimitedDecay}, `AppLimited.ts`): a limit left unused for a
 *   whole round decays toward 1.5× the peak in-flight used;
 * - **slow start and fast regain** ({@link SlowStart}, `SlowStart.ts`): after any collapse (drops,
 *   late calls, a spike, an app-limited decay) slow start re-arms toward the last good level when
 *   latency is back at the baseline.
 * It adds the **late calls** itself ({@link ProbingLimit.onLate}): a call still in flight past
 * `LATE_RTTS` (4) no-load RTTs counts as a dropped sample (reason `late`) as soon as the limiter sees
 * it, before it completes.
 * `hold` and `apply` record the decision, built into {@link ProbingLimit.lastDecision} only when
 * someone reads it.
 * The rule stays in the subclass's `update` (not behind a template method) and the helpers are small
 * so that V8 inlines all of the per-sample path into that one function, within its inlining budget:
 * a template method measured about 20 % slower per update.
 */
export abstract class ProbingLimit implements LimitAlgorithm {
  readonly #minLimit: number;
  readonly #maxLimit: number;
  readonly #baseline: Baseline;
  readonly #probes: ProbeSchedule;
  readonly #slowStart: SlowStart;
  readonly #decay: AppLimitedDecay;
  #estimate: number;
  /** The dropped sample `onLate` applies (one object, reused). */
  readonly #late: Sample = { startTime: 0, rtt: 0, inflight: 0, dropped: true };
  // The last decision, kept as numbers and built on demand: the limiter reads it only for `limit`
  // event listeners.
  #reason: LimitReason | undefined = undefined;
  #rtt = 0;
  #base = 0;
  /** What the baseline's probe schedule said about the sample `admit` last let through. */
  protected probe: ProbeState = 'none';

  /**
   * Builds the baseline and its probe schedule; called after the subclass checked its keys, the
   * bounds and its own options, so the probe options are checked last.
   * @param bounds - from `checkLimits`.
   * @param options - the algorithm's options (the probe options are read from them).
   * @param owner - the algorithm's option prefix, for the probe options' messages.
   * @param fresh - the baseline's freshness factor (see {@link Baseline}'s constructor).
   * @throws RangeError/TypeError naming a probe option out of range or of the wrong type.
   */
  protected constructor(
    bounds: { initial: number; min: number; max: number },
    options: NoLoadRttOptions,
    owner: string,
    fresh?: number,
  ) {
    this.#minLimit = bounds.min;
    this.#maxLimit = bounds.max;
    this.#baseline = new Baseline(fresh);
    this.#probes = new ProbeSchedule(options, owner, this.#baseline);
    this.#estimate = bounds.initial;
    this.#slowStart = new SlowStart(bounds.max);
    this.#decay = new AppLimitedDecay(bounds.min, this.#slowStart);
  }

  /** The highest limit this algorithm can answer (the limiter refuses costlier requests). */
  get maxLimit(): number {
    return this.#maxLimit;
  }

  /** The current limit (the dip limit while a probe runs, or the estimate if that fell below it). */
  get limit(): number {
    const estimate = this.#estimate;
    return this.#probes.probing ? Math.min(this.#probes.dipLimit, estimate) : estimate;
  }

  /**
   * The probe-measured no-load RTT in ms the algorithm compares with (`Infinity` before the first
   * positive, finite RTT).
   */
  get baselineRttMs(): number {
    return this.#baseline.value;
  }

  /**
   * The age in ms past which a call still in flight is late: `4 ×` the no-load RTT (`Infinity` before
   * the first baseline). A limiter reads it on each tick of its stall detector (see
   * {@link LimitAlgorithm.lateAfterMs}).
   */
  get lateAfterMs(): number {
    return LATE_RTTS * this.#baseline.value;
  }

  /**
   * `count` calls still in flight have just passed {@link ProbingLimit.lateAfterMs}: each counts as a
   * dropped sample admitted under `inflight` (the algorithm's drop rule, reason `late`), as a client
   * timeout at that age would. The probe schedule and the baseline do not hear of it. Called by the
   * limiter; a call with a count < 1 or a bad in-flight count does nothing.
   * @param count - calls that became late since the last call, each reported once.
   * @param inflight - units in flight now.
   */
  onLate(count: number, inflight: number): void {
    if (!(count >= 1) || !(inflight >= 0) || inflight === Infinity) return;
    const late = this.#late;
    late.rtt = this.lateAfterMs;
    late.inflight = inflight;
    // More late calls than the limit cannot say more than a whole round of drops.
    const n = Math.min(count, Math.max(1, Math.ceil(this.#estimate)));
    for (let i = 0; i < n; i++) this.apply('late', this.dropTarget(this.#estimate, inflight), late);
    // A dip the limit fell to is called off (see ProbeSchedule.cancel), and the next one waits a
    // normal spacing from the last late call (see ProbeSchedule.postpone).
    if (this.#estimate <= this.#probes.dipLimit) this.#probes.cancel();
    this.#probes.postpone();
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

  /** A sample that does not use the limit pauses the initial slow start (see {@link SlowStart.pause}). */
  protected pauseSlowStart(startTime: number): void {
    this.#slowStart.pause(startTime);
  }

  /** Queueing (or, for the initial slow start, a steady sample) ends slow start (see {@link SlowStart.end}). */
  protected endSlowStart(startTime: number, queueing: boolean): void {
    this.#slowStart.end(startTime, queueing);
  }

  /**
   * The sample the algorithm may learn from, fed to the baseline (which sets `probe`), or
   * `undefined` to ignore it (then `update` returns `limit`).
   */
  protected admit(input: Sample): Sample | undefined {
    const sample = usableSample(input);
    if (sample !== undefined) {
      const L = this.#estimate;
      const probes = this.#probes;
      const stale = this.#baseline.observe(sample, probes.probing);
      this.probe = probes.observe(
        sample,
        stale,
        L,
        this.#minLimit,
        !this.#slowStart.regaining,
        appLimited(this.#slowStart.active, sample.inflight, L),
      );
      // A probe that cut the baseline to two thirds or less: the limit was judged against queueing;
      // it restarts from the dip with a fresh slow start (as from an initial limit).
      if (this.probe === 'end' && this.#baseline.collapsed && probes.dipLimit < L) {
        this.#estimate = Math.max(this.#minLimit, probes.dipLimit);
        this.#slowStart.restart(sample.startTime + sample.rtt);
      }
    }
    return sample;
  }

  /**
   * Keeps the limit and records why: by default the probe's reason (`probe` while the dip holds,
   * `probe_end` on the sample that ends it). Returns the limit.
   */
  protected hold(
    sample: Sample,
    reason: LimitReason = this.probe === 'dip' ? 'probe' : 'probe_end',
  ): number {
    this.#reason = reason;
    this.#rtt = sample.rtt;
    this.#base = this.#baseline.value;
    return this.limit;
  }

  /**
   * Applies the rule's target `next` for `sample` (see the class comment) and records the decision.
   * Returns the limit.
   */
  protected apply(reason: LimitReason, next: number, sample: Sample): number {
    const L = this.#estimate;
    const idle = appLimited(this.#slowStart.active, sample.inflight, L);
    if (idle && next > L) {
      next = L;
      reason = 'app_limited';
    }
    let estimate = clamp(this.smooth(L, next), this.#minLimit, this.#maxLimit);
    if (!sample.dropped) {
      if (idle) {
        const decayed = this.#decay.idle(estimate, L, sample.inflight, sample.startTime, reason);
        if (decayed < estimate) {
          estimate = decayed;
          reason = 'app_limited';
        }
      } else {
        this.#decay.used();
      }
    }
    if (Number.isFinite(estimate)) this.#estimate = estimate;
    const base = this.#baseline.value;
    if (!sample.dropped) this.#slowStart.after(L, this.#estimate, reason, sample, base);
    this.#reason = reason;
    this.#rtt = sample.rtt;
    this.#base = base;
    return this.limit;
  }

  /** The new estimate from the old one and the target. */
  protected abstract smooth(limit: number, next: number): number;

  /** The rule's target for a dropped sample admitted under `inflight`, with the limit at `L`. */
  protected abstract dropTarget(L: number, inflight: number): number;

  /** Adds the algorithm's own numbers of the last decision to `d`. */
  protected abstract explain(d: LimitDecision): void;
}
