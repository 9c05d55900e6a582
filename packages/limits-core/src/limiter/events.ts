import type { LimitDecision, Sample } from '../algorithms/LimitAlgorithm.js';
import type { RejectReason } from '../errors/LimitExceededError.js';
import type { Outcome } from '../permit/outcome.js';
import type { ShedThreshold } from '../shedding/options.js';

/** Payload of the `limit` event: the integer limit changed. */
export interface LimitEvent {
  /** The new integer limit. */
  limit: number;
  /** The previous integer limit. */
  previous: number;
  /** The capacity now: `max(limit, probeSlots)`. */
  capacity: number;
  /** The sample that caused the change. */
  sample: Sample;
  /** Why, and the numbers behind it, when the algorithm explains itself. */
  decision?: LimitDecision;
}

/** Payload of the `acquire` event: a permit was granted. */
export interface AcquireEvent {
  /** Units held by the permit. */
  cost: number;
  /** Units in flight after the grant. */
  inflight: number;
  /** The capacity at the time. */
  capacity: number;
  /**
   * Ms the request waited in the queue (0 when admitted at once; `NaN` when the wait was not timed;
   * arrival read per synchronous run in the case `LimiterSnapshot.oldestQueuedMs` describes). The
   * arrival is kept rounded down to a whole ms, so a wait reads up to 1 ms long.
   */
  waitedMs: number;
}

/** Payload of the `release` event: a permit came back. */
export interface ReleaseEvent {
  /** How the call was reported. */
  outcome: Outcome;
  /** The call's duration in ms (`NaN` when the limiter does not time calls). */
  rtt: number;
  /** Units held by the permit. */
  cost: number;
  /** Units in flight after the release. */
  inflight: number;
  /** The sample was withheld from the algorithm because it overlapped an event-loop stall. */
  stalled: boolean;
}

/** Payload of the `reject` event: a request was not admitted or left the queue without a permit. */
export interface RejectEvent {
  /** Why. */
  reason: RejectReason;
  /** Units the request asked for. */
  cost: number;
  /**
   * The retry estimate given to the caller, in ms; left out when the limiter has no service-time
   * estimate yet (see `LimitExceededError.retryAfterMs`).
   */
  retryAfterMs?: number;
}

/** Payload of the `queue` event: a request entered the queue. */
export interface QueueEvent {
  /** Units it asks for. */
  cost: number;
  /** Bytes it holds while queued. */
  bytes: number;
  /** Waiters now in the queue. */
  queued: number;
  /** Bytes now held by the queue. */
  queuedBytes: number;
}

/** Payload of the `expire` event: a waiter left the queue by time. */
export interface ExpireEvent {
  /** Always `expired`: its deadline, the maximum queue wait, or the CoDel target passed. */
  reason: 'expired';
  /** Units it asked for. */
  cost: number;
  /** How long it waited, in ms (up to 1 ms long: the arrival is kept rounded down to a whole ms). */
  waitedMs: number;
}

/** Payload of the `leak` event: a permit was garbage-collected without an outcome, and reclaimed. */
export interface LeakEvent {
  /** Units it held (now back with the limiter). */
  cost: number;
  /** How long it was held before it was collected, in ms (`NaN` when the grant was not timed). */
  heldMs: number;
  /** Where it was acquired (only with `trackLeaks: 'stack'`). */
  stack?: string;
}

/** Events of a {@link Limiter} (eventemitter3), with their payloads. */
export interface LimiterEvents {
  /** The integer limit changed. */
  limit: (event: LimitEvent) => void;
  /** A permit was granted. */
  acquire: (event: AcquireEvent) => void;
  /** A permit came back. */
  release: (event: ReleaseEvent) => void;
  /** A request was rejected, at admission or when it left the queue without a permit. */
  reject: (event: RejectEvent) => void;
  /** A request entered the queue. */
  queue: (event: QueueEvent) => void;
  /** A waiter left the queue by time (followed by a `reject` with reason `expired`). */
  expire: (event: ExpireEvent) => void;
  /**
   * A permit from `acquire()`/`tryAcquire()` was garbage-collected without `success()`, `dropped()`
   * or `ignore()`: it was released as `ignore` (see `trackLeaks`).
   */
  leak: (event: LeakEvent) => void;
  /**
   * With `shedding`: the admission threshold moved (see {@link ShedThreshold}; `rank` 0: nothing is
   * refused by it). At most once per `shedding.intervalMs`.
   */
  threshold: (event: ShedThreshold) => void;
  /**
   * A listener threw, or the limit algorithm threw or gave a limit that is not a number in
   * `[0, Infinity)` (the limiter then keeps its last good limit). Without an `error` listener the
   * error is rethrown on a microtask.
   */
  error: (error: unknown) => void;
}
