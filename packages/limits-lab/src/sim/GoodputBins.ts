/** Width of a goodput bin, in ms. */
export const BIN_MS = 250;
/** How long goodput must hold at 90 % of its pre-spike rate for a spike to count as recovered from. */
const HOLD_MS = 1_000;
/** The share of the pre-spike goodput that counts as recovered. */
const RECOVERED_SHARE = 0.9;
/** The pre-spike rate is measured over at most this long before the spike. */
const BEFORE_MS = 4_000;
/** ...starting at least this long after the run's start or the previous spike's end (warm-up). */
const SETTLE_MS = 1_000;

/** A span during which the downstream is known to be sick: from the model, or `--spike` for a replay. */
export interface Spike {
  /** Start, in ms since the run's start. */
  fromMs: number;
  /** End, in ms since the run's start (> `fromMs`). */
  toMs: number;
}

/** How fast goodput came back after one spike. */
export interface SpikeRecovery extends Spike {
  /** Successes per second over the up to 4 s before the spike (from 1 s after the run's start or the previous spike's end). */
  beforePerS: number;
  /** Successes per second during the spike. */
  duringPerS: number;
  /**
   * Ms from the spike's end to the start of the first 250 ms bin from which goodput stays ≥ 90 % of
   * `beforePerS` for 1 s (every bin of that second); `null` when that never happens within the run.
   */
  recoveryMs: number | null;
}

/**
 * Successes counted by completion time in 250 ms bins, for the recovery after each spike. Memory
 * grows with the run's length (one number per 250 ms: 14 KiB per simulated hour), not with calls.
 */
export class GoodputBins {
  #bins = new Float64Array(1_024);
  #used = 0;

  /** Counts one success that ended at `atMs`. */
  add(atMs: number): void {
    const i = Math.floor(atMs / BIN_MS);
    if (i >= this.#bins.length) {
      const grown = new Float64Array(Math.max(i + 1, this.#bins.length * 2));
      grown.set(this.#bins);
      this.#bins = grown;
    }
    (this.#bins as Float64Array)[i]++;
    if (i + 1 > this.#used) this.#used = i + 1;
  }

  /** Successes per second over whole bins from `fromMs` to `toMs` (rounded to bins). */
  rate(fromMs: number, toMs: number): number {
    const from = Math.max(0, Math.round(fromMs / BIN_MS));
    const to = Math.round(toMs / BIN_MS);
    if (to <= from) return Number.NaN;
    let sum = 0;
    for (let i = from; i < to; i++) sum += this.#bins[i] ?? 0;
    return sum / (((to - from) * BIN_MS) / 1000);
  }

  /** The recovery after each spike (sorted by start) of a run that lasted `durationMs`. */
  recoveries(spikes: readonly Spike[], durationMs: number): SpikeRecovery[] {
    const sorted = spikes.slice().sort((a, b) => a.fromMs - b.fromMs);
    const out: SpikeRecovery[] = [];
    let previousEnd = 0;
    for (const spike of sorted) {
      const beforeFrom = Math.max(previousEnd + SETTLE_MS, spike.fromMs - BEFORE_MS);
      const beforePerS = this.rate(Math.min(beforeFrom, spike.fromMs - BIN_MS), spike.fromMs);
      const target = RECOVERED_SHARE * beforePerS;
      let recoveryMs: number | null = null;
      const first = Math.ceil(spike.toMs / BIN_MS) * BIN_MS;
      for (let t = first; t + HOLD_MS <= durationMs && Number.isFinite(target); t += BIN_MS) {
        let holds = true;
        for (let u = t; u < t + HOLD_MS; u += BIN_MS) {
          if (this.rate(u, u + BIN_MS) < target) {
            holds = false;
            break;
          }
        }
        if (holds) {
          recoveryMs = t - spike.toMs;
          break;
        }
      }
      out.push({
        fromMs: spike.fromMs,
        toMs: spike.toMs,
        beforePerS,
        duringPerS: this.rate(spike.fromMs, spike.toMs),
        recoveryMs,
      });
      previousEnd = spike.toMs;
    }
    return out;
  }
}
