/** At most this many probes beyond the limit while every call in flight is late… */
export const MAX_LATE_PROBES = 3;

/**
 * …or more, while the limit plus the probes is under this many units: a limit that collapsed to its
 * floor (Vegas: 1) still keeps this many calls out, so with a slowdown latency of L one of them ends,
 * and can see a recovery, every L / LATE_PROBE_CAPACITY (375 ms at S1's 3 s, where the floor plus
 * three probes took 750 ms).
 */
export const LATE_PROBE_CAPACITY = 8;

/** The most probes beyond `limit` (see {@link MAX_LATE_PROBES}, {@link LATE_PROBE_CAPACITY}). */
export function maxLateProbes(limit: number): number {
  return Math.max(MAX_LATE_PROBES, LATE_PROBE_CAPACITY - limit);
}

/**
 * At least this long (ms) between two such probes (and a new one only once the last is late too);
 * half as long while the capacity is under {@link LATE_PROBE_CAPACITY}.
 */
export const LATE_PROBE_SPACING_MS = 1_000;

/**
 * A slowdown that lasts this long (ms) from the first late probe is no longer a spike to ride out but
 * a latency that moved: no new probe, and the extra units go as the late calls end, so the
 * algorithm's deepest probe (a baseline left stale for `BASELINE_MAX_AGE_MS`, 10 s) measures at its
 * own small limit and relearns the baseline.
 */
export const LATE_PROBES_FOR_MS = 9_000;

/**
 * @internal Probes beyond the capacity while a downstream is sick (issue 12, S1's recovery). When the
 * limit has collapsed to its floor, the one call it lets through sits on a downstream that takes,
 * say, 3 s: the first fast answer after the downstream recovers comes only when that call ends, up to
 * 3 s later. So while every call in flight is late (and the limiter is full), one more call is let
 * through, at most once per {@link LATE_PROBE_SPACING_MS} (half that while the capacity is under
 * {@link LATE_PROBE_CAPACITY}) and never more than {@link maxLateProbes} beyond the limit: their starts
 * are staggered through the slowdown, and one of them sees the recovery within about a second. Once a
 * call comes back on time (before it was late), no new one starts, the late calls still out (and those
 * reported late afterwards that started before that answer) are written off
 * ({@link LateProbes.writeOff}), and the extra units go as they end. While the slowdown lasts,
 * restarts are paced ({@link LateProbes.paceEnd}) so that the calls' ends spread out.
 */
export class LateProbes {
  /** Units of capacity granted beyond the limit for these probes (0 to `maxLateProbes(limit)`). */
  extra = 0;
  /** Units freed by late calls in a slowdown, held back to pace the restarts (see {@link paceEnd}). */
  held = 0;
  /** While pacing: when the next start may happen, and the spacing of starts. */
  #nextStartAt = -Infinity;
  #gap = 0;
  #at = -Infinity;
  /** When the first probe of this slowdown started. */
  #since = Number.NaN;
  /**
   * A call came back on time since the probes began, or they ran for LATE_PROBES_FOR_MS: no new
   * probe; the extra units wind down.
   */
  #recovered = false;
  /** The probes ran for LATE_PROBES_FOR_MS: none again until a call comes back on time. */
  #blocked = false;

  /**
   * Every call in flight is late at `now` under a limit of `limit`; `full`: the limiter is exactly
   * full (in flight equals the capacity: a probe gets the one unit it adds at once, so their starts
   * stay staggered).
   * @returns whether one more probe is allowed now (`extra` counts it).
   */
  allLate(now: number, full: boolean, limit: number): boolean {
    if (this.extra > 0 && now - this.#since >= LATE_PROBES_FOR_MS) {
      this.#recovered = true;
      this.#blocked = true;
      // (Units still held come back one per paced gap, at the ticks.)
    }
    if (
      this.#blocked ||
      this.#recovered ||
      !full ||
      this.extra >= maxLateProbes(limit) ||
      now - this.#at <
        (limit + this.extra < LATE_PROBE_CAPACITY
          ? LATE_PROBE_SPACING_MS / 2
          : LATE_PROBE_SPACING_MS)
    ) {
      return false;
    }
    if (this.extra === 0) this.#since = now;
    this.extra++;
    this.#at = now;
    return true;
  }

  /** Probes are out and no call has come back on time since the first one began. */
  get probing(): boolean {
    return this.extra > 0 && !this.#recovered;
  }

  /**
   * A call came back on time: the downstream answers again. No new probe; if it ends a slowdown
   * (probes were out: every call in flight had been late), the late calls still out are written off
   * ({@link LateProbes.writeOff}). Outside such an episode late calls keep their units: calls that
   * hang now and then beside fast ones must keep counting.
   * @param lateOut - calls reported late and still in flight.
   * @returns whether the extra units grew (the capacity follows).
   */
  fresh(lateOut: number): boolean {
    this.#blocked = false;
    return this.probing ? this.writeOff(lateOut) : this.#unpace();
  }

  /** The capacity beyond the limit: the probes' extra units less those held back for pacing. */
  get offset(): number {
    return this.extra - this.held;
  }

  /**
   * A late call ended at `now` after `rtt` ms while a slowdown is on (probes out, no call back on
   * time), under a limit of `limit` (`capacity` adds the probes' extra units). A freed unit is taken
   * at once by the next call, so calls that started together keep ending together, one slowdown
   * latency apart: the first fast answer after the downstream recovers waits for the next such end
   * (up to a second at S1, with 8 calls of 3 s ending in clusters). So starts are paced: at most one
   * per `rtt / capacity` ms; a unit freed sooner is held back until the next start is due
   * ({@link paceTick}), which spreads the ends evenly.
   * @returns whether the unit is held back (the capacity shrinks by one).
   */
  paceEnd(now: number, rtt: number, limit: number): boolean {
    if (!this.probing) return false;
    const capacity = limit + this.extra;
    this.#gap = rtt / Math.max(1, capacity);
    // Never the last unit: a call can always start (and its ticks give the held units back).
    if (now < this.#nextStartAt && this.held < capacity - 1) {
      this.held++;
      return true;
    }
    this.#nextStartAt = now + this.#gap;
    return false;
  }

  /** A tick at `now`: gives back one held unit when its start is due. @returns whether one went. */
  paceTick(now: number): boolean {
    if (this.held === 0 || now < this.#nextStartAt) return false;
    this.held--;
    this.#nextStartAt = now + this.#gap;
    return true;
  }

  /** Pacing ends: every held unit goes back. @returns whether any was held. */
  #unpace(): boolean {
    const had = this.held > 0;
    this.held = 0;
    this.#nextStartAt = -Infinity;
    return had;
  }

  /**
   * Late calls that are old news (they started before the call that came back on time at the end of
   * a slowdown) are written off: the extra units grow to their number, so fresh calls get the whole
   * limit at once instead of waiting for the slots those calls hold until they end (3 s at S1: a
   * second of lost goodput, and a probe dip they fill could admit nothing). They are bounded by
   * the capacity at the recovery (they started before it); later late calls are not written off
   * (outside a slowdown, calls that hang now and then beside fast ones must keep counting). The
   * units go as the late calls end.
   * @param lateOut - calls reported late and still in flight, all old news.
   * @returns whether the extra units grew (the capacity follows).
   */
  writeOff(lateOut: number): boolean {
    let grew = lateOut > this.extra;
    if (grew) this.extra = lateOut;
    if (this.extra > 0) this.#recovered = true;
    if (this.#unpace()) grew = true;
    return grew;
  }

  /** A call reported late ended. @returns whether an extra unit went (the capacity shrinks by one). */
  lateEnded(): boolean {
    if (!this.#recovered || this.extra === 0) return false;
    if (--this.extra === 0) {
      this.#recovered = false;
      this.#at = -Infinity;
    }
    return true;
  }
}
