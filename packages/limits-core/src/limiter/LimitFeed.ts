import type { EventEmitter } from 'eventemitter3';
import type { LimitAlgorithm, Sample } from '../algorithms/LimitAlgorithm.js';
import type { Clock } from '../internal/clock.js';
import type { MonotonicTime } from '../internal/MonotonicTime.js';
import { formatValue } from '../internal/validate.js';
import type { Outcome } from '../permit/outcome.js';
import { algorithmName, validLimit } from './checks.js';
import { emitSafely, listeners, reportListenerError } from './emit.js';
import type { LimiterEvents } from './events.js';
import { LateCalls } from './LateCalls.js';
import { LateProbes } from './LateProbes.js';
import { ServiceTime } from './ServiceTime.js';
import { StallDetector } from './StallDetector.js';

/** @internal What a {@link LimitFeed} takes from the resolved limiter options. */
export interface LimitFeedOptions {
  algorithm: LimitAlgorithm;
  adaptive: boolean;
  sampleEvery: number;
  initialServiceMs: number | undefined;
  stallThresholdMs: number;
  clock: Clock;
}

/** @internal What a {@link LimitFeed} asks of its limiter. */
export interface FeedHost {
  /** Whether permits are out (the stall detector runs only then). */
  held(): boolean;
  /** The limit changed to `limit` (or late probes changed): returns the capacity that follows. */
  onLimit(limit: number): number;
  /** The units in flight now (for `onLate`). */
  inflight(): number;
  /**
   * The capacity less the units in flight (for the late probes, {@link LateProbes}): 0 when exactly
   * full, negative when the limit fell below the calls still out; `NaN` when the limiter does not
   * use late probes (a partition's gate decides instead).
   */
  room(): number;
  /** Serves queued waiters (after a late probe grew the capacity). */
  dispatch(): void;
}

/**
 * @internal How a limiter feeds its algorithm: which grants are timed (sampling), what a timed release
 * tells (the service-time estimate; for an adaptive algorithm a sample, unless a stall of the process
 * overlapped the call), and the algorithm's new limit, kept only when it is a valid number (a
 * plug-in's bad value or throw is reported, and the last good limit stays); a new limit is handed
 * to the limiter (its capacity follows) and announced with the `limit` event.
 *
 * Late calls: for an algorithm with `onLate`, the timed calls in flight are counted per
 * tick of the stall detector ({@link LateCalls}); each tick reports those past the algorithm's
 * `lateAfterMs` once through `onLate(count, inflight)` (each counts as a drop). When a reported call
 * completes, a success is still fed as the latency sample it is (how the algorithm learns a latency
 * that moved for good) unless a call that started after it already came back on time (the
 * downstream recovered: its latency is old news), while a drop is not fed again (it was counted). A
 * tick that finds a stall excuses every call in flight. While every call in flight is late, {@link LateProbes} lets a few
 * more through; the on-time answer that ends such a slowdown writes off the late calls still out,
 * and the ones reported late afterwards that started before that answer are old news (the
 * algorithm does not hear of them; their units are written off too). A sample's in-flight count
 * leaves out those extra units: it counts the calls within the algorithm's limit.
 */
export class LimitFeed {
  readonly algorithm: LimitAlgorithm;
  /** The hold-time estimate (deadline admission and checks, `retryAfterMs`). */
  readonly service: ServiceTime;
  /** Detects event-loop stalls that would poison samples (adaptive algorithms only). */
  readonly stall: StallDetector | undefined;
  /** The timed calls in flight, for `onLate` (adaptive algorithms with `onLate` and a stall detector). */
  readonly #late: LateCalls | undefined;
  /** Probes beyond the capacity while every call in flight is late (with `#late`). */
  readonly probes: LateProbes | undefined;
  readonly #inflight: () => number;
  readonly #room: () => number;
  /**
   * Calls reported late and still in flight (approximate: a call excused by a stall that ends also
   * counts down, never below 0).
   */
  #lateOut = 0;
  /**
   * When the call that came back on time at the end of the last slowdown (late probes were out)
   * ended: calls reported late later that started before are old news (the spike's last calls; one
   * that started after and is late tells of a new slowdown).
   */
  #recoveredFrom = Number.NEGATIVE_INFINITY;
  /** When the last call that came back before it was late ended (late successes older are old news). */
  #onTimeAt = -Infinity;
  readonly #dispatch: () => void;
  readonly #adaptive: boolean;
  readonly #sampleEvery: number;
  readonly #time: MonotonicTime;
  readonly #emitter: EventEmitter<LimiterEvents>;
  readonly #onLimit: (limit: number) => number;
  #sampleCount = 0;
  #untimed = 0;
  /** The algorithm gave a bad limit and it was reported (once until it gives a good one again). */
  #badLimit = false;
  /** The algorithm's current limit, as an integer. */
  limit: number;
  /** Samples discarded because a stall overlapped them. */
  stalledSamples = 0;

  /**
   * @param emitter - the limiter: emits `limit`, and reports a plug-in's error or bad value like a
   *   listener error.
   * @param host - what the feed asks of the limiter (see {@link FeedHost}).
   */
  constructor(
    o: LimitFeedOptions,
    time: MonotonicTime,
    emitter: EventEmitter<LimiterEvents>,
    host: FeedHost,
  ) {
    this.algorithm = o.algorithm;
    this.#adaptive = o.adaptive;
    this.#sampleEvery = o.sampleEvery;
    this.#time = time;
    this.#emitter = emitter;
    this.#onLimit = host.onLimit;
    this.#inflight = host.inflight;
    this.#room = host.room;
    this.#dispatch = host.dispatch;
    this.service = new ServiceTime(o.initialServiceMs);
    if (o.adaptive && o.stallThresholdMs !== Infinity) {
      const clock = o.clock;
      // The detector sees the limiter's (monotonic) time, as the permits' start times do.
      const monotonic: Clock = {
        now: () => time.now(),
        setTimeout: (fn, ms) => clock.setTimeout(fn, ms),
        clearTimeout: (handle) => clock.clearTimeout(handle),
      };
      const late = typeof o.algorithm.onLate === 'function' ? new LateCalls() : undefined;
      this.#late = late;
      this.probes = late === undefined ? undefined : new LateProbes();
      this.stall = new StallDetector(
        monotonic,
        o.stallThresholdMs,
        host.held,
        late === undefined ? undefined : (now, stalled) => this.#tick(late, now, stalled),
      );
    }
    // resolveOptions checked the algorithm's initial limit (`checkAlgorithm`): a number in [0, Infinity).
    this.limit = Math.floor(o.algorithm.limit);
  }

  /**
   * Whether a grant is timed: adaptive algorithms need every call (or one in `sampleEvery`), and so
   * do calls with a deadline (deadline checks rely on the service-time estimate); otherwise one call
   * in 32 keeps that estimate (queue admission, retryAfterMs) current without a clock read per call.
   */
  timed(hasDeadline: boolean): boolean {
    return (
      (this.#adaptive &&
        (this.#sampleEvery === 1 || ++this.#sampleCount % this.#sampleEvery === 0)) ||
      hasDeadline ||
      (++this.#untimed & 31) === 0
    );
  }

  /** A timed permit was granted at `startTime` (the limiter's clock). */
  started(startTime: number): void {
    const stall = this.stall;
    if (stall === undefined) return;
    stall.arm();
    this.#late?.started(startTime);
  }

  /**
   * A permit came back after `rtt` ms (`NaN` start time: untimed).
   * @returns whether its sample was discarded because a stall overlapped it.
   */
  released(startTime: number, inflight: number, rtt: number, outcome: Outcome): boolean {
    if (!Number.isNaN(startTime)) {
      this.service.observe(rtt);
      // A call reported late was counted as a drop then: it is not a drop again. A late call that
      // succeeds is still fed, as the latency sample it is: without it a downstream whose latency
      // moved for good (20 ms → 500 ms) would only ever be seen through late reports, and the
      // algorithm could never learn the new baseline (the limit would stay at its floor).
      const reported = this.#late?.released(startTime) === true;
      if (reported) {
        if (this.#lateOut > 0) this.#lateOut--;
        if (this.probes?.lateEnded() === true) this.#onLimit(this.limit);
        // A drop was counted when reported; a success that began before a call that came back on
        // time is old news (the downstream has recovered since): neither is fed. A success that is
        // fed may move the limit: the pacing then sees the capacity that follows.
        let stalled = false;
        if (outcome === 'success' && startTime >= this.#onTimeAt && this.#adaptive) {
          stalled = this.#feed(startTime, inflight, rtt, false);
        }
        this.#paceEnd(startTime + rtt, rtt);
        return stalled;
      } else if (outcome === 'success' && this.#late !== undefined) {
        this.#onTimeAt = startTime + rtt;
        // Back before it was late: the downstream answers on time again. If that ends a slowdown
        // (late probes were out), the late calls still out are written off, and so are those
        // reported later that started before it ended (the limiter's dispatch after this release
        // uses the capacity).
        const probes = this.probes;
        if (probes !== undefined) {
          if (probes.probing) this.#recoveredFrom = startTime + rtt;
          if (probes.fresh(this.#lateOut)) this.#onLimit(this.limit);
        }
      }
      if (this.#adaptive && (outcome === 'success' || outcome === 'dropped')) {
        return this.#feed(startTime, inflight, rtt, outcome === 'dropped');
      }
    } else if (outcome === 'dropped' && this.#adaptive) {
      // An unsampled call that dropped still tells the algorithm: its duration is taken to be the
      // service-time estimate (drops are too important to sample away).
      const service = this.service.estimate();
      this.#update(this.#time.now() - service, inflight, service, true);
    }
    return false;
  }

  /** Feeds a timed call's sample unless a stall overlapped it. @returns whether it was discarded. */
  #feed(startTime: number, inflight: number, rtt: number, dropped: boolean): boolean {
    if (this.stall?.overlaps(startTime, startTime + rtt) ?? false) {
      this.stalledSamples++;
      return true;
    }
    this.#update(startTime, inflight, rtt, dropped);
    return false;
  }

  /** A call reported late ended at `now` after `rtt` ms: the late probes' pacing (see LateProbes.paceEnd). */
  #paceEnd(now: number, rtt: number): void {
    const probes = this.probes;
    if (probes === undefined) return;
    const inflight = this.#inflight();
    const slowdown = (this.#late as LateCalls).tracked === 0 && inflight > 0;
    if (probes.paceEnd(now, rtt, this.limit, inflight, this.#room(), slowdown)) {
      this.#onLimit(this.limit);
    }
  }

  #update(startTime: number, inflight: number, rtt: number, dropped: boolean): void {
    // The units granted beyond the limit for late probes and written-off late calls are not the
    // algorithm's load: its samples count the calls within its limit (a probe dip's clean samples,
    // the app-limited rule, Gradient's target).
    const extra = this.probes === undefined ? 0 : this.probes.offset(this.limit);
    if (extra > 0) inflight = Math.max(1, inflight - extra);
    const sample: Sample = { startTime, rtt, inflight, dropped };
    try {
      this.algorithm.update(sample);
    } catch (error) {
      // A throwing algorithm (a plug-in's bug) must not strand the release half-way: the permit's
      // capacity is already back and queued waiters still need dispatching. Its error is reported
      // like a listener's ('error' event, else rethrown on a microtask); the limit stays as it was.
      this.#onError(error);
      return;
    }
    this.#changed(sample);
  }

  /** A tick of the stall detector: reports the calls that became late (see the class comment). */
  #tick(late: LateCalls, now: number, stalled: boolean): void {
    if (stalled) {
      late.excuse(now);
      return;
    }
    const algorithm = this.algorithm;
    const after = algorithm.lateAfterMs;
    const count = late.tick(now, typeof after === 'number' && after > 0 ? after : Infinity);
    const inflight = this.#inflight();
    if (count > 0) {
      this.#lateOut += count;
      if (late.reportedBefore <= this.#recoveredFrom) {
        // Old news: they all started before the call that ended the last slowdown came back (the
        // downstream has recovered since). The algorithm does not hear of them; their units are
        // written off.
        if (this.probes?.writeOff(this.#lateOut) === true) {
          this.#onLimit(this.limit);
          this.#dispatch();
        }
      } else {
        this.#reportLate(count, inflight, now, after as number);
      }
    }
    // A paced restart is due (see LateProbes.paceEnd).
    if (this.probes?.paceTick(now) === true) {
      this.#onLimit(this.limit);
      this.#dispatch();
    }
    // Every call in flight is late: one more probe, staggered (see LateProbes).
    if (
      inflight > 0 &&
      late.tracked === 0 &&
      this.probes?.allLate(now, this.#room() === 0, this.limit) === true
    ) {
      this.#onLimit(this.limit);
      this.#dispatch();
    }
  }

  /** `count` calls became late: the algorithm hears of them, and the limit follows. */
  #reportLate(count: number, inflight: number, now: number, age: number): void {
    try {
      this.algorithm.onLate?.(count, inflight);
    } catch (error) {
      this.#onError(error);
      return;
    }
    // The `limit` event's sample stands for the late calls: dropped, ending now, as old as the rule.
    this.#changed({ startTime: now - age, rtt: age, inflight, dropped: true });
  }

  /** After the algorithm heard of `sample`: checks and applies its new limit. */
  #changed(sample: Sample): void {
    const raw = this.algorithm.limit;
    if (!validLimit(raw)) {
      // A plug-in's bad value must not become the capacity (NaN would stop every grant): keep the
      // last good limit and report it, once until the algorithm gives a good value again.
      if (!this.#badLimit) {
        this.#badLimit = true;
        this.#onError(
          new RangeError(
            `limits: the limit algorithm ${algorithmName(this.algorithm)} gave limit ${formatValue(raw)} after update(); a limit must be a number in [0, Infinity). The limiter keeps its last good limit (${this.limit}).`,
          ),
        );
      }
      return;
    }
    this.#badLimit = false;
    const next = Math.floor(raw);
    if (next === this.limit) return;
    const previous = this.limit;
    this.limit = next;
    const capacity = this.#onLimit(next);
    const emitter = this.#emitter;
    if (listeners(emitter).limit !== undefined) {
      const decision = this.algorithm.lastDecision;
      emitSafely(emitter, 'limit', {
        limit: next,
        previous,
        capacity,
        sample,
        ...(decision === undefined ? {} : { decision }),
      });
    }
  }

  /** A plug-in's error or bad value, reported like a listener error. */
  #onError(error: unknown): void {
    reportListenerError(this.#emitter, error);
  }
}
