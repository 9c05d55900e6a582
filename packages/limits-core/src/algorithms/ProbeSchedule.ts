/**
 * @packageDocumentation
 * The probe schedule: the short dips of the limit that relearn the {@link Baseline} (no-load RTT)
 * under load. Under sustained saturation no sample is ever unloaded, so the baseline is relearned by
 * briefly lowering the limit (as BBR's ProbeRTT and Netflix Gradient v1 do).
 *
 * The rule, in plain words:
 * - **When a probe starts.** Every `U[0.5, 1) × probeMultiplier` rounds (a round is `limit`
 *   samples), counted down by `1 / limit` per sample; the first comes within half a recheck's spacing
 *   (`recheckMultiplier / 2` rounds: the first samples may all have queued), and the one after a
 *   probe that moved the baseline a recheck's spacing away (`recheckMultiplier`). A due probe waits
 *   while the algorithm says it may not start (a regain of the last good level) and while a dip
 *   would not lower the capacity (a limit at the floor). A stale baseline starts the deepest probe at
 *   once, whatever the spacing.
 * - **How deep it dips.** To `max(minLimit, floor(limit × depth))`: `probeDepth` (¾) normally; half
 *   at most for the first probe and after three at a normal depth; after a move, half the depth of
 *   that probe (from at most half) for a move within a quarter, a quarter of it for a larger one,
 *   never below `minProbeDepth`; `minProbeDepth` for a stale baseline. A probe that comes due while
 *   the load leaves the limit well unused (the algorithm's app-limited rule) is **open**: it does not
 *   dip at all (`dipLimit` is `Infinity`), unless the last open probe read a rise (then it dips) or
 *   it is the one for a stale baseline.
 * - **How it measures.** Its clean samples are those that started during the dip and were admitted
 *   with at most `dipLimit` units in flight; it ends at `probeSamples` of them (their median is the
 *   candidate, handed to {@link Baseline.measured}) or after `2 × limit + 20` samples. A dip that
 *   no sample came in under takes the samples admitted under the fewest units in flight instead,
 *   when it is the deepest probe or those were at most half the limit.
 * - **When it is cancelled.** Without a result, when the limit falls to its dip or under it (drops,
 *   late calls), or when it outlasts {@link PROBE_MAX_RTTS} baselines (latency rose under it); never
 *   the deepest probe for a stale baseline. The next one is a normal spacing away (a recheck's for a
 *   recheck).
 * - **When it is postponed.** Late calls (a slowdown) put the next probe a normal spacing away,
 *   except before the first probe and during a recheck.
 *
 * Internal (not exported from the package): {@link ProbingLimit} builds one over its baseline, and
 * holds the limit at {@link ProbeSchedule.dipLimit} while a probe runs.
 */
import type { Random } from '../internal/random.js';
import { checkFunction, checkKeys, checkNumber } from '../internal/validate.js';
import { Baseline, type ProbeResult, rttUsable } from './Baseline.js';
import type { Sample } from './LimitAlgorithm.js';
import { NO_LOAD_RTT_KEYS, type NoLoadRttOptions } from './noLoadRttOptions.js';

/** Probes at a normal depth above half between two at half (the first probe is at half too). */
const SHALLOW_RUN = 3;

/**
 * A dip still short of clean samples this many baselines after it began is called off without a
 * result (see {@link ProbeSchedule.cancel}): latency rose under it (a spike), so its samples would
 * not measure a no-load RTT, and it would hold the limit down when latency comes back.
 */
export const PROBE_MAX_RTTS = 20;

/** What {@link ProbeSchedule.observe} tells the algorithm to do with the current sample. */
export type ProbeState = 'none' | 'dip' | 'end';

/** The probe dips of one algorithm (see the file comment for their rule). */
export class ProbeSchedule {
  /** The limit to hold while a probe dip is running (`Infinity` for an open probe). */
  dipLimit = 0;
  /**
   * The running (or last) probe is open: it started while the load left the limit well unused, so
   * it does not dip (the load's own samples are clean) and refuses nothing. A dip under the calls
   * the load keeps out refused them for nothing: a healthy downstream at half the limit saw about
   * 0.5 % of calls refused, one cluster per dip to half. An open probe refreshes the
   * baseline within ±10 % as a shallow dip does, or lowers it, but never moves it up (its samples
   * may queue: a limit that just grew leaves the load behind it for a round); one that reads a rise
   * makes the next probe a dip, a recheck's spacing away. The deepest probe for a stale baseline
   * always dips.
   */
  open = false;

  readonly #baseline: Baseline;
  readonly #probeMultiplier: number;
  readonly #recheckMultiplier: number;
  readonly #probeDepth: number;
  readonly #minProbeDepth: number;
  readonly #probeSamples: number;
  readonly #random: Random;

  /** Rounds (of `limit` samples) until the next probe (≤ 0: due); NaN before the first sample. */
  #untilProbe = Number.NaN;
  #depth: number;
  /** The depth of the running (or last) probe. */
  #probeAt = 1;
  /** Probes at a normal depth above half since the last one at half or deeper. */
  #shallow = SHALLOW_RUN;
  #probing = false;
  /** A probe has ended (with a result) at least once. */
  #probed = false;
  /** The last probe moved the baseline: a recheck is due (a recheck's spacing). */
  #recheck = false;
  /** An open probe read a rise it may not apply: the next probe dips, even at a light load. */
  #mustDip = false;
  /** The running probe is the deepest one for a stale baseline (it runs even at the floor). */
  #staleProbe = false;
  /** A sample's share of a round at the limit `#stepOf` (`1 / max(1, limit)`, kept: a division less per sample). */
  #step = 1;
  #stepOf = Number.NaN;
  #probeStart = 0;
  #probeSeen = 0;
  readonly #probeRtts: number[] = [];
  /**
   * A dip's fallback: the RTTs of its samples admitted under the fewest units in flight seen
   * (`#leastInflight`), for when none was admitted within the dip (see `#observeProbe`).
   */
  readonly #leastRtts: number[] = [];
  #leastInflight = Infinity;

  /**
   * @param options - the probe options (the algorithm's options, whose other keys it checks itself).
   * @param owner - the option prefix in messages; an algorithm passes its own. Standalone
   *   (`'probe'`), unknown keys are refused here.
   * @param baseline - the baseline the probes measure, and whose result they hand it.
   * @throws RangeError/TypeError naming an option out of range or of the wrong type, or unknown.
   */
  constructor(options: NoLoadRttOptions = {}, owner = 'probe', baseline = new Baseline()) {
    this.#baseline = baseline;
    if (owner === 'probe') checkKeys('ProbeSchedule', options, NO_LOAD_RTT_KEYS, 'probe.');
    this.#probeMultiplier = checkNumber(`${owner}.probeMultiplier`, options.probeMultiplier, 30, {
      min: 1,
    });
    this.#recheckMultiplier = checkNumber(
      `${owner}.recheckMultiplier`,
      options.recheckMultiplier,
      2,
      { min: 1 },
    );
    const unit = { min: 0, max: 1, minExclusive: true };
    const depth = checkNumber(`${owner}.probeDepth`, options.probeDepth, Number.NaN, unit);
    const minDepth = checkNumber(`${owner}.minProbeDepth`, options.minProbeDepth, Number.NaN, unit);
    if (minDepth > depth) {
      throw new RangeError(
        `limits: option "${owner}.minProbeDepth" (${minDepth}) must be ≤ "${owner}.probeDepth" (${depth})`,
      );
    }
    // A default fits the value given.
    this.#probeDepth = Number.isNaN(depth) ? Math.max(0.75, minDepth || 0) : depth;
    this.#minProbeDepth = Number.isNaN(minDepth) ? Math.min(0.125, this.#probeDepth) : minDepth;
    this.#probeSamples = checkNumber(`${owner}.probeSamples`, options.probeSamples, 5, {
      min: 1,
      max: 1000,
      integer: true,
    });
    this.#random = checkFunction<Random>(`${owner}.random`, options.random) ?? Math.random;
    this.#depth = this.#probeDepth;
  }

  /** True while a probe dip is running. */
  get probing(): boolean {
    return this.#probing;
  }

  /**
   * Feeds one sample (after the baseline saw it). Returns `dip` while a probe holds the limit at
   * {@link ProbeSchedule.dipLimit}, `end` on the sample that ends a probe, `none` otherwise.
   * @param stale - the baseline went stale on this sample ({@link Baseline.observe}): the deepest
   *   probe starts now.
   * @param limit - the algorithm's own (undipped) limit.
   * @param minLimit - the algorithm's minimum; a dip never goes below it.
   * @param mayStart - whether a due probe may start now (the algorithms hold it while a re-armed
   *   slow start regains the last good level: a dip in the middle of a regain costs a round of it);
   *   it starts at the first sample that may.
   * @param appLimited - the load leaves the limit well unused (the algorithm's app-limited rule): a
   *   probe that starts now does not dip (see {@link ProbeSchedule.open}).
   */
  observe(
    sample: Sample,
    stale: boolean,
    limit: number,
    minLimit: number,
    mayStart = true,
    appLimited = false,
  ): ProbeState {
    if (this.#probing) return this.#observeProbe(sample, limit);
    if (stale) return this.#startProbe(sample, limit, minLimit, true);
    // The first probe comes within the first round (by default): the first samples may all have
    // queued (a start far above the capacity), and the baseline they gave would hold the limit there.
    if (Number.isNaN(this.#untilProbe))
      this.#untilProbe = this.#spacing(this.#recheckMultiplier / 2);
    if (limit !== this.#stepOf) {
      this.#stepOf = limit;
      this.#step = 1 / Math.max(1, limit);
    }
    this.#untilProbe -= this.#step;
    if (this.#untilProbe > 1e-9 || !mayStart || !this.#canDip(limit, minLimit)) return 'none';
    return this.#startProbe(sample, limit, minLimit, false, appLimited);
  }

  /**
   * Whether a normal dip would lower the capacity: at the floor (a limit of 1 after a collapse) it
   * would not, and a probe there would only hold the limit (no growth) for its samples while the
   * calls of the collapse keep it from finding clean ones. A due probe waits for a limit it can dip.
   */
  #canDip(limit: number, minLimit: number): boolean {
    const depth = this.#shallow >= SHALLOW_RUN ? Math.min(this.#depth, 0.5) : this.#depth;
    return Math.max(minLimit, Math.floor(limit * depth)) < Math.floor(limit);
  }

  /**
   * Calls off a running probe without a result, unless it is the deepest one for a stale baseline:
   * the limit fell to the dip or under it (drops, late calls), or the dip outlasted
   * {@link PROBE_MAX_RTTS} baselines (latency rose under it); either would only hold the limit when
   * latency comes back (S1: 13 fast answers) or learn a baseline from the slowdown. The next probe is
   * a normal spacing away, or a recheck's for a recheck of a move (1 of 20 Gradient starts at 500
   * kept a baseline 28 % high when late calls cut its recheck), once it can dip the limit.
   * @returns whether a probe was called off.
   */
  cancel(): boolean {
    if (!this.#probing || this.#staleProbe) return false;
    this.#probing = false;
    this.#untilProbe = this.#spacing();
    return true;
  }

  /**
   * Puts the next probe a normal spacing away (unless one is running): calls are late, a slowdown is
   * on. A probe that came due during it would otherwise start as soon as the limit regains a level it
   * can dip, and dip the limit the load has just got back (a spike's regain, 1 of 40 seeds).
   */
  postpone(): void {
    // Not before the first probe nor a recheck: they correct a start far above the capacity.
    if (!this.#probing && this.#probed && !this.#recheck) {
      this.#untilProbe = this.#spacing();
    }
  }

  // The rare paths are apart from `observe`, which runs on every sample: kept small, V8 inlines it
  // into the algorithm's `update`.

  /** Starts a probe; `stale`: the deepest one, for a stale baseline (see `BASELINE_MAX_AGE_MS`). */
  #startProbe(
    sample: Sample,
    limit: number,
    minLimit: number,
    stale = false,
    appLimited = false,
  ): ProbeState {
    this.#probing = true;
    this.open = appLimited && !stale && !this.#mustDip;
    this.#mustDip = false;
    this.#staleProbe = stale;
    this.#probeStart = sample.startTime + (rttUsable(sample.rtt) ? sample.rtt : 0);
    this.#probeSeen = 0;
    this.#probeRtts.length = 0;
    this.#leastRtts.length = 0;
    this.#leastInflight = Infinity;
    // The deepest probe answers a stale baseline: the next one is a full age away, whatever it finds.
    // Another probe keeps the baseline fresh only if it measures something (see `#observeProbe`): a
    // dip that no sample came in under (the limiter's probe slots keep more calls out) must not hold
    // off the deepest probe for ever.
    this.#baseline.probeStarted(this.#probeStart, stale);
    // Every few probes (and the first) dip to half at most: only such a dip may raise the baseline
    // within ±10 % (the first baseline is often a sample at the noise's low edge).
    const depth = stale
      ? this.#minProbeDepth
      : this.#shallow >= SHALLOW_RUN
        ? Math.min(this.#depth, 0.5)
        : this.#depth;
    this.#probeAt = this.open ? 1 : depth;
    this.dipLimit = this.open ? Infinity : Math.max(minLimit, Math.floor(limit * depth));
    return 'dip';
  }

  #observeProbe(sample: Sample, limit: number): ProbeState {
    if (
      ((!this.open && limit <= this.dipLimit) ||
        sample.startTime + sample.rtt - this.#probeStart >
          PROBE_MAX_RTTS * this.#baseline.atProbe) &&
      this.cancel()
    ) {
      return 'none';
    }
    this.#probeSeen++;
    if (!sample.dropped && rttUsable(sample.rtt) && sample.startTime >= this.#probeStart) {
      if (sample.inflight <= this.dipLimit) this.#probeRtts.push(sample.rtt);
      else this.#least(sample.inflight, sample.rtt);
    }
    const wanted = this.#probeSamples;
    // A dip is bounded: if traffic cannot fill it with clean samples (light load, all drops),
    // give up after the in-flight of the old limit has drained twice over.
    if (this.#probeRtts.length < wanted && this.#probeSeen < 2 * limit + 20) return 'dip';
    this.#probing = false;
    // When no sample came in within the dip (a limiter's probe slots keep more calls out than the
    // dip's limit), the samples admitted under the fewest calls are the closest to no load there is:
    // the deepest probe, which replaces a stale baseline whatever it measures, takes them, and so
    // does a dip whose fewest calls were at most half the limit (a load well below it). Without them
    // every such dip would end without a result, each sooner than the last, until the baseline went
    // stale (every call read as queueing meanwhile, the limit held at its floor).
    if (
      this.#probeRtts.length === 0 &&
      (this.#staleProbe || (!this.open && this.#leastInflight <= limit / 2))
    ) {
      this.#probeRtts.push(...this.#leastRtts);
    }
    const baseline = this.#baseline;
    baseline.probeEnded();
    const count = this.#probeRtts.length;
    let result: ProbeResult = 'kept';
    if (count > 0) {
      // A probe that measured keeps (or made) the baseline fresh: the next expiry is a full age away.
      const rtts = this.#probeRtts.sort((a, b) => a - b);
      const candidate = rtts[(count - 1) >> 1] as number;
      const spread = (rtts[count - 1] as number) - (rtts[0] as number);
      result = baseline.measured(candidate, spread, sample.startTime + sample.rtt, {
        open: this.open,
        depth: this.#probeAt,
        deepest: this.#probeAt <= this.#minProbeDepth,
      });
    }
    const moved = result === 'moved' || result === 'moved_far';
    // A rise an open probe may not apply is checked by a dip, a recheck's spacing away.
    if (result === 'rise_refused') this.#mustDip = true;
    // A move beyond what noise can explain (a quarter) halves the depth, starting from at most half
    // the limit; a smaller one is rechecked at half the limit at most, not deeper.
    this.#shallow = this.#probeAt <= 0.5 ? 0 : this.#shallow + 1;
    const half = Math.min(this.#probeAt, 0.5);
    this.#depth = moved
      ? Math.max(this.#minProbeDepth, result === 'moved_far' ? half / 2 : half)
      : this.#probeDepth;
    this.#probed = true;
    this.#recheck = moved || this.#mustDip;
    this.#untilProbe = this.#spacing();
    return 'end';
  }

  /** Keeps the RTTs of the probe's samples admitted under the fewest units in flight seen. */
  #least(inflight: number, rtt: number): void {
    if (inflight < this.#leastInflight) {
      this.#leastInflight = inflight;
      this.#leastRtts.length = 0;
    }
    if (inflight === this.#leastInflight) this.#leastRtts.push(rtt);
  }

  /** Jittered spacing in rounds (a sample is `1 / limit` of one); by default the next probe's. */
  #spacing(multiplier = this.#recheck ? this.#recheckMultiplier : this.#probeMultiplier): number {
    return (0.5 + this.#random() * 0.5) * multiplier;
  }
}
