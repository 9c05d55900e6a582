import type { EventEmitter } from 'eventemitter3';
import type { LimitExceededError } from '../errors/LimitExceededError.js';
import type { MonotonicTime } from '../internal/MonotonicTime.js';
import type { PromiseCapture } from '../internal/PromiseCapture.js';
import type { Permit, PermitOwner } from '../permit/Permit.js';
import { type Waiter, WaiterExtras, type WaiterOwner } from '../queue/Waiter.js';
import { WaitQueue } from '../queue/WaitQueue.js';
import { checkAcquire, tryAcquireCost } from './checks.js';
import { emitSafely, listeners } from './emit.js';
import type { LimiterEvents } from './events.js';
import type { LeakTracker } from './LeakTracker.js';
import type { AcquireOptions, CapacityGate } from './options.js';
import type { PermitRequest } from './PermitRequest.js';
import { Refusals } from './Refusals.js';
import type { ResolvedOptions } from './resolveOptions.js';
import type { ServiceTime } from './ServiceTime.js';
import type { TaskRunner } from './TaskRunner.js';
import { AcquireWaiter, RequestWaiter, RunWaiter } from './waiters.js';

/** @internal The limiter as its admission sees it: the waiters' owner, its events and counters. */
export interface AdmissionHost extends WaiterOwner, PermitOwner, EventEmitter<LimiterEvents> {
  /** Units in flight. */
  readonly inflight: number;
  /** Units that may be in flight (without a gate). */
  readonly capacity: number;
}

/**
 * @internal What admission and the queue call back into the limiter for: closures made once per
 * limiter (the wait queue's dispatch loop calls `fits` and `grant` directly: no extra hop).
 */
export interface LimiterGrants {
  /** Whether `cost` units fit now. */
  fits(cost: number): boolean;
  /**
   * Counts a grant of `cost` units at admission and returns the new permit.
   * @param timeBound - the caller gave a deadline (the call is timed).
   * @param now - the limiter's time if read (`NaN` otherwise).
   */
  grantNew(cost: number, timeBound: boolean, now: number): Permit;
  /**
   * Counts the grant of `w`, out of the queue, and makes it the permit (the hand-over is the
   * caller's: see `WaitQueueHost.grant`).
   * @param now - the limiter's time if read (`NaN` otherwise: the wait is not measured).
   */
  grant(w: Waiter, now: number): void;
  /**
   * Counts the grant of a lane request's unit (a queued plain run, see `RunLane`) and starts its
   * task: on the plain path, or under a timed permit while someone listens to `release` (its event
   * reports the rtt).
   */
  startLane(task: unknown, resolve: unknown): void;
}

/**
 * @internal A limiter's admission beyond its no-options fast paths (which the limiter keeps inline):
 * checks the acquire options, refuses (closed, too large, aborted, deadline; through
 * {@link Refusals}), grants at once what fits with nobody ahead, and otherwise queues: checks the
 * queue's bounds (count, per tenant, bytes) and deadline-aware admission, turns the request into its
 * {@link Waiter} (`acquire()`, `run()` or an `acquireWith()` request: one object, no closure), queues
 * it in the {@link WaitQueue} (queue/, which knows nothing of the limiter), emits `queue`, and serves
 * it at once when the selector puts the newcomer first and it fits (work-conserving).
 */
export class Admission {
  /** The waiters, their expiry and order. */
  readonly queue: WaitQueue;
  /** Every refusal of the limiter, at admission and of waiters. */
  readonly refusals: Refusals;
  readonly #host: AdmissionHost;
  readonly #service: ServiceTime;
  readonly #time: MonotonicTime;
  readonly #capture: PromiseCapture;
  readonly #runner: TaskRunner;
  readonly #leaks: LeakTracker | undefined;
  readonly #grants: LimiterGrants;
  readonly #gate: CapacityGate | undefined;
  readonly #maxCost: number;
  readonly #maxQueued: number;
  readonly #maxQueuedBytes: number;

  /** @param capture - the promise capture shared with `runner`. */
  constructor(
    host: AdmissionHost,
    o: ResolvedOptions,
    time: MonotonicTime,
    service: ServiceTime,
    capture: PromiseCapture,
    runner: TaskRunner,
    leaks: LeakTracker | undefined,
    grants: LimiterGrants,
  ) {
    const gate = o.gate;
    const expired = (w: Waiter) => this.refusals.refuseWaiter(w, 'expired');
    const queueHost = {
      fits: grants.fits,
      grant: grants.grant,
      expired,
      startLane: grants.startLane,
    };
    this.queue = new WaitQueue(o, time, service, queueHost, runner);
    const maxCost = gate?.maxCost ?? o.maxCost;
    const bounds = { maxQueued: o.maxQueued, maxQueuedBytes: o.maxQueuedBytes, maxCost };
    this.refusals = new Refusals(host, this.queue, service, time, bounds, gate);
    this.#host = host;
    this.#service = service;
    this.#time = time;
    this.#capture = capture;
    this.#runner = runner;
    this.#leaks = leaks;
    this.#grants = grants;
    this.#gate = gate;
    this.#maxCost = maxCost;
    this.#maxQueued = o.maxQueued;
    this.#maxQueuedBytes = o.maxQueuedBytes;
  }

  /** `tryAcquire()`: a permit if `cost` fits now with nobody ahead, else `undefined`; never waits. */
  tryAcquire(options: AcquireOptions | undefined, closed: boolean): Permit | undefined {
    const cost = options === undefined ? 1 : tryAcquireCost(options, this.#time);
    const queue = this.queue;
    if (
      Number.isNaN(cost) ||
      closed ||
      (queue.size > 0 && !queue.newestFirst()) ||
      cost > this.#maxCost ||
      !this.#grants.fits(cost)
    ) {
      return undefined;
    }
    const timeBound = options?.deadline !== undefined || options?.timeoutMs !== undefined;
    const permit = this.#grants.grantNew(cost, timeBound, Number.NaN);
    this.#leaks?.track(permit);
    return permit;
  }

  /**
   * Admission of `acquire()`, `run()` (with `task`) and `acquireWith()` (with its `request`).
   * @param closed - the limiter is closed.
   * @returns the caller's promise; for a request the permit granted at once, else `undefined`.
   * @throws for a request only, bad options (a promise caller gets them as a rejection), before
   *   anything changes.
   */
  admit(
    options: AcquireOptions | undefined,
    task: ((signal: AbortSignal) => unknown) | undefined,
    request: PermitRequest | undefined,
    closed: boolean,
  ): unknown {
    const refusals = this.refusals;
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
        return refusals.refuse(request, 'aborted', cost, options.signal.reason);
      }
      if (options.deadline !== undefined || options.timeoutMs !== undefined) {
        now = this.#time.now();
        deadline = this.#time.deadline(options.deadline, options.timeoutMs, now);
      }
    }
    if (closed) return refusals.refuse(request, 'closed', cost);
    if (cost > this.#maxCost) return refusals.refuse(request, 'too_large', cost);
    // A time limit already spent is refused even when capacity is free.
    if (deadline <= now) return refusals.refuse(request, 'deadline', cost);
    const queue = this.queue;
    if ((queue.size === 0 || queue.newestFirst()) && this.#grants.fits(cost)) {
      const permit = this.#grants.grantNew(cost, deadline !== Infinity, now);
      if (request !== undefined) return permit;
      if (task === undefined) {
        this.#leaks?.track(permit);
        return Promise.resolve(permit);
      }
      return this.#runner.start(permit, task, options, deadline, now);
    }
    if (options === undefined && queue.selector === undefined)
      return this.#enqueuePlain(task, request);
    return this.#enqueue(cost, now, deadline, options, task, request);
  }

  /**
   * {@link Admission.#enqueue} for a request without options (cost 1, no bytes, deadline or signal)
   * and a queue without a selector: the same checks and effects, without the branches that cannot
   * apply (no extras, no deadline-aware admission, and `queue.add` cannot throw).
   */
  #enqueuePlain(
    task: ((signal: AbortSignal) => unknown) | undefined,
    request: PermitRequest | undefined,
  ): unknown {
    const queue = this.queue;
    const maxQueued = this.#maxQueued;
    if (maxQueued === 0 || queue.size >= maxQueued || queue.queuedBytes > this.#maxQueuedBytes) {
      return this.#enqueue(1, Number.NaN, Infinity, undefined, task, request);
    }
    const now = queue.arrivalReportedOnly ? this.#time.turnNow() : this.#time.now();
    const promise = request === undefined ? this.#capture.promise() : undefined;
    // A plain run() on a limiter with plain runs: the lane when FIFO order allows (no waiter object).
    if (task !== undefined && this.#runner.plain !== undefined && queue.laneOpen) {
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
   * @returns the caller's promise; for a request the permit if served at once, else `undefined`.
   */
  #enqueue(
    cost: number,
    now: number,
    deadline: number,
    options: AcquireOptions | undefined,
    task: ((signal: AbortSignal) => unknown) | undefined,
    request: PermitRequest | undefined,
  ): unknown {
    const queue = this.queue;
    const refusals = this.refusals;
    if (this.#maxQueued === 0) return refusals.refuse(request, 'at_limit', cost);
    if (queue.size >= this.#maxQueued) return refusals.refuse(request, 'queue_full', cost);
    if (queue.selector?.refuse(options?.tenant) !== undefined) {
      return refusals.refuse(request, 'queue_full', cost, undefined, 0, options?.tenant);
    }
    const bytes = options?.bytes ?? 0;
    if (queue.queuedBytes + bytes > this.#maxQueuedBytes) {
      return refusals.refuse(request, 'queue_bytes', cost, undefined, bytes);
    }
    if (Number.isNaN(now)) now = this.#time.now();
    // Deadline-aware admission: the caller needs the result by `deadline`; refuse now what the
    // queue ahead cannot start, and the call cannot finish, in time.
    if (
      deadline !== Infinity &&
      now + this.#estimateWait(cost) + this.#service.finishMargin() > deadline
    ) {
      return refusals.refuse(request, 'deadline', cost);
    }
    const selective = queue.selector !== undefined;
    const extras = waiterExtras(bytes, deadline, options, task !== undefined, selective);
    const promise = request === undefined ? this.#capture.promise() : undefined;
    const waiter = this.#waiter(cost, now, extras, task, request);
    try {
      queue.add(waiter, now, options);
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
    const grants = this.#grants;
    if (selective && waiter.slot >= 0 && grants.fits(cost) && queue.selectorPicks(waiter, now)) {
      queue.take(waiter, now);
      if (queue.size === 0) queue.clearTimer();
      grants.grant(waiter, now);
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
  ): Waiter {
    const host = this.#host;
    if (request !== undefined) return new RequestWaiter(host, cost, now, request, extras);
    if (task === undefined) return new AcquireWaiter(host, cost, now, this.#capture.take(), extras);
    return new RunWaiter(host, cost, now, this.#capture.take(), extras, task);
  }

  /** A waiter entered the queue: its request gets its ticket, and `queue` listeners hear of it. */
  #announce(
    waiter: Waiter | undefined,
    request: PermitRequest | undefined,
    cost: number,
    bytes: number,
  ): void {
    if (request !== undefined) request.queued?.(waiter as Waiter);
    const host = this.#host;
    if (listeners(host).queue !== undefined) {
      const queue = this.queue;
      emitSafely(host, 'queue', {
        cost,
        bytes,
        queued: queue.size,
        queuedBytes: queue.queuedBytes,
      });
    }
  }

  /** Ms until the work ahead leaves room for `cost` units, at `capacity` units per service time. */
  #estimateWait(cost: number): number {
    const host = this.#host;
    const capacity = this.#gate?.capacity() ?? host.capacity;
    const units = host.inflight + this.queue.queuedCost + cost - capacity;
    return units <= 0 ? 0 : (units * this.#service.estimate()) / Math.max(1, capacity);
  }
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
