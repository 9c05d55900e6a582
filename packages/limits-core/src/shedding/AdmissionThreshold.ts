import { cohortOf, periodSeed } from './cohort.js';
import { CRITICALITIES, type Criticality, criticalityLevel } from './criticality.js';
import type { ShedThreshold } from './options.js';

/** @internal The checked shedding options. */
export interface ResolvedShedding {
  targetWaitMs: number;
  intervalMs: number;
  cohorts: number;
  resaltMs: number;
  salt: string;
  /** The wall-clock time in ms (the period of the cohort hash is read from it). */
  wallNow: () => number;
}

/** @internal What the limiter tells the threshold at the end of an interval. */
export interface QueueState {
  /** Waiters in the queue now. */
  queued: number;
  /** Age of the oldest waiter, in ms (0 when the queue is empty). */
  oldestMs: number;
  /** Units that may be in flight. */
  capacity: number;
  /** Mean time a permit is held, in ms (0 when nothing was measured yet). */
  serviceMs: number;
}

/** The queue the threshold steers towards, as a share of what `targetWaitMs` allows. */
const QUEUE_SHARE = 0.75;
/** Intervals over which the queue is steered back to that length. */
const STEER_INTERVALS = 8;
/** Weight of the newest interval in the smoothed arrival histogram. */
const SMOOTHING = 0.5;
/** A rise right after a fall must move more than this many standard deviations of the admitted flow. */
const DEADBAND = 2;
/** After this many idle intervals with an empty queue, the history is forgotten. */
const FORGET_INTERVALS = 16;

/**
 * @internal The admission threshold of a shedding limiter: decides, under overload, *who* is refused,
 * while the limit algorithm decides *how many* run at once.
 *
 * **Order.** Every call has a rank, `(level × 2 + (first attempt ? 1 : 0)) × cohorts + cohort`:
 * criticality first (`sheddable` 0 … `critical_plus` 3), then first attempts above retries of the
 * same level, then the cohort its key hashes to. The threshold `τ` is a real number: calls whose
 * rank `r` has `r + 1 ≤ τ` are refused, calls with `r ≥ τ` pass, and of the one rank in between, the
 * share `r + 1 − τ` passes (spread evenly over its calls). It never passes the first attempts of
 * `critical_plus` (`7 × cohorts`). Because the order is total and the threshold one point in it, a
 * higher level is never refused while a lower one is admitted.
 *
 * **Signal.** Per interval (`intervalMs`) the limiter reports every arrival's rank and every grant,
 * and at the end the queue's state. The delay is the time the queue takes to drain at the
 * interval's outflow (`queued / outflow`, the oldest waiter's age when nothing was granted): unlike
 * the wait of the granted calls, it does not read low while the highest ranks overtake the queue.
 *
 * **Control.** The admitted flow aimed at is the outflow plus what steers the queue towards 3/4 of
 * the target wait in {@link STEER_INTERVALS} intervals; the threshold is put where the arrivals
 * ranked above it (a histogram per rank, smoothed over intervals) fit in it. Three bands:
 * - overloaded (delay > `targetWaitMs`): it may only rise, at once to where the histogram says (a
 *   spike is met within an interval), never cutting the admitted flow under half the outflow;
 * - relaxed (delay ≤ `targetWaitMs / 2`): it may only fall, by at least the spare capacity
 *   (`capacity / serviceMs` per ms, less the outflow);
 * - in between: it holds.
 *
 * A rise that follows a fall must be significant: the arrivals it would refuse must exceed twice the
 * Poisson deviation of the admitted flow (`2 √admitted`), else it holds. Without that the threshold
 * follows the noise of the histogram at a steady overload, shedding other users each interval. Falls
 * are never held back, so spare capacity is always given out.
 *
 * This is DAGOR's scheme (a compound business/user priority threshold moved by the queueing delay)
 * with its fixed steps (α 5 % down, β 1 % up) replaced by steps read off the arrival histogram: the
 * threshold lands where the outflow says in one interval rather than creeping through a 12× spike.
 *
 * **Liveness.** A relaxed interval lowers the threshold unless the arrivals above it already fill
 * the outflow plus the spare capacity; with nothing admitted and the queue empty the spare is the
 * whole capacity. So a threshold stays up only while the service is full. After
 * {@link FORGET_INTERVALS} idle intervals with an empty queue it is back at 0.
 */
export class AdmissionThreshold {
  readonly #o: ResolvedShedding;
  readonly #cohorts: number;
  readonly #ranks: number;
  readonly #maxRank: number;
  /** Arrivals per rank in the current interval. */
  readonly #seen: Float64Array;
  /** Arrivals per rank per interval, smoothed. */
  readonly #smooth: Float64Array;
  /** The threshold `τ`. */
  #rank = 0;
  /** The direction of its last move: 1 up, -1 down, 0 none yet. */
  #direction = 0;
  /** Error diffusion of the boundary rank's admitted share. */
  #carry = 0;
  #intervalStart: number;
  /** When the current interval ends (clock ms). */
  tickAt: number;
  #admitted = 0;
  #granted = 0;
  /** The cohort of the next call without a key (those are spread by rotation). */
  #rotation = 0;
  #period = Number.NaN;
  #seed = 0;

  constructor(o: ResolvedShedding, now: number) {
    this.#o = o;
    this.#cohorts = o.cohorts;
    this.#ranks = 8 * o.cohorts;
    this.#maxRank = 7 * o.cohorts;
    this.#seen = new Float64Array(this.#ranks);
    this.#smooth = new Float64Array(this.#ranks);
    this.#intervalStart = now;
    this.tickAt = now + o.intervalMs;
    this.#resalt();
  }

  /** The threshold `τ` (0: nothing is refused). */
  get rank(): number {
    return this.#rank;
  }

  /** The rank of a call (see the class comment). */
  rankOf(
    criticality: Criticality | undefined,
    attempt: number | undefined,
    key: string | undefined,
  ): number {
    const level = criticality === undefined ? 2 : criticalityLevel(criticality);
    const first = attempt === undefined || attempt <= 1 ? 1 : 0;
    const cohorts = this.#cohorts;
    let cohort: number;
    if (key !== undefined) {
      cohort = cohortOf(this.#seed, key, cohorts);
    } else {
      cohort = this.#rotation;
      this.#rotation = cohort + 1 === cohorts ? 0 : cohort + 1;
    }
    return (level * 2 + first) * cohorts + cohort;
  }

  /** Counts the arrival of a call of `rank`. @returns whether the threshold admits it. */
  admits(rank: number): boolean {
    this.#seen[rank]++;
    const tau = this.#rank;
    let admitted: boolean;
    if (rank >= tau) {
      admitted = true;
    } else if (rank + 1 <= tau) {
      admitted = false;
    } else {
      this.#carry += rank + 1 - tau;
      admitted = this.#carry >= 1;
      if (admitted) this.#carry -= 1;
    }
    if (admitted) this.#admitted++;
    return admitted;
  }

  /** Whether a queued call of `rank` is wholly below the threshold (it is then refused). */
  below(rank: number): boolean {
    return rank + 1 <= this.#rank;
  }

  /** A permit was granted. */
  granted(): void {
    this.#granted++;
  }

  /**
   * Ends the interval(s) up to `now` and moves the threshold.
   * @returns whether the threshold rose (the limiter then refuses the waiters now below it).
   */
  tick(now: number, queue: QueueState): boolean {
    const o = this.#o;
    const intervals = Math.max(1, (now - this.#intervalStart) / o.intervalMs);
    const granted = this.#granted / intervals;
    const admitted = this.#admitted / intervals;
    this.#smoothen(intervals);
    const before = this.#rank;
    let rank = before;
    const delay = granted > 0 ? (queue.queued * o.intervalMs) / granted : queue.oldestMs;
    if (intervals >= FORGET_INTERVALS && queue.queued === 0) {
      this.#smooth.fill(0);
      rank = 0;
    } else if (delay > o.targetWaitMs || delay <= o.targetWaitMs / 2) {
      const steady = (granted * o.targetWaitMs * QUEUE_SHARE) / o.intervalMs;
      const steer = granted + (steady - queue.queued) / STEER_INTERVALS;
      if (delay > o.targetWaitMs) {
        rank = Math.max(before, this.#rankFor(Math.max(granted / 2, steer)));
      } else {
        const full =
          queue.serviceMs > 0 ? (queue.capacity * o.intervalMs) / queue.serviceMs : Infinity;
        const spare = Math.max(0, full - granted);
        rank = Math.min(before, this.#rankFor(Math.max(steer, admitted + spare)));
      }
      rank = Math.min(rank, this.#maxRank);
      if (rank > before && this.#direction < 0 && !this.#significant(before, rank)) rank = before;
    }
    if (rank !== before) this.#direction = rank > before ? 1 : -1;
    this.#rank = rank;
    this.#admitted = 0;
    this.#granted = 0;
    this.#intervalStart = now;
    this.tickAt = now + o.intervalMs;
    this.#resalt();
    return rank > before;
  }

  /** Where the threshold stands, for `snapshot()` and the `threshold` event. */
  view(): ShedThreshold {
    const cohorts = this.#cohorts;
    const rank = this.#rank;
    const whole = Math.floor(rank);
    const band = Math.floor(whole / cohorts);
    return {
      rank,
      ranks: this.#ranks,
      criticality: rank === 0 ? undefined : levelName(band >> 1),
      firstAttempts: (band & 1) === 1,
      cohort: whole % cohorts,
    };
  }

  /** Folds the interval's arrivals (per interval) into the smoothed histogram. */
  #smoothen(intervals: number): void {
    const seen = this.#seen;
    const smooth = this.#smooth;
    // Idle intervals decay the history as intervals without arrivals would.
    const keep = (1 - SMOOTHING) ** Math.min(FORGET_INTERVALS, intervals);
    const weight = (1 - keep) / intervals;
    for (let r = 0; r < smooth.length; r++) {
      smooth[r] = smooth[r] * keep + seen[r] * weight;
      seen[r] = 0;
    }
  }

  /** The threshold at which the smoothed arrivals it admits come to `budget` (fractional). */
  #rankFor(budget: number): number {
    const smooth = this.#smooth;
    let sum = 0;
    for (let r = smooth.length - 1; r >= 0; r--) {
      const next = sum + smooth[r];
      if (next > budget) return r + 1 - (budget - sum) / smooth[r];
      sum = next;
    }
    return 0;
  }

  /**
   * Whether raising the threshold from `from` to `to` refuses more than the noise: the arrivals
   * between the two exceed {@link DEADBAND} standard deviations of a Poisson count of the arrivals
   * admitted now.
   */
  #significant(from: number, to: number): boolean {
    const smooth = this.#smooth;
    const admitted = this.#mass(from, smooth.length);
    return this.#mass(from, to) > DEADBAND * Math.sqrt(Math.max(1, admitted));
  }

  /** The smoothed arrivals between two (fractional) thresholds. */
  #mass(from: number, to: number): number {
    const smooth = this.#smooth;
    let sum = 0;
    for (let r = Math.floor(from); r < Math.ceil(to) && r < smooth.length; r++) {
      const lo = Math.max(from, r);
      const hi = Math.min(to, r + 1);
      if (hi > lo) sum += smooth[r] * (hi - lo);
    }
    return sum;
  }

  /** Re-reads the period of the cohort hash (and its seed when a new period began). */
  #resalt(): void {
    const o = this.#o;
    const period = o.resaltMs === Infinity ? 0 : Math.floor(o.wallNow() / o.resaltMs);
    if (period === this.#period) return;
    this.#period = period;
    this.#seed = periodSeed(o.salt, period);
  }
}

/** The level named by its position from the bottom (0 `sheddable` … 3 `critical_plus`). */
function levelName(level: number): Criticality {
  return CRITICALITIES[3 - level] as Criticality;
}
