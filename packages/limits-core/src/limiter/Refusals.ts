import type { EventEmitter } from 'eventemitter3';
import { LimitExceededError, type RejectReason } from '../errors/LimitExceededError.js';
import type { MonotonicTime } from '../internal/MonotonicTime.js';
import type { Waiter } from '../queue/Waiter.js';
import type { WaitQueue } from '../queue/WaitQueue.js';
import { emitSafely, listeners } from './emit.js';
import type { LimiterEvents } from './events.js';
import type { CapacityGate } from './options.js';
import type { PermitRequest } from './PermitRequest.js';
import type { ServiceTime } from './ServiceTime.js';
import { RequestWaiter } from './waiters.js';

/** @internal The limiter as its refusals see it: its events, and the live counters a rejection quotes. */
export interface RefusalSource extends EventEmitter<LimiterEvents> {
  /** Units in flight. */
  readonly inflight: number;
  /** Units that may be in flight (without a gate). */
  readonly capacity: number;
}

/** @internal The fixed bounds a rejection message quotes (resolved limiter options). */
export interface QueueBounds {
  readonly maxQueued: number;
  readonly maxQueuedBytes: number;
  /** The largest cost admitted (the gate's, with one). */
  readonly maxCost: number;
}

/**
 * @internal Every refusal of one limiter, at admission and of queued waiters: builds the
 * {@link LimitExceededError} with the live numbers (see {@link rejection}), emits `reject` (and
 * `expire` for a waiter that left by time), and tells the caller: a rejected promise, a
 * {@link PermitRequest}'s `refused`, or the waiter's `_refused`. Cold code, kept off the limiter's
 * grant and release path.
 */
export class Refusals {
  readonly #source: RefusalSource;
  readonly #queue: WaitQueue;
  readonly #service: ServiceTime;
  readonly #time: MonotonicTime;
  readonly #bounds: QueueBounds;
  readonly #gate: CapacityGate | undefined;

  constructor(
    source: RefusalSource,
    queue: WaitQueue,
    service: ServiceTime,
    time: MonotonicTime,
    bounds: QueueBounds,
    gate: CapacityGate | undefined,
  ) {
    this.#source = source;
    this.#queue = queue;
    this.#service = service;
    this.#time = time;
    this.#bounds = bounds;
    this.#gate = gate;
  }

  /** The error for a refused request of `cost` units (and `bytes`, `tenant`); emits `reject`. */
  error(
    reason: RejectReason,
    cost: number,
    cause?: unknown,
    bytes = 0,
    tenant?: string,
  ): LimitExceededError {
    const source = this.#source;
    const queue = this.#queue;
    const bounds = this.#bounds;
    const error = rejection(
      reason,
      {
        inflight: source.inflight,
        capacity: this.#gate?.capacity() ?? source.capacity,
        queued: queue.size,
        maxQueued: bounds.maxQueued,
        queuedCost: queue.queuedCost,
        queuedBytes: queue.queuedBytes,
        maxQueuedBytes: bounds.maxQueuedBytes,
        maxCost: bounds.maxCost,
        serviceMs: this.#service.estimate(),
        retryServiceMs: this.#service.retryEstimate(),
        cost,
        bytes,
        tenant,
      },
      cause,
    );
    if (listeners(source).reject !== undefined) {
      const retryAfterMs = error.retryAfterMs;
      emitSafely(
        source,
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
  refuse(
    request: PermitRequest | undefined,
    reason: RejectReason,
    cost: number,
    cause?: unknown,
    bytes?: number,
    tenant?: string,
  ): unknown {
    const error = this.error(reason, cost, cause, bytes, tenant);
    if (request === undefined) return Promise.reject(error);
    request.refused(error);
    return undefined;
  }

  /** Refuses a waiter that already left the queue (`expired`: also emits `expire`). */
  refuseWaiter(w: Waiter, reason: RejectReason, cause?: unknown): void {
    const source = this.#source;
    if (reason === 'expired' && listeners(source).expire !== undefined) {
      emitSafely(source, 'expire', {
        reason,
        cost: w.cost,
        waitedMs: this.#time.now() - w.enqueuedAt,
      });
    }
    w._refused(this.error(reason, w.cost, cause));
  }

  /** Takes a queued waiter out of the queue and refuses it. */
  remove(w: Waiter, reason: RejectReason, cause?: unknown): void {
    this.#queue.remove(w);
    this.refuseWaiter(w, reason, cause);
  }

  /**
   * Takes a queued waiter whose signal aborted (or whose ticket was cancelled) out of the queue and
   * refuses it with reason `aborted`, then serves the waiters it may have blocked.
   * @returns `false` (and does nothing) when it was no longer queued.
   */
  abort(w: Waiter, cause: unknown): boolean {
    const queue = this.#queue;
    if (!queue.has(w)) return false;
    this.remove(w, 'aborted', cause);
    // The waiter may have been the head blocking others.
    queue.dispatch(Number.NaN);
    return true;
  }

  /**
   * Takes every queued `acquireWith` request that `match` accepts out of the queue, oldest first, and
   * refuses it with reason `aborted` (`cause` as the error's cause); then serves the waiters they
   * blocked. `match` sees every request before any is refused; one granted or refused meanwhile (by
   * what a refusal ran) is skipped.
   * @returns how many were refused.
   */
  cancelRequests(match: (request: PermitRequest) => boolean, cause: unknown): number {
    const queue = this.#queue;
    const picked: Waiter[] = [];
    queue.forEach((w) => {
      if (w instanceof RequestWaiter && match(w.request)) picked.push(w);
    });
    let refused = 0;
    for (const w of picked) {
      if (!queue.has(w)) continue;
      this.remove(w, 'aborted', cause);
      refused++;
    }
    if (refused > 0) queue.dispatch(Number.NaN);
    return refused;
  }

  /** Refuses every queued waiter with reason `closed` and stops the queue's timer. */
  closeAll(): void {
    const queue = this.#queue;
    // Lane requests first (the oldest), then the listed waiters.
    queue.lane.drain((resolve) =>
      (resolve as (v: unknown) => void)(Promise.reject(this.error('closed', 1))),
    );
    for (let w = queue.head; w !== undefined; w = queue.head) this.remove(w, 'closed');
    queue.clearTimer();
  }
}

/** @internal The live numbers a rejection message quotes. */
export interface RejectionNumbers {
  inflight: number;
  capacity: number;
  queued: number;
  maxQueued: number;
  queuedCost: number;
  queuedBytes: number;
  maxQueuedBytes: number;
  maxCost: number;
  /** The service time deadline checks use (quoted by a `deadline` refusal). */
  serviceMs: number;
  /** The service time `retryAfterMs` is based on; `undefined` when no estimate exists. */
  retryServiceMs: number | undefined;
  cost: number;
  bytes: number;
  tenant: string | undefined;
}

function formatBytes(n: number): string {
  if (n === Infinity) return '∞';
  if (n < 10240) return `${n} B`;
  return n < 10485760 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`;
}

/** @internal A rejection message with the live numbers, e.g. "queue full: 100/100 waiters, …". */
export function describeRejection(reason: RejectReason, n: RejectionNumbers): string {
  const inflight = `${n.inflight}/${n.capacity} units in flight`;
  switch (reason) {
    case 'at_limit':
      return `limit reached: ${inflight}, ${n.cost} requested, no queue (maxQueued 0)`;
    case 'queue_full':
      return n.tenant !== undefined && n.queued < n.maxQueued
        ? `tenant queue full: tenant "${n.tenant}" has reached maxQueuedPerTenant, ${inflight}`
        : `queue full: ${n.queued}/${n.maxQueued} waiters, ${inflight}`;
    case 'queue_bytes':
      return `queue bytes full: ${formatBytes(n.queuedBytes)} + ${formatBytes(n.bytes)} > ${formatBytes(n.maxQueuedBytes)}`;
    case 'too_large':
      return `cost ${n.cost} exceeds the largest capacity this limiter can have (${n.maxCost})`;
    case 'deadline':
      return `deadline cannot be met: ${n.queued} waiting (${n.queuedCost} units), ${inflight}, service ≈ ${Math.round(n.serviceMs)} ms`;
    case 'expired':
      return 'left the queue: its deadline or the maximum queue wait passed';
    case 'aborted':
      return 'aborted before a permit was granted';
    case 'closed':
      return 'limiter closed';
  }
}

/**
 * @internal The error for a refused request: the message with the live numbers, and `retryAfterMs`,
 * the time the work ahead needs to leave room for `cost` units at `capacity` units per service time
 * (left out when no service-time estimate exists: nothing measured, no `initialServiceMs` given).
 */
export function rejection(
  reason: RejectReason,
  n: RejectionNumbers,
  cause: unknown,
): LimitExceededError {
  const serviceMs = n.retryServiceMs;
  let retryAfterMs: number | undefined;
  if (serviceMs !== undefined) {
    const units = Math.max(1, n.inflight + n.queuedCost + n.cost - n.capacity);
    retryAfterMs = Math.max(0, Math.ceil((units * serviceMs) / Math.max(1, n.capacity)));
  }
  return new LimitExceededError(`limits: ${describeRejection(reason, n)}`, {
    reason,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(cause === undefined ? {} : { cause }),
  });
}
