import { type Clock, systemClock } from 'limits-core';
import { checkKeys, checkNumber, checkString, formatValue } from 'limits-core/internal';

/** Circuit states as limits-breaker names them (kept as plain strings: no dependency on it). */
export type TimelineState = 'CLOSED' | 'OPEN' | 'HALF_OPEN';

/**
 * One time bucket of a {@link Timeline}: what the recorded source did from `t` to `t + bucketMs`
 * (ms since the recorder started). A bucket without events repeats the last known `limit`,
 * `inflight` and `state`.
 */
export interface TimelinePoint {
  /** Start of the bucket, in ms since the recorder started. */
  t: number;
  /** The limit at the end of the bucket (`NaN` before the first `limit` or `acquire` event). */
  limit: number;
  /** The highest in-flight count seen in the bucket (units, as the limiter counts them). */
  inflightMax: number;
  /** Calls released in the bucket, by outcome. */
  success: number;
  dropped: number;
  failure: number;
  ignore: number;
  /** Mean RTT (ms) of the bucket's timed releases (`NaN` when none). */
  latencyMs: number;
  /** The highest RTT (ms) of the bucket's timed releases (`NaN` when none). */
  latencyMaxMs: number;
  /**
   * Requests the limiter refused in the bucket (at admission, or out of its queue: expired, aborted,
   * taken out by a guard whose circuit opened or whose call timed out while waiting). None of them
   * reached the downstream.
   */
  rejected: number;
  /**
   * Calls a guard's open circuit answered in the bucket without asking its limiter (fallback reason
   * `open`, no limiter refusal): they never reached the downstream either, and are not in
   * `rejected`. `rejected + shortCircuited` counts each call refused before the downstream once.
   * A recorder always sets it; in a point made by other means (a simulator's) it may be left out,
   * and counts as 0.
   */
  shortCircuited?: number;
  /**
   * Calls a guard answered with its fallback (or its typed error) in the bucket, whatever the
   * reason: they are also counted where they ended — in `rejected` or `shortCircuited` (never
   * reached the downstream), or as a release (timed out or failed on the downstream).
   */
  fallbacks: number;
  /** The circuit state at the end of the bucket, for a guard (`undefined` for a bare limiter). */
  state: TimelineState | undefined;
}

/** A span of time to shade on a chart (e.g. a latency spike), in ms since the recorder started. */
export interface TimelineMark {
  label: string;
  fromMs: number;
  toMs: number;
}

/** What a recorder has collected: read it with {@link TimelineRecorder.timeline}. */
export interface Timeline {
  /** Bucket width in ms. */
  bucketMs: number;
  /** The buckets, oldest first, without gaps. */
  points: TimelinePoint[];
  /** Shaded spans. */
  marks: TimelineMark[];
  /** Buckets dropped at the front because `maxPoints` was reached. */
  droppedPoints: number;
}

/** Options of {@link TimelineRecorder}. */
export interface TimelineRecorderOptions {
  /** Bucket width in ms. Default 100; range [1, 3,600,000]. */
  bucketMs?: number;
  /** Buckets kept (the oldest are dropped beyond it). Default 36,000; range [1, 10,000,000]. */
  maxPoints?: number;
  /**
   * Time source (`now()` in ms). Default: the system clock (`performance.now()`). Its first reading
   * must be a finite number; a later reading that is not one, or lies more than
   * `Number.MAX_SAFE_INTEGER` ms (about 285,000 years) from the first, is ignored: the recorder's
   * time stays at its last usable reading.
   */
  clock?: Pick<Clock, 'now'>;
}

/** Anything with eventemitter-style `on`/`off`: a `Limiter`, a limits-breaker `Guard`. */
export interface TimelineEmitter {
  // biome-ignore lint/suspicious/noExplicitAny: any emitter: eventemitter3's typed on() or Node's
  on(event: any, listener: (...args: any[]) => void): unknown;
  // biome-ignore lint/suspicious/noExplicitAny: as for on()
  off(event: any, listener: (...args: any[]) => void): unknown;
}

/**
 * What {@link TimelineRecorder.track} records: a `Limiter` (its `limit`, `acquire`, `release` and
 * `reject` events), or a limits-breaker `Guard` (the same events read from `guard.limiter`, plus its
 * `state` and `fallback` events).
 */
export type TimelineSource = TimelineEmitter & { readonly limiter?: TimelineEmitter };

interface LimitPayload {
  limit: number;
}
interface AcquirePayload {
  inflight: number;
  capacity: number;
}
interface ReleasePayload {
  outcome: 'success' | 'dropped' | 'failure' | 'ignore';
  rtt: number;
  inflight: number;
}

const KEYS = ['bucketMs', 'maxPoints', 'clock'] as const;

/** @internal The narrowest bucket a timeline may have, in ms (for the recorder and the chart). */
export const MIN_BUCKET_MS = 1;
/** @internal The widest bucket a timeline may have, in ms (for the recorder and the chart). */
export const MAX_BUCKET_MS = 3_600_000;

/**
 * Records what a limiter (or a guard) does over time, from its emitted events, into fixed time
 * buckets: the limit, the peak in-flight count, outcomes, latency, refusals, short circuits, fallbacks
 * and the circuit state (each call refused before the downstream counted once). Memory is bounded
 * (`maxPoints` buckets); {@link renderTimelineSvg} draws one or more timelines as an SVG chart.
 *
 * Recording listens to `acquire` and `release`, so the limiter times every call while it is tracked
 * (a few tens of ns per call); `stop()` removes every listener.
 *
 * @example
 * ```ts
 * const recorder = new TimelineRecorder({ bucketMs: 250 });
 * recorder.track(limiter);
 * // ... traffic ...
 * recorder.stop();
 * writeFileSync('limit.svg', renderTimelineSvg([{ name: 'vegas', timeline: recorder.timeline() }]));
 * ```
 */
export class TimelineRecorder {
  readonly #bucketMs: number;
  readonly #maxPoints: number;
  readonly #clock: Pick<Clock, 'now'>;
  readonly #start: number;
  readonly #points: TimelinePoint[] = [];
  readonly #marks: TimelineMark[] = [];
  readonly #open = new Map<string, number>();
  readonly #detach: Array<() => void> = [];
  #dropped = 0;
  /** Ms since start at the last usable clock reading. */
  #elapsed = 0;
  #limit = Number.NaN;
  #inflight = 0;
  #state: TimelineState | undefined = undefined;
  #latencySum = 0;
  #latencyCount = 0;
  /**
   * Limiter refusals not yet matched by a guard's fallback: the guard answers a refused call
   * synchronously, inside the limiter's `reject` event's turn, so the count goes back to 0 at the
   * next microtask.
   */
  #unanswered = 0;
  #unansweredReset = false;

  /**
   * @throws TypeError/RangeError naming the option, the allowed range and the value given (for
   *   `clock`, when its first reading is not a finite number).
   */
  constructor(options: TimelineRecorderOptions = {}) {
    checkKeys('TimelineRecorder options', options, KEYS);
    this.#bucketMs = checkNumber('bucketMs', options.bucketMs, 100, {
      min: MIN_BUCKET_MS,
      max: MAX_BUCKET_MS,
    });
    this.#maxPoints = checkNumber('maxPoints', options.maxPoints, 36_000, {
      min: 1,
      max: 10_000_000,
      integer: true,
    });
    const clock = options.clock ?? systemClock;
    if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function') {
      throw new TypeError(
        `limits: option "clock" must be an object with a now() function, got ${formatValue(clock)}`,
      );
    }
    const start = clock.now();
    if (!Number.isFinite(start)) {
      const Kind = typeof start === 'number' && !Number.isNaN(start) ? RangeError : TypeError;
      throw new Kind(
        `limits: option "clock" must have a now() that returns a finite number (ms), got ${formatValue(start)}`,
      );
    }
    this.#clock = clock;
    this.#start = start;
  }

  /**
   * Ms since the recorder started, on its clock. A reading that is not a finite number, or lies more
   * than `Number.MAX_SAFE_INTEGER` ms from the start, is ignored (the last usable one stands): bucket
   * numbers stay exact integers, so no reading can make the recorder loop without end.
   */
  now(): number {
    const elapsed = this.#clock.now() - this.#start;
    if (Math.abs(elapsed) <= Number.MAX_SAFE_INTEGER) this.#elapsed = elapsed;
    return this.#elapsed;
  }

  /**
   * Starts recording `source`'s events (a `Limiter`, or a `Guard`: its `limiter`'s events plus its
   * own `state` and `fallback`). A recorder tracks any number of sources; their figures add up in the
   * same buckets (track one source per recorder to chart it alone).
   *
   * For a guard, a limiter refusal the guard answers in the same turn (from its fallback or as its
   * error) is counted once, in `rejected`; a fallback for an open circuit without one is counted in
   * `shortCircuited`. A guard over a limiter that others also use sees their refusals too: one in the
   * same turn as the guard's own short circuit would be taken for its cause.
   *
   * @param source - a `Limiter`, or a limits-breaker `Guard`.
   * @returns the recorder, to chain.
   * @throws TypeError when `source` has no `on` function.
   */
  track(source: TimelineSource): this {
    if (typeof source !== 'object' || source === null || typeof source.on !== 'function') {
      throw new TypeError(
        `limits: argument "source" of track() must be a Limiter or a Guard, got ${formatValue(source)}`,
      );
    }
    const limiter = source.limiter ?? source;
    this.#listen(limiter, 'limit', (e: LimitPayload) => {
      this.#bucket().limit = e.limit;
      this.#limit = e.limit;
    });
    this.#listen(limiter, 'acquire', (e: AcquirePayload) => {
      const p = this.#bucket();
      this.#inflight = e.inflight;
      if (e.inflight > p.inflightMax) p.inflightMax = e.inflight;
      if (Number.isNaN(this.#limit)) {
        this.#limit = e.capacity;
        p.limit = e.capacity;
      }
    });
    this.#listen(limiter, 'release', (e: ReleasePayload) => {
      const p = this.#bucket();
      p[e.outcome]++;
      this.#inflight = e.inflight;
      if (Number.isFinite(e.rtt)) {
        this.#latencySum += e.rtt;
        this.#latencyCount++;
        p.latencyMs = this.#latencySum / this.#latencyCount;
        if (!(e.rtt <= p.latencyMaxMs)) p.latencyMaxMs = e.rtt;
      }
    });
    this.#listen(limiter, 'reject', () => {
      this.#bucket().rejected++;
      if (limiter !== source) this.#refusedForGuard();
    });
    if (limiter !== source) {
      this.#listen(source, 'state', (e: { to: TimelineState }) => {
        this.#bucket().state = e.to;
        this.#state = e.to;
      });
      this.#listen(source, 'fallback', (e: { reason?: unknown }) => {
        const p = this.#bucket();
        p.fallbacks++;
        if (e?.reason === 'error') return;
        // A refusal the limiter already counted: the same call, counted once.
        if (this.#unanswered > 0) this.#unanswered--;
        else if (e?.reason === 'open') p.shortCircuited = (p.shortCircuited ?? 0) + 1;
      });
      const state = (source as { state?: unknown }).state;
      if (state === 'CLOSED' || state === 'OPEN' || state === 'HALF_OPEN') {
        this.#state = state;
        this.#bucket().state = state;
      }
    }
    return this;
  }

  /** Shades a span on the chart: from `fromMs` to `toMs` (ms since start; default: now). */
  mark(label: string, fromMs: number, toMs: number = this.now()): this {
    if (typeof label !== 'string') checkString('label', label ?? null);
    checkNumber('fromMs', fromMs, 0, { min: 0 });
    checkNumber('toMs', toMs, 0, { min: fromMs });
    this.#marks.push({ label, fromMs, toMs });
    return this;
  }

  /** Opens a span named `label` now; {@link end} closes it. */
  begin(label: string): this {
    if (typeof label !== 'string') checkString('label', label ?? null);
    this.#open.set(label, this.now());
    return this;
  }

  /** Closes the span `label` opened by {@link begin} (does nothing if none is open). */
  end(label: string): this {
    const from = this.#open.get(label);
    if (from !== undefined) {
      this.#open.delete(label);
      this.#marks.push({ label, fromMs: from, toMs: this.now() });
    }
    return this;
  }

  /** Stops recording: removes every listener this recorder added. Idempotent. */
  stop(): void {
    for (const detach of this.#detach.splice(0)) detach();
  }

  /** A copy of what was recorded so far, buckets filled up to now. */
  timeline(): Timeline {
    this.#bucket();
    const marks = this.#marks.slice();
    for (const [label, fromMs] of this.#open) marks.push({ label, fromMs, toMs: this.now() });
    return {
      bucketMs: this.#bucketMs,
      points: this.#points.map((p) => ({ ...p })),
      marks,
      droppedPoints: this.#dropped,
    };
  }

  /** A limiter refusal that the tracked guard answers in the same turn (see `#unanswered`). */
  #refusedForGuard(): void {
    this.#unanswered++;
    if (this.#unansweredReset) return;
    this.#unansweredReset = true;
    queueMicrotask(() => {
      this.#unanswered = 0;
      this.#unansweredReset = false;
    });
  }

  #listen<P>(emitter: TimelineEmitter, event: string, fn: (payload: P) => void): void {
    const listener = fn as (...args: unknown[]) => void;
    emitter.on(event, listener);
    this.#detach.push(() => emitter.off(event, listener));
  }

  /** The current bucket, after filling any skipped ones. */
  #bucket(): TimelinePoint {
    const points = this.#points;
    const index = Math.floor(Math.max(0, this.now()) / this.#bucketMs);
    let last = points[points.length - 1];
    let from = last === undefined ? 0 : last.t / this.#bucketMs + 1;
    if (index - from + 1 > this.#maxPoints) {
      // A long silence: skip the buckets that would be dropped at once.
      const first = index - this.#maxPoints + 1;
      this.#dropped += points.length + (first - from);
      points.length = 0;
      from = first;
    }
    for (let i = from; i <= index; i++) {
      last = this.#fresh(i * this.#bucketMs);
      points.push(last);
      if (points.length > this.#maxPoints) {
        points.shift();
        this.#dropped++;
      }
    }
    return last as TimelinePoint;
  }

  #fresh(t: number): TimelinePoint {
    this.#latencySum = 0;
    this.#latencyCount = 0;
    return {
      t,
      limit: this.#limit,
      inflightMax: this.#inflight,
      success: 0,
      dropped: 0,
      failure: 0,
      ignore: 0,
      latencyMs: Number.NaN,
      latencyMaxMs: Number.NaN,
      rejected: 0,
      shortCircuited: 0,
      fallbacks: 0,
      state: this.#state,
    };
  }
}
