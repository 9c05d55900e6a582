import type { Random } from '../internal/random.js';
import { checkFunction, checkKeys, checkNumber } from '../internal/validate.js';
import type { Sample } from './LimitAlgorithm.js';
import { NO_LOAD_RTT_KEYS, type NoLoadRttOptions } from './noLoadRttOptions.js';

export type { NoLoadRttOptions } from './noLoadRttOptions.js';

/**
 * Between probes the baseline only descends to a sample 20 % or more below it: smaller dips are
 * RTT noise, and following them would bias the baseline to the noise's low edge (which reads as a
 * standing queue of `noise × limit` in Vegas' estimate, and as a gradient under 1 in Gradient's).
 * With 10 % a downstream with ±10 % jitter kept the baseline at that edge, 10 % under the median the
 * next probe measures: every probe read as a move and scheduled a deeper one.
 */
const DESCEND = 0.8;

/**
 * Only a positive, finite RTT can be a baseline: 0 (a millisecond clock) would make every later RTT
 * look like infinite queueing.
 */
function rttUsable(rtt: number): boolean {
  return rtt > 0 && rtt < Infinity;
}

/**
 * A probe's candidate further than this share from the baseline is a move whatever the spread of its
 * samples, and its recheck dips deeper; within it, a move must exceed that spread (noise) and its
 * recheck dips to half the limit at most: with ±10 % jitter a median of 5 samples differs from the
 * last one by 10–17 % now and then, and a recheck at a quarter of the limit refused about 14 calls of
 * a load that used half of it (after a latency spike).
 */
const NOISE_MAX = 0.25;

/** A probe that lowers the baseline to this share or less finds the limit was set against queueing. */
const COLLAPSE = 2 / 3;

/** Samples in the average RTT outside probes. */
const LOADED_SAMPLES = 16;

/** A probe's candidate this close to the RTT at the full limit saw no queue to drain. */
const SAME_RTT = 0.97;

/** Probes at a normal depth above half between two at half (the first probe is at half too). */
const SHALLOW_RUN = 3;

/**
 * The baseline is stale when no usable sample came within {@link FRESH} of it (with the recent
 * average RTT also within it), and no probe measured, for this long (ms, on the samples' clock):
 * the next sample then starts the deepest probe, whose result replaces the
 * baseline whatever it is (BBR's 10 s min-RTT expiry and ProbeRTT). Without it a downstream whose
 * no-load latency moved up for good (20 ms → 500 ms) would keep the limit at its floor: every call
 * reads as queueing and late, and shallow probes may raise the baseline only ×2 at a time. Shorter
 * slowdowns (a spike of a few seconds) end before it, so the limit holds few calls on them.
 */
export const BASELINE_MAX_AGE_MS = 10_000;

/**
 * A dip still short of clean samples this many baselines after it began is called off without a
 * result (see {@link NoLoadRtt.cancel}): latency rose under it (a spike), so its samples would not
 * measure a no-load RTT, and it would hold the limit down when latency comes back.
 */
const PROBE_MAX_RTTS = 20;

/** A sample within this factor of the baseline keeps it fresh. */
const FRESH = 1.25;

/** What {@link NoLoadRtt.observe} tells the algorithm to do with the current sample. */
export type ProbeState = 'none' | 'dip' | 'end';

/**
 * Tracks the no-load (baseline) RTT of a downstream for delay-based algorithms and schedules short
 * probe dips to relearn it. Internal (not exported from the package): Vegas and Gradient
 * build one from their options.
 *
 * Between probes the baseline can only fall, only to the **second** lowest RTT seen, and only when that
 * is at least 20 % below it, so one lucky sample (a cached or short-circuited reply) cannot drag it
 * down and RTT noise cannot bias it to the noise's low edge. A probe's candidate is the median of its
 * clean samples, and a candidate within ±10 % (or within the spread of the probe's own samples)
 * refreshes the baseline without counting as a move. A probe is called off without a result when
 * the limit falls to its dip or it outlasts 20 baselines (see {@link NoLoadRtt.cancel}), and a due
 * probe waits for a limit it can dip. Under sustained saturation no sample is ever unloaded, so the baseline is relearned by briefly lowering the limit (as BBR's ProbeRTT and
 * Netflix Gradient v1 do): the samples that started during the dip at low in-flight give the candidate.
 * A candidate that rises is capped at ×2 unless measured at the deepest dip, and every probe that
 * moves the baseline schedules a deeper, sooner follow-up; a probe that confirms it restores the
 * normal depth and spacing. So a lasting latency shift is learned in a few probes while queueing at a
 * shallow dip cannot make the baseline drift upward.
 */
export class NoLoadRtt {
  /**
   * The current baseline in ms, always > 0; `Infinity` until the first positive, finite RTT (RTTs of 0,
   * which a millisecond clock reports for fast calls, never become the baseline).
   */
  value = Infinity;
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
  /**
   * The last probe lowered the baseline to two thirds or less: the limit was set against a baseline
   * that was mostly queueing (a start far above the capacity), and should not stay above the dip.
   */
  collapsed = false;

  readonly #probeMultiplier: number;
  readonly #recheckMultiplier: number;
  readonly #probeDepth: number;
  readonly #minProbeDepth: number;
  readonly #probeSamples: number;
  readonly #random: Random;

  #low1 = Infinity;
  #low2 = Infinity;
  /** Rounds (of `limit` samples) until the next probe (≤ 0: due); NaN before the first sample. */
  #untilProbe = Number.NaN;
  #valueAtProbe = Infinity;
  #depth: number;
  /** The average RTT outside probes (at the full limit), from 0. */
  #loaded = 0;
  /** `#loaded` when the running probe started. */
  #loadedAtProbe = 0;
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
  /** End time of the last usable sample within {@link FRESH} of the baseline (see {@link BASELINE_MAX_AGE_MS}). */
  #freshAt = Number.NaN;
  /** See the constructor's `fresh`. */
  readonly #fresh: number;

  /**
   * @param owner - the option prefix in messages; an algorithm passes its own (with its options,
   *   whose keys it checks itself). Standalone (`'probe'`), unknown keys are refused here.
   * @throws RangeError/TypeError naming an option out of range or of the wrong type, or unknown.
   */
  /**
   * @param fresh - how far above the baseline (a factor) the RTTs may be and still keep it fresh: an
   *   algorithm whose rule tolerates less (Gradient's `tolerance`) passes that, or a latency that
   *   moved up by less than {@link FRESH} would hold its limit for good without ever going stale.
   */
  constructor(options: NoLoadRttOptions = {}, owner = 'probe', fresh = FRESH) {
    this.#fresh = fresh;
    if (owner === 'probe') checkKeys('NoLoadRtt', options, NO_LOAD_RTT_KEYS, 'probe.');
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
   * Feeds one sample. Returns `dip` while a probe holds the limit at {@link NoLoadRtt.dipLimit},
   * `end` on the sample that ends a probe, `none` otherwise.
   * @param limit - the algorithm's own (undipped) limit.
   * @param minLimit - the algorithm's minimum; a dip never goes below it.
   * @param mayStart - whether a due probe may start now (the algorithms hold it while a re-armed
   *   slow start regains the last good level: a dip in the middle of a regain costs a round of it);
   *   it starts at the first sample that may.
   * @param appLimited - the load leaves the limit well unused (the algorithm's app-limited rule): a
   *   probe that starts now does not dip (see {@link NoLoadRtt.open}).
   */
  observe(
    sample: Sample,
    limit: number,
    minLimit: number,
    mayStart = true,
    appLimited = false,
  ): ProbeState {
    const rtt = sample.rtt;
    // Only a new low can move the baseline between probes (a probe's end resets the lows).
    if (rtt < this.#low2 && !sample.dropped && rttUsable(rtt)) this.#lower(rtt);
    if (this.#probing) return this.#observeProbe(sample, limit);
    let stale = false;
    if (!sample.dropped && rttUsable(rtt)) {
      // The RTT at the full limit, for the probes' end (an average over about 16 samples).
      this.#loaded += (rtt - this.#loaded) / LOADED_SAMPLES;
      const end = sample.startTime + rtt;
      // Fresh: this sample and the recent average are both near the baseline (one sample at the low
      // edge of the noise must not keep a baseline the latency has left fresh).
      const near = this.value * this.#fresh;
      if ((rtt <= near && this.#loaded <= near) || Number.isNaN(this.#freshAt)) this.#freshAt = end;
      else stale = end - this.#freshAt >= BASELINE_MAX_AGE_MS;
    }
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

  /** A usable RTT below the second lowest: keeps the two lowest, maybe lowers the baseline. */
  #lower(rtt: number): void {
    if (rtt < this.#low1) {
      this.#low2 = this.#low1;
      this.#low1 = rtt;
    } else {
      this.#low2 = rtt;
    }
    const low = this.#low2 === Infinity ? this.#low1 : this.#low2;
    if (this.value === Infinity || low < this.value * DESCEND) this.value = low;
  }

  /** Starts a probe; `stale`: the deepest one, for a stale baseline (see {@link BASELINE_MAX_AGE_MS}). */
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
    this.#valueAtProbe = this.value;
    this.#probeStart = sample.startTime + (rttUsable(sample.rtt) ? sample.rtt : 0);
    this.#probeSeen = 0;
    this.#probeRtts.length = 0;
    this.#leastRtts.length = 0;
    this.#leastInflight = Infinity;
    // The deepest probe answers a stale baseline: the next one is a full age away, whatever it finds.
    // Another probe keeps the baseline fresh only if it measures something (see `#observeProbe`): a
    // dip that no sample came in under (the limiter's probe slots keep more calls out) must not hold
    // off the deepest probe for ever.
    if (stale) this.#freshAt = this.#probeStart;
    // Every few probes (and the first) dip to half at most: only such a dip may raise the baseline
    // within ±10 % (the first baseline is often a sample at the noise's low edge).
    const depth = stale
      ? this.#minProbeDepth
      : this.#shallow >= SHALLOW_RUN
        ? Math.min(this.#depth, 0.5)
        : this.#depth;
    this.#probeAt = this.open ? 1 : depth;
    this.#loadedAtProbe = this.#loaded;
    this.dipLimit = this.open ? Infinity : Math.max(minLimit, Math.floor(limit * depth));
    return 'dip';
  }

  #observeProbe(sample: Sample, limit: number): ProbeState {
    this.collapsed = false;
    if (
      ((!this.open && limit <= this.dipLimit) ||
        sample.startTime + sample.rtt - this.#probeStart > PROBE_MAX_RTTS * this.#valueAtProbe) &&
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
    const count = this.#probeRtts.length;
    // A probe that measured keeps (or made) the baseline fresh: the next expiry is a full age away.
    if (count > 0) this.#freshAt = sample.startTime + sample.rtt;
    let moved = false;
    let far = false;
    if (count > 0) {
      this.#probeRtts.sort((a, b) => a - b);
      const candidate = this.#probeRtts[(count - 1) >> 1] as number;
      // Judge the move against the baseline the probe started from: clean probe samples also
      // lower `value` through the between-probes path while the dip runs.
      const before = this.#valueAtProbe;
      // A move must also exceed the probe's own noise (the spread of its samples, counted up to a
      // quarter of the baseline): two medians of a downstream with ±10 % jitter differ by 10 % now
      // and then, and each such "move" would schedule a deeper dip soon (down to a limit of 1).
      // Beyond a quarter it is a move whatever the spread (a dip that still queues spreads wide).
      const spread = (this.#probeRtts[count - 1] as number) - (this.#probeRtts[0] as number);
      const noise = Math.min(spread, NOISE_MAX * before);
      far = Math.abs(candidate - before) > NOISE_MAX * before;
      if (candidate < before * 0.9 && before - candidate > noise) {
        this.value = candidate;
        moved = true;
        this.collapsed = candidate <= before * COLLAPSE;
      } else if (candidate > before * 1.1 && candidate - before > noise) {
        if (this.open) {
          // An open probe measured at the load, which may queue: it cannot raise the baseline.
          // A dip checks it, a recheck's spacing away.
          this.#mustDip = true;
        } else {
          const deepest = this.#probeAt <= this.#minProbeDepth;
          this.value = deepest ? candidate : Math.min(candidate, before * 2);
          moved = true;
        }
      } else if (this.#probeAt <= 0.5 || candidate >= this.#loadedAtProbe * SAME_RTT) {
        this.value = candidate;
      }
      // Within ±10 %, a shallow dip (above half the limit) refreshes the baseline only when it
      // measured the RTT of the full limit (no queue to drain there): at a limit far above the
      // capacity such a dip still queues a little, and following it would drift upward; and letting
      // it only lower the baseline would bias it to the low edge of the noise. An open probe measures
      // at the load itself: the same rule.
    }
    // A move beyond what noise can explain (a quarter) halves the depth, starting from at most half
    // the limit; a smaller one is rechecked at half the limit at most, not deeper.
    this.#shallow = this.#probeAt <= 0.5 ? 0 : this.#shallow + 1;
    const half = Math.min(this.#probeAt, 0.5);
    this.#depth = moved ? Math.max(this.#minProbeDepth, far ? half / 2 : half) : this.#probeDepth;
    this.#low1 = Infinity;
    this.#low2 = Infinity;
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
