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
 * @internal Probes beyond the capacity while a downstream is sick. When the
 * limit has collapsed to its floor, the one call it lets through sits on a downstream that takes,
 * say, 3 s: the first fast answer after the downstream recovers comes only when that call ends, up to
 * 3 s later. So during a slowdown the limiter keeps up to {@link maxLateProbes} units beyond the limit
 * (a capacity of {@link LATE_PROBE_CAPACITY} at Vegas's floor) and starts calls on them at an even
 * pace, so that one of them ends, and can see a recovery, every slow latency ÷ capacity (375 ms at
 * S1's 3 s).
 *
 * A slowdown is on once probes are out. They begin in one of two ways:
 * - every call in flight is late and the limiter is exactly full (a tick, {@link LateProbes.allLate}):
 *   one more call is let through, at most once per {@link LATE_PROBE_SPACING_MS} (half that while the
 *   capacity is under {@link LATE_PROBE_CAPACITY}) and never more than {@link maxLateProbes} beyond the
 *   limit, so their starts are staggered;
 * - a late call ends while the limiter was full and every call still in flight is late
 *   ({@link LateProbes.paceEnd}): the calls a spike caught (they filled the limit before it collapsed)
 *   end together, one slow latency after it began; their units are kept and restarted at the pace.
 *
 * The pace: once a late call has ended, its latency gives the gap between starts, latency ÷ capacity
 * (the capacity at its most, the limit plus {@link maxLateProbes}); the units up to that capacity
 * are granted at once (never more than the calls that were out), and a freed or new unit that is
 * not due is held back until its start is ({@link LateProbes.paceTick}, never the last unit). Starts
 * then fall on an even grid, whatever order the slow calls end in: started at once, a freed unit
 * follows the ends, and calls that started together (or whose slow latencies jitter, ±10 % of 3 s
 * at S1) end in clusters with long gaps between them, so the first fast answer after the recovery
 * waited for the next end after a gap (S1, 12 rounds each, the first call sent after the recovery:
 * 259 → 157 ms on average with an 8 s spike (196 in a second run), 257 → 219 ms with 7 s, 138 → 132 ms
 * with 6 s). Once a call comes back on time (before it was
 * late), no new one starts, the late calls still out (and those reported late afterwards that
 * started before that answer) are written off ({@link LateProbes.writeOff}), and the extra units go
 * as they end.
 */
export class LateProbes {
  /** Units of capacity granted beyond the limit for these probes (0 to `maxLateProbes(limit)`). */
  extra = 0;
  /** Of `extra`, units held back until their paced start is due (see {@link paceEnd}). */
  held = 0;
  /** While pacing: when the next start is due, and the gap between starts (0: not known yet). */
  #nextStartAt = -Infinity;
  #gap = 0;
  /** When the last probe was let through by {@link allLate}. */
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
    if (this.extra > 0 && !this.#blocked && now - this.#since >= LATE_PROBES_FOR_MS) {
      // A latency that moved: no new start. The held units go at once (none of them is out), the
      // others as their late calls end.
      this.#recovered = true;
      this.#blocked = true;
      // (Held units may be units of the limit itself: only the extra ones go.)
      this.extra = Math.max(0, this.extra - this.held);
      this.held = 0;
      return this.extra === 0 ? this.#reset() : false;
    }
    if (
      this.#blocked ||
      this.#recovered ||
      !full ||
      this.extra >= maxLateProbes(limit) ||
      now - this.#at <
        (limit + this.extra < LATE_PROBE_CAPACITY
          ? LATE_PROBE_SPACING_MS / 2
          : LATE_PROBE_SPACING_MS) ||
      now < this.#nextStartAt
    ) {
      return false;
    }
    if (this.extra === 0) this.#since = now;
    this.extra++;
    this.#at = now;
    if (this.#gap > 0) this.#started(now);
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
   * @returns whether the extra units changed (the capacity follows).
   */
  fresh(lateOut: number): boolean {
    this.#blocked = false;
    return this.probing ? this.writeOff(lateOut) : this.#unpace();
  }

  /**
   * The capacity beyond `max(limit, probeSlots)` under a limit of `limit`: the extra units, at most
   * {@link maxLateProbes} of that limit, less the units held back for pacing (negative while pacing
   * holds back units of the limit itself).
   */
  offset(limit: number): number {
    return Math.min(this.extra, maxLateProbes(limit)) - this.held;
  }

  /**
   * The capacity under a limit of `limit`: `max(limit, probeSlots)` plus {@link LateProbes.offset},
   * never below `probeSlots`, nor below 1 while that base allows a call: units held back for pacing
   * never take the last unit, even after the limit shrank under them (they would come back only on
   * ticks, and ticks run only while calls are in flight). Held units beyond what the limit leaves are
   * dropped.
   */
  capacity(limit: number, probeSlots: number): number {
    const base = Math.max(limit, probeSlots);
    const floor = Math.max(probeSlots, Math.min(1, base));
    const room = base + Math.min(this.extra, maxLateProbes(limit)) - floor;
    if (this.held > room) this.held = Math.max(0, room);
    return Math.max(floor, base + this.offset(limit));
  }

  /**
   * A late call ended at `now` after `rtt` ms under a limit of `limit`.
   * @param inflight - the units in flight after this end.
   * @param room - the capacity less the units in flight, after this end (1: the limiter was exactly
   *   full and this end freed one unit; 0 or less: it was over its capacity).
   * @param slowdown - every call still in flight is late (and one is).
   * @returns whether the capacity changed (units granted or held back).
   */
  paceEnd(
    now: number,
    rtt: number,
    limit: number,
    inflight: number,
    room: number,
    slowdown: boolean,
  ): boolean {
    if (!this.probing) {
      // The calls a spike caught end: if they held the limiter full and the rest are late too, a
      // slowdown is on, and their units are kept for the probes.
      // (`room` is NaN where a partition's gate decides: never.)
      if (!slowdown || !(room <= 1) || this.#blocked || this.#recovered) return false;
      this.#since = now;
    }
    // The unit this end freed (units that were free before stay so: a start that was due and not
    // taken yet), and the units up to the capacity the probes may reach, but not beyond the calls
    // that were out before this end (a limit that has not collapsed yet keeps its probes to what the
    // spike caught).
    let free = Math.min(room, 1);
    let changed = false;
    const more = Math.min(maxLateProbes(limit), inflight + 1 - limit) - this.extra;
    if (more > 0) {
      free += more;
      this.extra += more;
      changed = true;
    }
    this.#gap = rtt / (limit + this.extra);
    if (free <= 0) return changed;
    // One start now if it is due; the other free units wait for theirs (never the last unit: a call
    // can always start, and its ticks give the held units back).
    if (now >= this.#nextStartAt) {
      free--;
      this.#started(now);
    }
    const hold = Math.min(free, limit + this.extra - 1 - this.held);
    if (hold <= 0) return changed;
    this.held += hold;
    return true;
  }

  /** A tick at `now`: gives back one held unit when its start is due. @returns whether one went. */
  paceTick(now: number): boolean {
    if (this.held === 0 || now < this.#nextStartAt) return false;
    this.held--;
    this.#started(now);
    return true;
  }

  /**
   * A paced start at `now`: the next one is a gap after the last one due (an even grid), and at
   * least half a gap from now.
   */
  #started(now: number): void {
    const gap = this.#gap;
    const next = this.#nextStartAt + gap;
    this.#nextStartAt = next > now + gap / 2 ? next : now + gap;
  }

  /** Pacing ends: every held unit goes back. @returns whether any was held. */
  #unpace(): boolean {
    const had = this.held > 0;
    this.held = 0;
    this.#nextStartAt = -Infinity;
    return had;
  }

  /** The episode is over (no extra unit left): the next slowdown starts afresh. @returns false */
  #reset(): false {
    this.#recovered = false;
    this.#at = -Infinity;
    this.#gap = 0;
    this.#nextStartAt = -Infinity;
    return false;
  }

  /**
   * Late calls that are old news (they started before the call that came back on time at the end of
   * a slowdown) are written off: the extra units become their number, so fresh calls get the whole
   * limit at once instead of waiting for the slots those calls hold until they end (3 s at S1: a
   * second of lost goodput, and a probe dip they fill could admit nothing). They are bounded by
   * the capacity at the recovery (they started before it); later late calls are not written off
   * (outside a slowdown, calls that hang now and then beside fast ones must keep counting). The
   * units go as the late calls end; units granted for probes that are not held by a late call (held
   * back, or a probe that came back on time) go at once.
   * @param lateOut - calls reported late and still in flight, all old news.
   * @returns whether the capacity changed.
   */
  writeOff(lateOut: number): boolean {
    const before = this.extra - this.held;
    this.#unpace();
    this.extra = lateOut;
    if (lateOut > 0) this.#recovered = true;
    else this.#reset();
    return this.extra !== before;
  }

  /** A call reported late ended. @returns whether an extra unit went (the capacity shrinks by one). */
  lateEnded(): boolean {
    if (!this.#recovered || this.extra <= 0) return false;
    if (--this.extra === 0) this.#reset();
    return true;
  }
}
