import { EventEmitter } from 'eventemitter3';
import { LimitExceededError, type RejectReason } from '../errors/LimitExceededError.js';
import { type Clock, systemClock } from '../internal/clock.js';
import { checkFunction, checkNumber } from '../internal/validate.js';
import { FixedLimit } from '../limit/FixedLimit.js';
import type { LimitAlgorithm, Sample } from '../limit/LimitAlgorithm.js';
import type { LimiterEvents } from './events.js';
import { type Classify, defaultClassify, type Outcome } from './outcome.js';
import { Permit, type PermitOwner } from './Permit.js';
import { StallDetector } from './StallDetector.js';

/** Options of {@link Limiter}. */
export interface LimiterOptions {
  /**
   * The limit algorithm, or a number for a fixed limit.
   * @default 20 (fixed)
   */
  limit?: LimitAlgorithm | number;
  /**
   * Capacity floor: the limiter admits at least this many units even when the algorithm's limit
   * falls below it, so a sick downstream keeps receiving a few probes and its recovery is seen.
   * Separate from the algorithm's `minLimit`.
   * @default 1
   */
  probeSlots?: number;
  /**
   * Largest number of waiters in the queue. 0 rejects at once with reason `limit` when there is no
   * capacity.
   * @default 0
   */
  maxQueued?: number;
  /** Time source and timers (inject a fake one in tests). @default the system clock */
  clock?: Clock;
  /** Outcome of a `run` task; see {@link defaultClassify}. */
  classify?: Classify;
  /**
   * A timer tick this many ms late marks an event-loop stall; samples that overlap one are not fed to
   * the algorithm (a 50 ms block would otherwise read as 50 ms of downstream queueing). The timer runs
   * every `stallThresholdMs / 2` ms, only while calls are in flight and the algorithm is adaptive.
   * `Infinity` turns detection off.
   * @default 50
   */
  stallThresholdMs?: number;
}

/** Options of {@link Limiter.acquire}, {@link Limiter.tryAcquire} and {@link Limiter.run}. */
export interface AcquireOptions {
  /** Aborts the wait (and is handed to the `run` task). An aborted signal rejects at once. */
  signal?: AbortSignal;
  /** Absolute deadline in clock ms: the request must start before it. */
  deadline?: number;
  /** Relative deadline in ms (from now); the earlier of `deadline` and `timeout` wins. */
  timeout?: number;
  /** Units of capacity the call takes. @default 1 */
  cost?: number;
  /** Bytes the request holds while queued (counted against `maxQueuedBytes`). @default 0 */
  bytes?: number;
  /** Tenant key for fair queueing. */
  tenant?: string;
  /** Queue priority; higher goes first. @default 0 */
  priority?: number;
}

/** A point-in-time view of a limiter, for logs and dashboards. */
export interface LimiterSnapshot {
  /** The algorithm's integer limit. */
  limit: number;
  /** Units that may be in flight: `max(limit, probeSlots)`. */
  capacity: number;
  /** Units in flight. */
  inflight: number;
  /** Permits outstanding (calls in flight, whatever their cost). */
  permits: number;
  /** Waiters in the queue. */
  queued: number;
  /** Bytes held by queued waiters. */
  queuedBytes: number;
  /** Age in ms of the oldest waiter (0 when the queue is empty). */
  oldestQueuedMs: number;
  /** Samples withheld from the algorithm because they overlapped an event-loop stall. */
  stalledSamples: number;
  /** `close()` was called. */
  closed: boolean;
}

const NEVER_ABORTED = new AbortController().signal;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * A concurrency limiter: a semaphore whose size comes from a limit algorithm, with probe slots and
 * (from the queue options) a bounded wait. It measures each call and feeds the algorithm.
 *
 * @example
 * ```ts
 * const limiter = new Limiter({ limit: new VegasLimit({ maxLimit: 100 }), probeSlots: 2 });
 * limiter.on('limit', (e) => console.log(e.limit, e.decision?.reason));
 * const body = await limiter.run((signal) => fetch(url, { signal }).then((r) => r.text()));
 * ```
 */
export class Limiter extends EventEmitter<LimiterEvents> implements PermitOwner {
  readonly #algorithm: LimitAlgorithm;
  readonly #probeSlots: number;
  readonly #maxQueued: number;
  readonly #clock: Clock;
  readonly #classify: Classify | undefined;
  readonly #adaptive: boolean;
  readonly #stall: StallDetector | undefined;
  #limit: number;
  #capacity: number;
  #inflight = 0;
  #permits = 0;
  #stalledSamples = 0;
  #rttAvg = 0;
  #closed = false;
  #drained: Array<() => void> = [];

  /** @throws RangeError/TypeError naming the option, the allowed range and the value given. */
  constructor(options: LimiterOptions = {}) {
    super();
    const limit = options.limit ?? 20;
    if (typeof limit === 'number') {
      this.#algorithm = new FixedLimit(limit);
    } else if (
      limit !== null &&
      typeof limit === 'object' &&
      typeof limit.update === 'function' &&
      typeof limit.limit === 'number'
    ) {
      this.#algorithm = limit;
    } else {
      throw new TypeError(
        'limits: option "limit" must be a number or a LimitAlgorithm (an object with limit and update)',
      );
    }
    this.#probeSlots = checkNumber('probeSlots', options.probeSlots, 1, { min: 0, integer: true });
    this.#maxQueued = checkNumber('maxQueued', options.maxQueued, 0, {
      min: 0,
      max: 0,
      integer: true,
    });
    this.#clock = options.clock ?? systemClock;
    this.#classify = checkFunction<Classify>('classify', options.classify);
    const stallMs = checkNumber('stallThresholdMs', options.stallThresholdMs, 50, {
      min: 0,
      minExclusive: true,
      allowInfinity: true,
    });
    this.#adaptive = !(this.#algorithm instanceof FixedLimit);
    if (this.#adaptive && stallMs !== Infinity) {
      this.#stall = new StallDetector(this.#clock, stallMs, () => this.#permits > 0);
    }
    this.#limit = Math.floor(this.#algorithm.limit);
    this.#capacity = Math.max(this.#limit, this.#probeSlots);
  }

  /** The algorithm's current limit, as an integer. */
  get limit(): number {
    return this.#limit;
  }

  /** Units that may be in flight: `max(limit, probeSlots)`. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Units in flight (a permit of cost 3 counts 3). */
  get inflight(): number {
    return this.#inflight;
  }

  /** Waiters in the queue. */
  get queued(): number {
    return 0;
  }

  /** Bytes held by queued waiters. */
  get queuedBytes(): number {
    return 0;
  }

  /** The limit algorithm. */
  get algorithm(): LimitAlgorithm {
    return this.#algorithm;
  }

  /** A point-in-time view of the counters. */
  snapshot(): LimiterSnapshot {
    return {
      limit: this.#limit,
      capacity: this.#capacity,
      inflight: this.#inflight,
      permits: this.#permits,
      queued: 0,
      queuedBytes: 0,
      oldestQueuedMs: 0,
      stalledSamples: this.#stalledSamples,
      closed: this.#closed,
    };
  }

  /**
   * Takes a permit if capacity is free now; never waits.
   * @returns the permit, or `undefined` when the limiter is full or closed, or `signal` is aborted.
   * @throws RangeError/TypeError for a bad `cost`.
   */
  tryAcquire(options?: AcquireOptions): Permit | undefined {
    const cost = options?.cost === undefined ? 1 : checkCost(options.cost);
    if (this.#closed || this.#inflight + cost > this.#capacity || options?.signal?.aborted) {
      return undefined;
    }
    return this.#grant(cost);
  }

  /**
   * Takes a permit, waiting in the bounded queue when the limiter is full.
   * @returns the permit.
   * @throws LimitExceededError (rejected promise) with the reason it was not admitted.
   */
  acquire(options?: AcquireOptions): Promise<Permit> {
    const cost = options?.cost === undefined ? 1 : checkCost(options.cost);
    const signal = options?.signal;
    if (signal?.aborted) {
      return Promise.reject(this.#reject('aborted', cost, signal.reason));
    }
    if (this.#closed) return Promise.reject(this.#reject('closed', cost));
    if (this.#inflight + cost <= this.#capacity) return Promise.resolve(this.#grant(cost));
    if (this.#maxQueued === 0) return Promise.reject(this.#reject('limit', cost));
    return Promise.reject(this.#reject('queue_full', cost));
  }

  /**
   * Runs `task` under a permit: acquires (waiting if the queue allows), calls `task(signal)`, times
   * it, and releases when the task's promise really settles, even after the caller gave up on it.
   * The outcome comes from `classify` (default: resolved → success, timeout/abort error → dropped,
   * other error → ignore). A task that throws synchronously never started: its permit is returned at
   * once with `ignore`.
   * @returns what the task returned.
   * @throws LimitExceededError when not admitted; otherwise whatever the task threw.
   */
  run<T>(task: (signal: AbortSignal) => T | PromiseLike<T>, options?: AcquireOptions): Promise<T> {
    const permit = this.tryAcquire(options);
    if (permit !== undefined) return this.#runWith(permit, task, options?.signal);
    return this.acquire(options).then((p) => this.#runWith(p, task, options?.signal));
  }

  /**
   * Stops admitting (new requests reject with reason `closed`) and resolves once every permit in
   * flight has been released. Idempotent.
   */
  close(): Promise<void> {
    this.#closed = true;
    if (this.#permits === 0) {
      this.#stall?.stop();
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  /** @internal Called by a permit, once. */
  _release(permit: Permit, outcome: Outcome): void {
    this.#inflight -= permit.cost;
    this.#permits--;
    const timed = !Number.isNaN(permit.startTime);
    const rtt = timed ? this.#clock.now() - permit.startTime : Number.NaN;
    let stalled = false;
    if (timed && outcome !== 'ignore') {
      this.#rttAvg = this.#rttAvg === 0 ? rtt : this.#rttAvg + (rtt - this.#rttAvg) / 16;
      if (this.#adaptive) {
        stalled = this.#stall?.overlaps(permit.startTime, permit.startTime + rtt) ?? false;
        if (stalled) this.#stalledSamples++;
        else this.#feed(permit, rtt, outcome === 'dropped');
      }
    }
    if (this.listenerCount('release') > 0) {
      this.#emit('release', {
        outcome,
        rtt,
        cost: permit.cost,
        inflight: this.#inflight,
        stalled,
      });
    }
    if (this.#permits === 0 && this.#closed) this.#finishClose();
  }

  #feed(permit: Permit, rtt: number, dropped: boolean): void {
    const sample: Sample = {
      startTime: permit.startTime,
      rtt,
      inflight: permit.inflight,
      dropped,
    };
    this.#algorithm.update(sample);
    const next = Math.floor(this.#algorithm.limit);
    if (next === this.#limit) return;
    const previous = this.#limit;
    this.#limit = next;
    this.#capacity = Math.max(next, this.#probeSlots);
    if (this.listenerCount('limit') > 0) {
      const decision = this.#algorithm.lastDecision;
      this.#emit('limit', {
        limit: next,
        previous,
        capacity: this.#capacity,
        sample,
        ...(decision === undefined ? {} : { decision }),
      });
    }
  }

  #grant(cost: number): Permit {
    this.#inflight += cost;
    this.#permits++;
    const timed = this.#adaptive || this.listenerCount('release') > 0;
    const permit = new Permit(this, cost, timed ? this.#clock.now() : Number.NaN, this.#inflight);
    if (this.#stall !== undefined) this.#stall.arm();
    if (this.listenerCount('acquire') > 0) {
      this.#emit('acquire', {
        cost,
        inflight: this.#inflight,
        capacity: this.#capacity,
        waitedMs: 0,
      });
    }
    return permit;
  }

  #runWith<T>(
    permit: Permit,
    task: (signal: AbortSignal) => T | PromiseLike<T>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    let result: T | PromiseLike<T>;
    try {
      result = task(signal ?? NEVER_ABORTED);
    } catch (error) {
      permit.ignore();
      return Promise.reject(error);
    }
    if (!isThenable(result)) {
      this.#settle(permit, undefined, result);
      return Promise.resolve(result);
    }
    return Promise.resolve(result).then(
      (value) => {
        this.#settle(permit, undefined, value);
        return value;
      },
      (error: unknown) => {
        this.#settle(permit, error ?? new Error('task rejected with undefined'), undefined);
        throw error;
      },
    );
  }

  #settle(permit: Permit, error: unknown, result: unknown): void {
    let outcome: Outcome | undefined;
    if (this.#classify !== undefined) {
      try {
        outcome = this.#classify(error, result);
      } catch (classifyError) {
        this.#reportListenerError(classifyError);
      }
    }
    outcome ??= defaultClassify(error);
    if (outcome === 'success') permit.success();
    else if (outcome === 'dropped') permit.dropped();
    else permit.ignore();
  }

  #reject(reason: RejectReason, cost: number, cause?: unknown): LimitExceededError {
    const retryAfterMs =
      reason === 'closed' || reason === 'aborted' ? undefined : this.#retryAfter(cost);
    const message =
      reason === 'closed'
        ? 'limiter closed'
        : reason === 'aborted'
          ? 'aborted before a permit was granted'
          : `limit reached: ${this.#inflight}/${this.#capacity} units in flight, ${cost} requested`;
    const error = new LimitExceededError(`limits: ${message}`, {
      reason,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...(cause === undefined ? {} : { cause }),
    });
    if (this.listenerCount('reject') > 0) {
      this.#emit('reject', {
        reason,
        cost,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
    }
    return error;
  }

  /** Ms until `cost` units are likely free: calls end at about `capacity / avgRtt` per ms. */
  #retryAfter(cost: number): number | undefined {
    if (this.#rttAvg <= 0 || this.#capacity <= 0) return undefined;
    const waitUnits = Math.max(1, this.#inflight + cost - this.#capacity);
    return Math.max(0, Math.ceil((this.#rttAvg * waitUnits) / this.#capacity));
  }

  #finishClose(): void {
    this.#stall?.stop();
    const resolvers = this.#drained;
    this.#drained = [];
    for (const resolve of resolvers) resolve();
  }

  #emit<E extends keyof LimiterEvents>(event: E, payload: Parameters<LimiterEvents[E]>[0]): void {
    try {
      (this.emit as (e: E, p: unknown) => boolean)(event, payload);
    } catch (error) {
      this.#reportListenerError(error);
    }
  }

  #reportListenerError(error: unknown): void {
    if (this.listenerCount('error') > 0) {
      try {
        this.emit('error', error);
        return;
      } catch {
        // An error listener that throws is reported like any other listener error.
      }
    }
    queueMicrotask(() => {
      throw error;
    });
  }
}

function checkCost(cost: unknown): number {
  return checkNumber('cost', cost, 1, { min: 0, minExclusive: true });
}
