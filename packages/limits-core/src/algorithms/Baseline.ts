/**
 * @packageDocumentation
 * The baseline: the no-load RTT of a downstream, which Vegas and Gradient compare every sample with.
 *
 * The rule, in plain words:
 * - **Between probes it can only fall**, only to the second lowest usable RTT seen since the last
 *   probe, and only when that is at least 20 % below it: one lucky sample (a cached or
 *   short-circuited reply) cannot drag it down, and RTT noise cannot bias it to the noise's low edge.
 *   The first positive, finite RTT sets it; an RTT of 0 (a millisecond clock) or a dropped sample
 *   never does.
 * - **A probe's measurement moves it** ({@link Baseline.measured}; the {@link ProbeSchedule} measures
 *   the median of the dip's clean samples): a candidate more than 10 % below, and below by more than
 *   the spread of the probe's samples (counted up to a quarter), lowers it; one as far above raises
 *   it, capped at ×2 unless measured at the deepest dip, and never from an open probe (which measured
 *   at the load itself); within that, it refreshes the baseline to the candidate when the dip was at
 *   half the limit or deeper, or when the candidate is the RTT of the full limit (no queue to drain).
 *   A candidate at two thirds or less of the baseline is a collapse: the limit was judged against
 *   queueing ({@link Baseline.collapsed}).
 * - **It goes stale** when no usable sample came within the freshness factor of it (1.25, or
 *   Gradient's tolerance) — the sample itself and the average RTT outside probes both — and no probe
 *   measured, for {@link BASELINE_MAX_AGE_MS} (10 s, on the samples' clock). The schedule then starts
 *   the deepest probe, whose result replaces the baseline whatever it is.
 *
 * Internal (not exported from the package): {@link ProbingLimit} builds one and hands it to its
 * probe schedule.
 */
import type { Sample } from './LimitAlgorithm.js';

/**
 * Between probes the baseline only descends to a sample 20 % or more below it: smaller dips are
 * RTT noise, and following them would bias the baseline to the noise's low edge (which reads as a
 * standing queue of `noise × limit` in Vegas' estimate, and as a gradient under 1 in Gradient's).
 * With 10 % a downstream with ±10 % jitter kept the baseline at that edge, 10 % under the median the
 * next probe measures: every probe read as a move and scheduled a deeper one.
 */
const DESCEND = 0.8;

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

/** A sample within this factor of the baseline keeps it fresh. */
const FRESH = 1.25;

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
 * Only a positive, finite RTT can be a baseline: 0 (a millisecond clock) would make every later RTT
 * look like infinite queueing.
 */
export function rttUsable(rtt: number): boolean {
  return rtt > 0 && rtt < Infinity;
}

/**
 * What a probe's measurement did to the baseline ({@link Baseline.measured}):
 * - `kept`: within the noise (refreshed to the candidate, or left as it was);
 * - `moved`: lowered or raised by up to a quarter;
 * - `moved_far`: lowered or raised by more than a quarter;
 * - `rise_refused`: an open probe read a rise it may not apply.
 */
export type ProbeResult = 'kept' | 'moved' | 'moved_far' | 'rise_refused';

/** How the probe that measured was run (see {@link Baseline.measured}). */
export interface ProbeDepth {
  /** It did not dip: it measured at the load itself. */
  open: boolean;
  /** The dip's depth (a share of the limit; 1 for an open probe). */
  depth: number;
  /** It was the deepest dip (`minProbeDepth`): a rise it reads is trusted in full. */
  deepest: boolean;
}

/** The no-load RTT estimate of one downstream (see the file comment for its rule). */
export class Baseline {
  /**
   * The current baseline in ms, always > 0; `Infinity` until the first positive, finite RTT (RTTs of 0,
   * which a millisecond clock reports for fast calls, never become the baseline).
   */
  value = Infinity;
  /**
   * The last probe lowered the baseline to two thirds or less: the limit was set against a baseline
   * that was mostly queueing (a start far above the capacity), and should not stay above the dip.
   */
  collapsed = false;

  /** See the constructor's `fresh`. */
  readonly #fresh: number;
  #low1 = Infinity;
  #low2 = Infinity;
  /** The average RTT outside probes (at the full limit), from 0. */
  #loaded = 0;
  /** The baseline and `#loaded` when the running (or last) probe started. */
  #atProbe = Infinity;
  #loadedAtProbe = 0;
  /** End time of the last usable sample within {@link FRESH} of the baseline (see {@link BASELINE_MAX_AGE_MS}). */
  #freshAt = Number.NaN;

  /**
   * @param fresh - how far above the baseline (a factor) the RTTs may be and still keep it fresh: an
   *   algorithm whose rule tolerates less (Gradient's `tolerance`) passes that, or a latency that
   *   moved up by less than {@link FRESH} would hold its limit for good without ever going stale.
   */
  constructor(fresh = FRESH) {
    this.#fresh = fresh;
  }

  /** The baseline when the running (or last) probe started: a probe's move is judged against it. */
  get atProbe(): number {
    return this.#atProbe;
  }

  /**
   * Feeds one sample: a usable RTT below the second lowest may lower the baseline. Outside a probe it
   * also counts into the average RTT at the full limit and the freshness.
   * @param probing - a probe is running (its samples measure the dip, not the full limit).
   * @returns whether the baseline is stale now (never while probing).
   */
  observe(sample: Sample, probing: boolean): boolean {
    const rtt = sample.rtt;
    // Only a new low can move the baseline between probes (a probe's end resets the lows).
    if (rtt < this.#low2 && !sample.dropped && rttUsable(rtt)) this.#lower(rtt);
    if (probing || sample.dropped || !rttUsable(rtt)) return false;
    // The RTT at the full limit, for the probes' end (an average over about 16 samples).
    this.#loaded += (rtt - this.#loaded) / LOADED_SAMPLES;
    const end = sample.startTime + rtt;
    // Fresh: this sample and the recent average are both near the baseline (one sample at the low
    // edge of the noise must not keep a baseline the latency has left fresh).
    const near = this.value * this.#fresh;
    if ((rtt <= near && this.#loaded <= near) || Number.isNaN(this.#freshAt)) {
      this.#freshAt = end;
      return false;
    }
    return end - this.#freshAt >= BASELINE_MAX_AGE_MS;
  }

  /**
   * A probe starts at `at` (clock ms): its move will be judged against the baseline now. The deepest
   * probe, for a stale baseline (`stale`), makes it fresh from `at`: the next expiry is a full age
   * away, whatever it finds.
   */
  probeStarted(at: number, stale: boolean): void {
    this.#atProbe = this.value;
    this.#loadedAtProbe = this.#loaded;
    if (stale) this.#freshAt = at;
  }

  /** A probe ended (with or without a measurement): the lows start over. */
  probeEnded(): void {
    this.collapsed = false;
    this.#low1 = Infinity;
    this.#low2 = Infinity;
  }

  /**
   * A probe measured `candidate` (the median of its clean samples, whose highest and lowest differ by
   * `spread`), ending at `at` (clock ms): the baseline is fresh from then, and moves by the rule of the
   * file comment.
   */
  measured(candidate: number, spread: number, at: number, probe: ProbeDepth): ProbeResult {
    this.#freshAt = at;
    // Judge the move against the baseline the probe started from: clean probe samples also lower
    // `value` through the between-probes path while the dip runs.
    const before = this.#atProbe;
    // A move must also exceed the probe's own noise (the spread of its samples, counted up to a
    // quarter of the baseline): two medians of a downstream with ±10 % jitter differ by 10 % now
    // and then, and each such "move" would schedule a deeper dip soon (down to a limit of 1).
    // Beyond a quarter it is a move whatever the spread (a dip that still queues spreads wide).
    const noise = Math.min(spread, NOISE_MAX * before);
    const moved: ProbeResult =
      Math.abs(candidate - before) > NOISE_MAX * before ? 'moved_far' : 'moved';
    if (candidate < before * 0.9 && before - candidate > noise) {
      this.value = candidate;
      this.collapsed = candidate <= before * COLLAPSE;
      return moved;
    }
    if (candidate > before * 1.1 && candidate - before > noise) {
      // An open probe measured at the load, which may queue: it cannot raise the baseline.
      if (probe.open) return 'rise_refused';
      this.value = probe.deepest ? candidate : Math.min(candidate, before * 2);
      return moved;
    }
    // Within ±10 %, a shallow dip (above half the limit) refreshes the baseline only when it
    // measured the RTT of the full limit (no queue to drain there): at a limit far above the
    // capacity such a dip still queues a little, and following it would drift upward; and letting
    // it only lower the baseline would bias it to the low edge of the noise. An open probe measures
    // at the load itself: the same rule.
    if (probe.depth <= 0.5 || candidate >= this.#loadedAtProbe * SAME_RTT) this.value = candidate;
    return 'kept';
  }

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
}
