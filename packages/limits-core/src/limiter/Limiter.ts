import { EventEmitter } from 'eventemitter3';
import type { LimitAlgorithm } from '../algorithms/LimitAlgorithm.js';
import type { LimitExceededError, RejectReason } from '../errors/LimitExceededError.js';
import { DeficitRoundRobin } from '../fairness/DeficitRoundRobin.js';
import { type Clock, systemClock } from '../internal/clock.js';
import { MonotonicTime } from '../internal/MonotonicTime.js';
import { PromiseCapture } from '../internal/PromiseCapture.js';
import type { Outcome } from '../permit/outcome.js';
import { Permit } from '../permit/Permit.js';
import { RankOrder } from '../queue/RankOrder.js';
import { Waiter, WaiterExtras } from '../queue/Waiter.js';
import { WaitQueue } from '../queue/WaitQueue.js';
import { AdmissionThreshold } from '../shedding/AdmissionThreshold.js';
import { checkAcquire, closeTimeout, taskError, tryAcquireCost } from './checks.js';
import { emitSafely, listeners } from './emit.js';
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
import { rejection } from './rejection.js';
import { resolveOptions } from './resolveOptions.js';
import type { ServiceTime } from './ServiceTime.js';
import { TaskRunner } from './TaskRunner.js';

/** A `close()` caller waiting for the permits in flight. */
interface CloseWaiter {
  resolve: (result: CloseResult) => void;
  timer: unknown;
}

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
  // The flow of one call, top-down: admission (`tryAcquire`, `acquire`, `acquireWith`, `run`: refuse,
  // grant now, or queue), the grant (`#grant`, `#count`; the queue's `_serve` for a waiter), the
  // release (`_release` → `#release`: the feed, then the queue is served), refusals and `close`.
  // The task a `run()` starts runs in TaskRunner; the feedback to the algorithm is LimitFeed's.
  readonly #feed: LimitFeed;
  readonly #time: MonotonicTime;
  readonly #service: ServiceTime;
  readonly #queue: WaitQueue;
  readonly #capture: PromiseCapture;
  readonly #runner: TaskRunner;
  readonly #gate: CapacityGate | undefined;
  readonly #clock: Clock;
  /** The largest cost admitted (the gate's, with one). */
  readonly #maxCost: number;
  readonly #maxQueued: number;
  readonly #maxQueuedBytes: number;
  /**
   * A call without options may take the fast paths: a cost of 1 can be admitted (`maxCost` ≥ 1;
   * else admission refuses it as `too_large`) and nothing ranks calls (no `shedding`).
   */
  readonly #unitFast: boolean;
  /** The admission threshold (`shedding`), if any. */
  readonly #threshold: AdmissionThreshold | undefined;
  readonly #leaks: LeakTracker | undefined;
  #capacity: number;
  #inflight = 0;
  #permits = 0;
  #closed = false;
  /** The `close()` callers waiting for the permits in flight. */
  #closeWaiters: CloseWaiter[] = [];

  /** @throws RangeError/TypeError naming the option, the allowed range and the value given. */
  constructor(options: LimiterOptions = {}) {
    super();
    const o = resolveOptions(options);
    const time = new MonotonicTime(o.clock, o.clock === systemClock);
    this.#time = time;
    this.#clock = o.clock;
    this.#gate = o.gate;
    this.#maxCost = o.gate?.maxCost ?? o.maxCost;
    this.#maxQueued = o.maxQueued;
    this.#maxQueuedBytes = o.maxQueuedBytes;
    this.#unitFast = this.#maxCost >= 1 && o.shedding === undefined;
    this.#threshold =
      o.shedding === undefined ? undefined : new AdmissionThreshold(o.shedding, time.now());
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
    const service = feed.service;
    this.#service = service;
    const reclaim = (cost: number) => this.#release(cost, Number.NaN, 0, 'ignore');
    this.#leaks = LeakTracker.create(o.trackLeaks, this, time, reclaim);
    const capture = new PromiseCapture();
    this.#capture = capture;
    this.#runner = new TaskRunner(
      time,
      capture,
      this,
      o.classify,
      o.estimator,
      this.#leaks,
      service,
      !o.adaptive,
      (startTime, inflight, outcome) => this.#release(1, startTime, inflight, outcome),
    );
    // The limiter is its queue's Grantor (`_fits`, `_serve`, `_serveLane`, `_expired`).
    this.#queue = new WaitQueue(o, time, service, this);
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
      shedding: this.#threshold?.view(),
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
    const cost = options === undefined ? 1 : tryAcquireCost(options, this.#time);
    const queue = this.#queue;
    if (
      Number.isNaN(cost) ||
      this.#closed ||
      (queue.size > 0 && !queue.newestFirst()) ||
      cost > this.#maxCost ||
      (this.#threshold !== undefined && this.#shed(options, this.#time.now()) < 0) ||
      !this.#fits(cost)
    ) {
      return undefined;
    }
    const timeBound = options?.deadline !== undefined || options?.timeoutMs !== undefined;
    const permit = this.#grant(cost, 0, this.#timed(timeBound), Number.NaN, undefined);
    this.#leaks?.track(permit);
    return permit;
  }

  /**
   * Takes a permit, waiting in the bounded queue when the limiter is full. Report its outcome
   * exactly once; a permit collected without one is reclaimed and reported (see `trackLeaks`).
   * @returns the permit.
   * @throws (as a rejected promise, never synchronously) LimitExceededError with the reason it was
   *   not admitted; TypeError/RangeError for bad options, before anything changes.
   */
  acquire(options?: AcquireOptions): Promise<Permit> {
    return this.#admit(options, undefined, undefined) as Promise<Permit>;
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
    return this.#admit(options, undefined, request) as Permit | undefined;
  }

  /**
   * The no-options fast paths' condition (`acquireWith()`, `run()`; a one-line `acquire()` measured
   * faster without): open, nobody queued (else full admission decides), a cost of 1 admissible and free.
   */
  #unitFree(): boolean {
    return !this.#closed && this.#queue.size === 0 && this.#unitFast && this.#fits(1);
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
      const runner = this.#runner;
      if (runner.plain && !timed) {
        this.#count(1, 0);
        return runner.runPlain(task) as Promise<T>;
      }
      const startTime = timed ? this.#time.now() : Number.NaN;
      if (timed) this.#feed.started(startTime);
      return runner.runCounted(task, startTime, this.#count(1, 0)) as Promise<T>;
    }
    // Queued: the waiter carries the task and starts it when granted (no closure per queued call).
    const admitted = task as (signal: AbortSignal) => unknown;
    return this.#admit(options, admitted, undefined) as Promise<T>;
  }

  /**
   * Admission of `acquire()`, `run()` (with `task`) and `acquireWith()` (with its `request`) beyond
   * their no-options fast paths: checks the options, refuses, grants at once what fits with nobody
   * ahead, and otherwise queues.
   * @returns the caller's promise; for a request the permit granted at once, else `undefined`.
   * @throws for a request only, bad options (a promise caller gets them as a rejection), before
   *   anything changes.
   */
  #admit(
    options: AcquireOptions | undefined,
    task: ((signal: AbortSignal) => unknown) | undefined,
    request: PermitRequest | undefined,
  ): unknown {
    let cost = 1;
    let now = Number.NaN;
    let deadline = Infinity;
    if (options !== undefined) {
      try {
        checkAcquire(task === undefined ? 'acquire' : 'run', options);
      } catch (error) {
        if (request !== undefined) throw error;
        return Promise.reject(error);
      }
      cost = options.cost ?? 1;
      if (options.signal?.aborted) {
        return this.#refuse(request, 'aborted', cost, options.signal.reason);
      }
      if (options.deadline !== undefined || options.timeoutMs !== undefined) {
        now = this.#time.now();
        deadline = this.#time.deadline(options.deadline, options.timeoutMs, now);
      }
    }
    if (this.#closed) return this.#refuse(request, 'closed', cost);
    if (cost > this.#maxCost) return this.#refuse(request, 'too_large', cost);
    // A time limit already spent is refused even when capacity is free.
    if (deadline <= now) return this.#refuse(request, 'deadline', cost);
    let rank = -1;
    if (this.#threshold !== undefined) {
      if (Number.isNaN(now)) now = this.#time.now();
      rank = this.#shed(options, now);
      if (rank < 0) return this.#refuse(request, 'shed', cost);
    }
    const queue = this.#queue;
    if ((queue.size === 0 || queue.newestFirst()) && this.#fits(cost)) {
      const permit = this.#grant(cost, 0, this.#timed(deadline !== Infinity), now, undefined);
      if (request !== undefined) return permit;
      if (task === undefined) {
        this.#leaks?.track(permit);
        return Promise.resolve(permit);
      }
      return this.#runner.start(permit, task, options, deadline, now);
    }
    if (options === undefined && queue.selector === undefined)
      return this.#enqueuePlain(task, request);
    return this.#enqueue(cost, now, deadline, options, task, request, rank);
  }

  /**
   * {@link Limiter.#enqueue} for a request without options (cost 1, no bytes, deadline or signal)
   * and a queue without a selector: the same checks and effects, without the branches that cannot
   * apply (no extras, no deadline-aware admission, and `queue.add` cannot throw). Kept because it
   * pays where users look: without it the Vegas `Limiter.run` row for 10,000 at once took 1.14–1.45×
   * as long (three same-run comparisons against a build without it).
   */
  #enqueuePlain(
    task: ((signal: AbortSignal) => unknown) | undefined,
    request: PermitRequest | undefined,
  ): unknown {
    const queue = this.#queue;
    const maxQueued = this.#maxQueued;
    if (maxQueued === 0 || queue.size >= maxQueued || queue.queuedBytes > this.#maxQueuedBytes) {
      return this.#enqueue(1, Number.NaN, Infinity, undefined, task, request, -1);
    }
    const now = queue.arrivalReportedOnly ? this.#time.turnNow() : this.#time.now();
    const promise = request === undefined ? this.#capture.promise() : undefined;
    // A plain run() on a limiter with plain runs: the lane when FIFO order allows (no waiter object).
    if (task !== undefined && this.#runner.plain && queue.laneOpen) {
      queue.lane.push(task, this.#capture.take(), now);
      this.#announce(undefined, undefined, 1, 0);
      return promise;
    }
    const waiter = this.#waiter(1, now, undefined, task, request);
    queue.add(waiter, now, undefined);
    this.#announce(waiter, request, 1, 0);
    return promise;
  }

  /**
   * Queues (or refuses) an admitted request of `cost` units that cannot be granted now.
   * @param now - the limiter's time if read (`NaN` otherwise).
   * @param deadline - the caller's deadline (clock ms), `Infinity` for none.
   * @param task - for `run()`: the task to start once granted.
   * @param request - for `acquireWith()`: the request to answer.
   * @param rank - with `shedding`, the call's rank (-1 otherwise): a full queue makes room for it by
   *   refusing a lower-ranked waiter.
   * @returns the caller's promise; for a request the permit if served at once, else `undefined`.
   */
  #enqueue(
    cost: number,
    now: number,
    deadline: number,
    options: AcquireOptions | undefined,
    task: ((signal: AbortSignal) => unknown) | undefined,
    request: PermitRequest | undefined,
    rank: number,
  ): unknown {
    const queue = this.#queue;
    if (this.#maxQueued === 0) return this.#refuse(request, 'at_limit', cost);
    // A loop: refusing a waiter runs its caller's code, which may queue another request.
    while (queue.size >= this.#maxQueued) {
      if (!this.#makeRoom(rank)) return this.#refuse(request, 'queue_full', cost);
    }
    if (queue.selector?.refuse(options?.tenant) !== undefined) {
      return this.#refuse(request, 'queue_full', cost, undefined, 0, options?.tenant);
    }
    const bytes = options?.bytes ?? 0;
    if (queue.queuedBytes + bytes > this.#maxQueuedBytes) {
      return this.#refuse(request, 'queue_bytes', cost, undefined, bytes);
    }
    if (Number.isNaN(now)) now = this.#time.now();
    // Deadline-aware admission: the caller needs the result by `deadline`; refuse now what the
    // queue ahead cannot start, and the call cannot finish, in time.
    if (
      deadline !== Infinity &&
      now + this.#estimateWait(cost) + this.#service.finishMargin() > deadline
    ) {
      return this.#refuse(request, 'deadline', cost);
    }
    const selective = queue.selector !== undefined;
    const extras = waiterExtras(bytes, deadline, options, task !== undefined, selective);
    const promise = request === undefined ? this.#capture.promise() : undefined;
    const waiter = this.#waiter(cost, now, extras, task, request);
    try {
      queue.add(waiter, now, rank < 0 ? options : { priority: rank });
    } catch (error) {
      // Nothing changed (a user's estimator or fairness quantum function threw).
      if (request !== undefined) throw error;
      // The caller's promise rejects with that error (any error: `_refused` only passes it on).
      waiter._refused(error as LimitExceededError);
      return promise;
    }
    this.#announce(waiter, request, cost, bytes);
    // Work-conserving: a newcomer the selector puts first (a higher priority, a tenant's turn) that
    // fits starts now rather than at the next release. (FIFO and LIFO are decided at admission.)
    if (selective && waiter.slot >= 0 && this.#fits(cost) && queue.selectorPicks(waiter, now)) {
      queue.take(waiter, now);
      if (queue.size === 0) queue.clearTimer();
      this.#grantWaiter(waiter, now);
      if (request !== undefined) return waiter;
      waiter._granted(this.#runner, now);
    }
    return promise;
  }

  /**
   * The waiter of a request about to be queued: the request's own, or for a promise caller one
   * holding the resolve function of the promise `#capture.promise()` has just made (one shared
   * executor instead of a closure and its context per queued call).
   */
  #waiter(
    cost: number,
    now: number,
    extras: WaiterExtras | undefined,
    task: ((signal: AbortSignal) => unknown) | undefined,
    request: PermitRequest | undefined,
  ): QueuedCall {
    if (request !== undefined) return new RequestWaiter(this, cost, now, request, extras);
    if (task === undefined) return new AcquireWaiter(this, cost, now, this.#capture.take(), extras);
    return new RunWaiter(this, cost, now, this.#capture.take(), extras, task);
  }

  /** A waiter entered the queue: its request gets its ticket, and `queue` listeners hear of it. */
  #announce(
    waiter: Waiter | undefined,
    request: PermitRequest | undefined,
    cost: number,
    bytes: number,
  ): void {
    if (request !== undefined) request.queued?.(waiter as QueuedCall);
    if (listeners(this).queue !== undefined) {
      const queue = this.#queue;
      emitSafely(this, 'queue', {
        cost,
        bytes,
        queued: queue.size,
        queuedBytes: queue.queuedBytes,
      });
    }
  }

  /**
   * With `shedding`: ends the threshold's interval when due, ranks the call and counts its arrival.
   * @returns the call's rank, or -1 when it is below the threshold (to be refused as `shed`).
   */
  #shed(options: AcquireOptions | undefined, now: number): number {
    const threshold = this.#threshold as AdmissionThreshold;
    if (now >= threshold.tickAt) this.#tick(now);
    const rank = threshold.rankOf(options?.criticality, options?.attempt, options?.cohort);
    return threshold.admits(rank) ? rank : -1;
  }

  /**
   * Ends the threshold's interval: it moves with the queue's state, and waiters now below it leave
   * with reason `shed` (a risen threshold refuses the queued calls it would refuse at the door).
   */
  #tick(now: number): void {
    const threshold = this.#threshold as AdmissionThreshold;
    const queue = this.#queue;
    const before = threshold.rank;
    const raised = threshold.tick(now, {
      queued: queue.size,
      oldestMs: queue.size === 0 ? 0 : Math.max(0, now - oldestAt(queue)),
      capacity: this.#gate?.capacity() ?? this.#capacity,
      serviceMs: this.#service.meanMs,
    });
    if (raised) {
      const order = queue.selector as RankOrder;
      for (let w = order.lowest(); w !== undefined; w = order.lowest()) {
        if (!threshold.below(RankOrder.rankOf(w))) break;
        this.#remove(w, 'shed');
      }
    }
    if (threshold.rank !== before && listeners(this).threshold !== undefined) {
      emitSafely(this, 'threshold', threshold.view());
    }
  }

  /**
   * With `shedding`, a full queue makes room for a call of `rank` by refusing its lowest-ranked
   * waiter (reason `shed`) when that one ranks below the call.
   * @returns whether room was made.
   */
  #makeRoom(rank: number): boolean {
    if (rank < 0) return false;
    const order = this.#queue.selector as RankOrder;
    const lowest = order.lowest();
    if (lowest === undefined || RankOrder.rankOf(lowest) >= rank) return false;
    this.#remove(lowest, 'shed');
    return true;
  }

  /** Ms until the work ahead leaves room for `cost` units, at `capacity` units per service time. */
  #estimateWait(cost: number): number {
    const capacity = this.#gate?.capacity() ?? this.#capacity;
    const units = this.#inflight + this.#queue.queuedCost + cost - capacity;
    return units <= 0 ? 0 : (units * this.#service.estimate()) / Math.max(1, capacity);
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
    this.#refuseAllQueued();
    if (this.#permits === 0) {
      this.#feed.stall?.stop();
      return Promise.resolve(this.#held());
    }
    return new Promise((resolve) => {
      const waiter: CloseWaiter = { resolve, timer: undefined };
      this.#closeWaiters.push(waiter);
      if (timeoutMs === Infinity) return;
      const clock = this.#clock;
      waiter.timer = clock.setTimeout(() => {
        waiter.timer = undefined;
        const i = this.#closeWaiters.indexOf(waiter);
        if (i >= 0) this.#closeWaiters.splice(i, 1);
        resolve(this.#held());
      }, timeoutMs);
      // The system clock's timers do not hold the process open; a bounded close should (else
      // `await limiter.close({ timeoutMs })` at the top level ends the process before it resolves).
      const handle = waiter.timer as { ref?: () => unknown } | null;
      if (typeof handle === 'object' && handle !== null && typeof handle.ref === 'function') {
        handle.ref();
      }
    });
  }

  /** What `close()` reports as still held. */
  #held(): CloseResult {
    return { drained: this.#permits === 0, permits: this.#permits, inflight: this.#inflight };
  }

  /** The closed limiter's last permit is back: stops its background work, resolves every `close()`. */
  #drained(): void {
    this.#feed.stall?.stop();
    const waiters = this.#closeWaiters;
    this.#closeWaiters = [];
    for (const w of waiters) {
      if (w.timer !== undefined) this.#clock.clearTimeout(w.timer);
      w.resolve({ drained: true, permits: 0, inflight: 0 });
    }
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
    if (this.#permits === 0 && this.#closed) this.#drained();
  }

  /**
   * Refuses every queued {@link acquireWith} request that `match` accepts, oldest first, as its
   * ticket's `cancel(cause)` would: an integration drops its requests at once (a circuit that opens)
   * without keeping their tickets. `match` sees them all before any is refused.
   * @returns how many were refused. @throws TypeError when `match` is not a function.
   */
  cancelRequests(match: (request: PermitRequest) => boolean, cause?: unknown): number {
    if (typeof match !== 'function') throw taskError(match, 'match', 'cancelRequests');
    return this.#cancelRequests(match, cause);
  }

  /** @internal Called by a queued waiter whose signal aborted or whose ticket was cancelled. */
  _abortWaiter(waiter: Waiter, cause: unknown): boolean {
    const queue = this.#queue;
    if (!queue.has(waiter)) return false;
    this.#remove(waiter, 'aborted', cause);
    // The waiter may have been the head blocking others.
    queue.dispatch(Number.NaN);
    return true;
  }

  /** @internal Serves queued waiters that now fit (called by a `PartitionedLimiter` when shared capacity frees). */
  _dispatch(): void {
    if (this.#queue.size > 0) this.#queue.dispatch(Number.NaN);
  }

  /** @internal The queue asks whether `cost` units fit now. */
  _fits(cost: number): boolean {
    return this.#fits(cost);
  }

  /** @internal The queue serves `w` (already out of it): it is granted and its wait ends. */
  _serve(w: Waiter, now: number): void {
    this.#grantWaiter(w, now);
    (w as QueuedCall)._granted(this.#runner, now);
  }

  /**
   * @internal The queue serves a lane request (a queued plain run, see `RunLane`): its unit is
   * counted and its task started, on the plain path, or under a timed permit while someone listens
   * to `release` (its event reports the rtt).
   */
  _serveLane(task: unknown, resolve: unknown): void {
    const timed = listeners(this).release !== undefined;
    const permit = timed ? this.#grant(1, Number.NaN, true, Number.NaN, undefined) : undefined;
    if (!timed) this.#count(1, Number.NaN);
    this.#runner.startLane(task, resolve, permit, !timed && this.#feed.timed(false));
  }

  /** @internal The queue dropped `w` by time (expired, past its deadline, CoDel): it is refused. */
  _expired(w: Waiter): void {
    this.#refuseWaiter(w, 'expired');
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
   * Counts the grant of `w`, out of the queue, and makes it the permit (its hand-over is the caller's).
   * @param now - the limiter's time if read (`NaN` otherwise: the wait is not measured, and the
   *   `acquire` event reports `waitedMs: NaN`).
   */
  #grantWaiter(w: Waiter, now: number): void {
    const waitedMs = Number.isNaN(now) ? Number.NaN : now - w.enqueuedAt;
    this.#grant(w.cost, waitedMs, this.#timed(w.deadline !== Infinity), now, w);
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
    this.#threshold?.granted();
    const gate = this.#gate;
    gate?.granted(cost);
    if (listeners(this).acquire !== undefined) {
      const capacity = this.#capacity;
      emitSafely(this, 'acquire', { cost, inflight: this.#inflight, capacity, waitedMs });
    }
    return gate === undefined ? this.#inflight : gate.inflight();
  }

  /** The error for a refused request of `cost` units (and `bytes`, `tenant`); emits `reject`. */
  #error(
    reason: RejectReason,
    cost: number,
    cause?: unknown,
    bytes = 0,
    tenant?: string,
  ): LimitExceededError {
    const queue = this.#queue;
    const service = this.#service;
    const error = rejection(
      reason,
      {
        inflight: this.#inflight,
        capacity: this.#gate?.capacity() ?? this.#capacity,
        queued: queue.size,
        maxQueued: this.#maxQueued,
        queuedCost: queue.queuedCost,
        queuedBytes: queue.queuedBytes,
        maxQueuedBytes: this.#maxQueuedBytes,
        maxCost: this.#maxCost,
        serviceMs: service.estimate(),
        retryServiceMs: service.retryEstimate(),
        cost,
        bytes,
        tenant,
      },
      cause,
    );
    if (listeners(this).reject !== undefined) {
      const retryAfterMs = error.retryAfterMs;
      emitSafely(
        this,
        'reject',
        retryAfterMs === undefined ? { reason, cost } : { reason, cost, retryAfterMs },
      );
    }
    return error;
  }

  /**
   * A refusal at admission: a rejected promise, or for a `request` a call to its `refused` (and
   * `undefined`).
   */
  #refuse(
    request: PermitRequest | undefined,
    reason: RejectReason,
    cost: number,
    cause?: unknown,
    bytes?: number,
    tenant?: string,
  ): unknown {
    const error = this.#error(reason, cost, cause, bytes, tenant);
    if (request === undefined) return Promise.reject(error);
    request.refused(error);
    return undefined;
  }

  /** Refuses a waiter that already left the queue (`expired`: also emits `expire`). */
  #refuseWaiter(w: Waiter, reason: RejectReason, cause?: unknown): void {
    if (reason === 'expired' && listeners(this).expire !== undefined) {
      emitSafely(this, 'expire', {
        reason,
        cost: w.cost,
        waitedMs: this.#time.now() - w.enqueuedAt,
      });
    }
    (w as QueuedCall)._refused(this.#error(reason, w.cost, cause));
  }

  /** Takes a queued waiter out of the queue and refuses it. */
  #remove(w: Waiter, reason: RejectReason, cause?: unknown): void {
    this.#queue.remove(w);
    this.#refuseWaiter(w, reason, cause);
  }

  /**
   * Takes every queued `acquireWith` request that `match` accepts out of the queue, oldest first, and
   * refuses it with reason `aborted` (`cause` as the error's cause); then serves the waiters they
   * blocked. `match` sees every request before any is refused; one granted or refused meanwhile (by
   * what a refusal ran) is skipped.
   */
  #cancelRequests(match: (request: PermitRequest) => boolean, cause: unknown): number {
    const queue = this.#queue;
    const picked: Waiter[] = [];
    queue.forEach((w) => {
      if (w instanceof RequestWaiter && match(w.request)) picked.push(w);
    });
    let refused = 0;
    for (const w of picked) {
      if (!queue.has(w)) continue;
      this.#remove(w, 'aborted', cause);
      refused++;
    }
    if (refused > 0) queue.dispatch(Number.NaN);
    return refused;
  }

  /** Refuses every queued waiter with reason `closed` and stops the queue's timer. */
  #refuseAllQueued(): void {
    const queue = this.#queue;
    // Lane requests first (the oldest), then the listed waiters.
    queue.lane.drain((resolve) =>
      (resolve as (v: unknown) => void)(Promise.reject(this.#error('closed', 1))),
    );
    for (let w = queue.head; w !== undefined; w = queue.head) this.#remove(w, 'closed');
    queue.clearTimer();
  }
}

/** Arrival (clock ms) of the oldest queued request: the lane's oldest, else the oldest waiter. */
function oldestAt(queue: WaitQueue): number {
  return queue.lane.size > 0 ? queue.lane.oldestAt : (queue.head?.enqueuedAt ?? Number.NaN);
}

/**
 * @internal What a queued request carries beyond its cost and arrival time ({@link WaiterExtras}), or
 * `undefined` for a plain one (no bytes, deadline, signal, selector or `run` options): most requests.
 */
export function waiterExtras(
  bytes: number,
  deadline: number,
  options: AcquireOptions | undefined,
  run: boolean,
  selective: boolean,
): WaiterExtras | undefined {
  const signal = options?.signal;
  if (
    bytes === 0 &&
    deadline === Infinity &&
    signal === undefined &&
    !selective &&
    !(run && options !== undefined)
  ) {
    return undefined;
  }
  const extras = new WaiterExtras();
  extras.bytes = bytes;
  extras.deadline = deadline;
  extras.signal = signal;
  if (run) extras.options = options;
  return extras;
}

/**
 * @internal A queued call of this limiter: a queue {@link Waiter} that knows how its wait ends. The
 * limiter ends it exactly once, by granting it (`_granted`: the waiter has become the permit; hand it
 * over) or refusing it (`_refused`). The kinds (`acquire()`, `run()`, an `acquireWith()` request)
 * differ only in those two. Its signal's abort, or its ticket's `cancel`, takes it out of the queue.
 */
abstract class QueuedCall extends Waiter {
  /**
   * The wait ended with a grant: the waiter is now a permit held by its caller (the limiter already
   * counted it). Hand it over: resolve the caller's promise, start the `run` task, or call the sink.
   * @param runner - leak tracking and the start of a `run` task.
   * @param now - the limiter's time if it was read for this grant (`NaN` otherwise).
   */
  abstract _granted(runner: TaskRunner, now: number): void;

  /** The wait ended with a refusal (expired, aborted, closed): tell the caller, once. */
  abstract _refused(error: LimitExceededError): void;

  /** The signal aborted. */
  handleEvent(): void {
    this.cancel(this.extras?.signal?.reason);
  }

  /**
   * Leaves the queue, refused with reason `aborted` (the public face of a queued request: a
   * `QueueTicket`).
   * @returns `false` when no longer queued.
   */
  cancel(cause?: unknown): boolean {
    // Once granted, the permit's owner may be a leak tracker's record: no longer queued.
    const owner = this._owner();
    return owner instanceof Limiter && owner._abortWaiter(this, cause);
  }
}

/**
 * @internal A queued `acquire()`: resolves the caller's promise with itself (the permit) when granted;
 * a refusal resolves it with a rejected promise (it keeps only the resolve function).
 */
export class AcquireWaiter extends QueuedCall {
  /** The caller promise's resolve function (called with the permit, or a rejection). */
  declare readonly resolve: (value: unknown) => void;

  constructor(
    owner: Limiter,
    cost: number,
    enqueuedAt: number,
    resolve: (value: unknown) => void,
    extras: WaiterExtras | undefined,
  ) {
    super(owner, cost, enqueuedAt, extras);
    this.resolve = resolve;
  }

  _granted(runner: TaskRunner): void {
    runner.track(this);
    this.resolve(this);
  }

  _refused(error: LimitExceededError): void {
    this.resolve(Promise.reject(error));
  }
}

/**
 * @internal A queued `run()`: carries its task and starts it when granted (one promise and no
 * closure per queued call); the task's result settles the caller's promise.
 */
export class RunWaiter extends QueuedCall {
  /**
   * The caller promise's resolve function (a refusal resolves it with a rejected promise). Only this
   * one is kept: keeping the reject function too made each of 100,000 queued runs 60 bytes bigger
   * and doubled the scavenger's time with 10,000 queued.
   */
  declare readonly resolve: (value: unknown) => void;
  /** The task to start under the permit once granted. */
  declare readonly task: (signal: AbortSignal) => unknown;

  constructor(
    owner: Limiter,
    cost: number,
    enqueuedAt: number,
    resolve: (value: unknown) => void,
    extras: WaiterExtras | undefined,
    task: (signal: AbortSignal) => unknown,
  ) {
    super(owner, cost, enqueuedAt, extras);
    this.resolve = resolve;
    this.task = task;
  }

  _granted(runner: TaskRunner, now: number): void {
    runner.startQueued(this, this.task, this.resolve, now);
  }

  _refused(error: LimitExceededError): void {
    this.resolve(Promise.reject(error));
  }
}

/**
 * @internal A queued `Limiter.acquireWith` request: the outcome goes to the integration's
 * {@link PermitRequest} (`granted(permit)` or `refused(error)`), a per-call object it already has: no
 * promise.
 */
export class RequestWaiter extends QueuedCall {
  declare readonly request: PermitRequest;

  constructor(
    owner: Limiter,
    cost: number,
    enqueuedAt: number,
    request: PermitRequest,
    extras: WaiterExtras | undefined,
  ) {
    super(owner, cost, enqueuedAt, extras);
    this.request = request;
  }

  _granted(): void {
    this.request.granted(this);
  }

  _refused(error: LimitExceededError): void {
    this.request.refused(error);
  }
}
