// The probe options of Vegas and Gradient (kept apart from ProbeSchedule, which reads them).
import type { Random } from '../internal/random.js';

/** @internal The option names of {@link NoLoadRttOptions} (the delay-based algorithms take them too). */
export const NO_LOAD_RTT_KEYS = [
  'probeMultiplier',
  'recheckMultiplier',
  'probeDepth',
  'minProbeDepth',
  'probeSamples',
  'random',
] as const;

/**
 * The probe options of {@link VegasLimit} and {@link GradientLimit} (part of their options): how their
 * probe schedule ({@link ProbeSchedule}) spaces and sizes the short dips that relearn the no-load RTT
 * ({@link Baseline}).
 */
export interface NoLoadRttOptions {
  /**
   * A probe dip starts every `U[0.5, 1) × probeMultiplier` rounds (a round is `limit` samples) while
   * the baseline is stable.
   * Netflix's Vegas uses 30: often enough to relearn a lasting shift, rare enough (≈ 1 dip per 30
   * rounds of the limit) to cost about 1 % of throughput.
   * @default 30
   */
  probeMultiplier?: number;
  /**
   * Spacing multiplier used instead of `probeMultiplier` right after a probe that moved the
   * baseline (and half of it for the first probe), so a wrong baseline is corrected within a few
   * rounds, not hundreds.
   * @default 2
   */
  recheckMultiplier?: number;
  /**
   * Depth of a normal dip: the limit falls to `floor(limit × probeDepth)` while probing. Three
   * quarters of the limit drain the queue of a limit up to a third above the downstream's capacity
   * (the algorithms settle within that), and cost half the throughput of a dip to half. A dip
   * shallower than half may confirm or lower the baseline but not raise it within ±10 %, so the
   * first probe and every fourth one dip to half at most; a move (beyond ±10 %) is checked by
   * deeper probes. In (0, 1].
   * @default `max(0.75, minProbeDepth)`
   */
  probeDepth?: number;
  /**
   * Deepest dip, used when probes keep moving the baseline (each move halves the depth, from at
   * most 0.5, down to this). A rise measured at this depth is trusted in full; a rise at a shallower dip is capped
   * at ×2 per probe, so queueing at a shallow dip cannot inflate the baseline. In (0, probeDepth].
   * @default `min(0.125, probeDepth)`
   */
  minProbeDepth?: number;
  /**
   * Clean samples (started during the dip with in-flight ≤ the dip limit) a probe collects before it
   * ends; the baseline candidate is their median.
   * @default 5
   */
  probeSamples?: number;
  /** Randomness for the probe spacing jitter, `() => [0, 1)`. @default Math.random */
  random?: Random;
}
