import { EventEmitter } from 'eventemitter3';
import type { LimitAlgorithm } from '../algorithms/LimitAlgorithm.js';
import { DeficitRoundRobin } from '../fairness/DeficitRoundRobin.js';
import { systemClock } from '../internal/clock.js';
import { MonotonicTime } from '../internal/MonotonicTime.js';
import { PromiseCapture } from '../internal/PromiseCapture.js';
import type { Outcome } from '../permit/outcome.js';
import { Permit } from '../permit/Permit.js';
import type { Waiter } from '../queue/Waiter.js';
import type { WaitQueue } from '../queue/WaitQueue.js';
import { Admission } from './Admission.js';
import { CloseWaiters, closeTimeout } from './CloseWaiters.js';
import { taskError } from './checks.js';
import { emitSafely, listeners, reportListenerError } from './emit.js';
import type { LimiterEvents } from './events.js';
import { LeakTracker } from './LeakTracker.js';
import { LimitFeed } from './LimitFeed.js';
import type {
  AcquireOptions,
  CapacityGate,
  CloseOptions,
  CloseResult,
  LimiterOptions,
  LimiterSnapshot,
} from './options.js';
import type { PermitRequest } from './PermitRequest.js';
import { PlainRuns } from './PlainRuns.js';
import type { Refusals } from './Refusals.js';
import { RunSlots } from './RunSlots.js';
import { resolveOptions } from './resolveOptions.js';
import { TaskRunner } from './TaskRunner.js';

/**
 * A concurrency limiter: a semaphore whose size comes from a limit algorithm, with probe slots and a
 * bounded queue (count, bytes, age, deadline, cost). It measures each call and feeds the algorithm.
 *
 * @example
 * ```ts
 * const limiter = new Limiter({ algorithm: new VegasLimit({ maxLimit: 100 }), maxQueued: 50, maxQueueWaitMs: 200 });
 * limiter.on('limit', (e) => console.log(e.limit, e.decision?.reason));
 * const body = await limiter.run((signal) => fetch(url, { signal }).then((r) => r.text()), { timeoutMs: 1000 });
 * ```
 */
export class Limiter extends EventEmitter<LimiterEvents> {
  // Here: counters, fast paths, grants, releases. Elsewhere: the feed (LimitFeed), admission
  // (Admission), waiters (queue/), refusals (Refusals), tasks (TaskRunner).
  readonly #feed: LimitFeed;
  readonly #time: MonotonicTime;
  readonly #closing: CloseWaiters;
  readonly #queue: WaitQueue;
  readonly #admission: Admission;
  readonly #refusals: Refusals;
  readonly #plain: PlainRuns | undefined;
  readonly #slots: RunSlots;
  readonly #gate: CapacityGate | undefined;
  /** A cost of 1 can be admitted (`maxCost` ≥ 1; else admission refuses it as `too_large`). */
  readonly #unitFits: boolean;
  readonly #leaks: LeakTracker | undefined;
  #capacity: number;
  #inflight = 0;
  #permits = 0;
  #closed = false;

  /** @throws RangeError/TypeError naming the option, the allowed range and the value given. */
  constructor(options: LimiterOptions = {}) {
    super();
    const o = resolveOptions(options);
    const time = new MonotonicTime(o.clock, o.clock === systemClock);
    this.#time = time;
    this.#gate = o.gate;
    this.#unitFits = (o.gate?.maxCost ?? o.maxCost) >= 1;
    const feed = new LimitFeed(o, time, this, {
      held: () => this.#permits > 0,
      onLimit: (limit) =>
        (this.#capacity =
          feed.probes === undefined
            ? Math.max(limit, o.probeSlots)
            : feed.probes.capacity(limit, o.probeSlots)),
      inflight: () => this.#inflight,
      room: () => (o.gate === undefined ? this.#capacity - this.#inflight : Number.NaN),
      dispatch: () => this._dispatch(),
    });
    this.#feed = feed;
    this.#capacity = Math.max(feed.limit, o.probeSlots);
    this.#closing = new CloseWaiters(o.clock, () => feed.stall?.stop());
    const reclaim = (cost: number) => this.#release(cost, Number.NaN, 0, 'ignore');
    this.#leaks = LeakTracker.create(o.trackLeaks, this, time, reclaim);
    const capture = new PromiseCapture();
    const hooks = { classify: o.classify, onError: (e: unknown) => reportListenerError(this, e) };
    // run()'s plain path needs an algorithm that learns nothing from an untimed call (an adaptive
    // one is fed a drop with its in-flight count, which only a permit carries).
    const service = feed.service;
    const release = (out: Outcome) => this.#release(1, Number.NaN, 0, out);
    const plain = o.adaptive ? undefined : new PlainRuns(hooks, release, time, service);
    this.#plain = plain;
    this.#slots = new RunSlots(hooks, (t, n, out) => this.#release(1, t, n, out));
    const runner = new TaskRunner(time, capture, hooks, o.estimator, this.#leaks, plain);
    const grants = {
      fits: (cost: number) => this.#fits(cost),
      // `now` NaN: the wait is not measured (the constant NaN: no number boxed per grant).
      grant: (w: Waiter, now: number) => {
        const waitedMs = Number.isNaN(now) ? Number.NaN : now - w.enqueuedAt;
        this.#grant(w.cost, waitedMs, this.#timed(w.deadline !== Infinity), now, w);
      },
      grantNew: (cost: number, timeBound: boolean, now: number) =>
        this.#grant(cost, 0, this.#timed(timeBound), now, undefined),
      startLane: (task: unknown, resolve: unknown) => {
        const timed = listeners(this).release !== undefined;
        const permit = timed ? this.#grant(1, Number.NaN, true, Number.NaN, undefined) : undefined;
        if (!timed) this.#count(1, Number.NaN);
        runner.startLane(task, resolve, permit, !timed && feed.timed(false));
      },
    };
    this.#admission = new Admission(this, o, time, service, capture, runner, this.#leaks, grants);
    this.#queue = this.#admission.queue;
    this.#refusals = this.#admission.refusals;
  }

  /** The algorithm's current limit, as an integer. */
  get limit(): number {
    return this.#feed.limit;
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
    return this.#queue.size;
  }

  /** Bytes held by queued waiters. */
  get queuedBytes(): number {
    return this.#queue.queuedBytes;
  }

  /** The limit algorithm. */
  get algorithm(): LimitAlgorithm {
    return this.#feed.algorithm;
  }

  /** A point-in-time view of the counters. */
  snapshot(): LimiterSnapshot {
    const queue = this.#queue;
    const feed = this.#feed;
    return {
      limit: feed.limit,
      capacity: this.#capacity,
      inflight: this.#inflight,
      permits: this.#permits,
      queued: queue.size,
      queuedCost: queue.queuedCost,
      queuedBytes: queue.queuedBytes,
      oldestQueuedMs: queue.size === 0 ? 0 : Math.max(0, this.#time.now() - oldestAt(queue)),
      serviceMs: feed.service.estimate(),
      stalledSamples: feed.stalledSamples,
      tenants: queue.selector instanceof DeficitRoundRobin ? queue.selector.tenants : 0,
      closed: this.#closed,
    };
  }

  /**
   * Takes a permit if capacity is free now and no waiter is ahead (nobody queued, or with LIFO order
   * the newest is served first anyway); never waits. Report its outcome exactly once; a permit
   * collected without one is reclaimed and reported (see `trackLeaks`).
   * @returns the permit, or `undefined` when the limiter is full, closed, has waiters ahead, the cost
   *   can never fit, `signal` is aborted, or the deadline (or `timeoutMs: 0`) has passed.
   * @throws TypeError/RangeError for bad options, before anything changes.
   */
  tryAcquire(options?: AcquireOptions): Permit | undefined {
    return this.#admission.tryAcquire(options, this.#closed);
  }

  /**
   * Takes a permit, waiting in the bounded queue when the limiter is full. Report its outcome
   * exactly once; a permit collected without one is reclaimed and reported (see `trackLeaks`).
   * @returns the permit.
   * @throws (as a rejected promise, never synchronously) LimitExceededError with the reason it was
   *   not admitted; TypeError/RangeError for bad options, before anything changes.
   */
  acquire(options?: AcquireOptions): Promise<Permit> {
    return this.#admission.admit(options, undefined, undefined, this.#closed) as Promise<Permit>;
  }

  /**
   * `acquire()` without a promise, for integrations with an object per call ({@link PermitRequest}).
   * @returns the permit when granted at once; otherwise `undefined`, and later exactly one
   *   `request.granted(permit)` or `request.refused(error)` (at admission: before this returns), after
   *   `request.queued(ticket)` if queued. Not leak-tracked: the integration reports every outcome.
   * @throws RangeError/TypeError for bad options (where `acquire()` rejects), before anything changes.
   */
  acquireWith(request: PermitRequest, options?: AcquireOptions): Permit | undefined {
    if (options === undefined && this.#unitFree()) {
      return this.#grant(1, 0, this.#timed(false), Number.NaN, undefined);
    }
    return this.#admission.admit(options, undefined, request, this.#closed) as Permit | undefined;
  }

  /**
   * The no-options fast paths' condition (`acquireWith()`, `run()`; a one-line `acquire()` measured
   * faster without): open, nobody queued (else full admission decides), a cost of 1 admissible and free.
   */
  #unitFree(): boolean {
    return !this.#closed && this.#queue.size === 0 && this.#unitFits && this.#fits(1);
  }

  /**
   * Runs `task` under a permit: acquires (waiting if the queue allows), calls `task(signal)`, times
   * it, and releases when its promise really settles, even after the caller gave up on it, with the
   * outcome `classify` gives (default: resolved → success, timeout/abort error → dropped, other error
   * → failure); a task that throws synchronously never started (released as `ignore`).
   *
   * A time limit (`timeoutMs` or `deadline`) is end to end: refused at admission when it cannot be
   * met, bounded while queued, and at the deadline the task's signal aborts with a `TimeoutError`
   * (`DOMException`) and `run()` rejects with it at once; the permit is held until the task really
   * settles, then released as `dropped`. With a time limit or a caller `signal`, a task that declares a
   * parameter gets a signal of its own (about 2 µs), following the caller's and aborting at the
   * time limit; one declaring none gets the caller's. Otherwise: one shared signal that never aborts.
   * @returns what the task returned.
   * @throws (as a rejected promise) LimitExceededError when not admitted; TypeError/RangeError for a
   *   `task` that is not a function or bad options; the `TimeoutError` at the deadline; otherwise
   *   whatever the task threw.
   */
  run<T>(task: (signal: AbortSignal) => T | PromiseLike<T>, options?: AcquireOptions): Promise<T> {
    if (typeof task !== 'function') return Promise.reject(taskError(task));
    if (options === undefined && this.#unitFree()) {
      const timed = this.#timed(false);
      const plain = this.#plain;
      if (plain !== undefined && !timed) {
        this.#count(1, 0);
        return plain.run(task) as Promise<T>;
      }
      const startTime = timed ? this.#time.now() : Number.NaN;
      if (timed) this.#feed.started(startTime);
      return this.#slots.run(task, startTime, this.#count(1, 0)) as Promise<T>;
    }
    // Queued: the waiter carries the task and starts it when granted (no closure per queued call).
    const admitted = task as (signal: AbortSignal) => unknown;
    return this.#admission.admit(options, admitted, undefined, this.#closed) as Promise<T>;
  }

  /**
   * Stops admitting and rejects every queued waiter (reason `closed`); resolves once every permit is
   * released or `timeoutMs` has passed on the limiter's clock, with what was still held
   * (`{ drained, permits, inflight }`; never rejects for held permits). A leaked permit is reclaimed
   * when collected (`trackLeaks`), which may never happen: bound the wait with `timeoutMs`. Idempotent.
   * @throws (as a rejected promise, before anything changes) TypeError/RangeError for bad options.
   */
  close(options?: CloseOptions): Promise<CloseResult> {
    let timeoutMs: number;
    try {
      timeoutMs = closeTimeout(options);
    } catch (error) {
      return Promise.reject(error);
    }
    this.#closed = true;
    this.#refusals.closeAll();
    return this.#closing.wait(timeoutMs, () => ({
      drained: this.#permits === 0,
      permits: this.#permits,
      inflight: this.#inflight,
    }));
  }

  /** @internal Called by a permit, once. */
  _release(permit: Permit, outcome: Outcome): void {
    this.#release(permit.cost, permit.startTime, permit.inflight, outcome);
  }

  #release(cost: number, startTime: number, inflight: number, outcome: Outcome): void {
    this.#inflight -= cost;
    this.#permits--;
    const timed = !Number.isNaN(startTime);
    // One clock read per release: the dispatch below reuses it.
    const now = timed ? this.#time.now() : Number.NaN;
    const rtt = now - startTime; // never negative: the limiter's time does not go backwards
    // Only a timed or dropped call tells the feed anything (and the untimed path then makes no call).
    const stalled =
      timed || outcome === 'dropped'
        ? this.#feed.released(startTime, inflight, rtt, outcome)
        : false;
    if (listeners(this).release !== undefined) {
      emitSafely(this, 'release', { outcome, rtt, cost, inflight: this.#inflight, stalled });
    }
    this.#gate?.released(cost);
    if (this.#queue.size > 0) this.#queue.dispatch(now);
    this.#gate?.afterRelease();
    if (this.#permits === 0 && this.#closed) this.#closing.finish();
  }

  /**
   * Refuses every queued {@link acquireWith} request that `match` accepts, oldest first, as its
   * ticket's `cancel(cause)` would: an integration drops its requests at once (a circuit that opens)
   * without keeping their tickets. `match` sees them all before any is refused.
   * @returns how many were refused. @throws TypeError when `match` is not a function.
   */
  cancelRequests(match: (request: PermitRequest) => boolean, cause?: unknown): number {
    if (typeof match !== 'function') throw taskError(match, 'match', 'cancelRequests');
    return this.#refusals.cancelRequests(match, cause);
  }

  /** @internal Called by a queued waiter whose signal aborted or whose ticket was cancelled. */
  _abortWaiter(waiter: Waiter, cause: unknown): boolean {
    return this.#refusals.abort(waiter, cause);
  }

  /** @internal Serves queued waiters that now fit (called by a `PartitionedLimiter` when shared capacity frees). */
  _dispatch(): void {
    if (this.#queue.size > 0) this.#queue.dispatch(Number.NaN);
  }

  #fits(cost: number): boolean {
    if (this.#gate !== undefined) return this.#gate.fits(cost, this.#inflight);
    // A job costlier than the capacity (the limit shrank) runs alone once nothing is in flight.
    return this.#inflight + cost <= this.#capacity || (this.#inflight === 0 && this.#capacity > 0);
  }

  /** Whether a grant is timed: see LimitFeed.timed; and every call while someone listens to 'release' (it reports rtt). */
  #timed(hasDeadline: boolean): boolean {
    return this.#feed.timed(hasDeadline) || listeners(this).release !== undefined;
  }

  /**
   * Takes `cost` units; returns the permit (`waiter` itself, or a new one). `waitedMs`: time queued
   * (`NaN`: not measured); `known`: the clock if the caller just read it (`NaN` otherwise).
   */
  #grant(
    cost: number,
    waitedMs: number,
    timed: boolean,
    known: number,
    waiter: Waiter | undefined,
  ): Permit {
    const startTime = timed ? (Number.isNaN(known) ? this.#time.now() : known) : Number.NaN;
    if (timed) this.#feed.started(startTime);
    const inflight = this.#count(cost, waitedMs);
    if (waiter === undefined) return new Permit(this, cost, startTime, inflight);
    waiter.granted(startTime, inflight);
    return waiter;
  }

  /** Counts `cost` units as taken; returns the in-flight units the permit records. */
  #count(cost: number, waitedMs: number): number {
    this.#inflight += cost;
    this.#permits++;
    const gate = this.#gate;
    gate?.granted(cost);
    if (listeners(this).acquire !== undefined) {
      const capacity = this.#capacity;
      emitSafely(this, 'acquire', { cost, inflight: this.#inflight, capacity, waitedMs });
    }
    return gate === undefined ? this.#inflight : gate.inflight();
  }
}

/** Arrival (clock ms) of the oldest queued request: the lane's oldest, else the oldest waiter. */
function oldestAt(queue: WaitQueue): number {
  return queue.lane.size > 0 ? queue.lane.oldestAt : (queue.head?.enqueuedAt ?? Number.NaN);
}
