import type { RejectReason } from 'limits-core';
import type { LeasePoolOperation } from './errors.js';
import type { FailurePolicy } from './options.js';

/** A lease was granted (`backed: false` when `onFailure: 'open'` let the call through without Redis). */
export interface LeaseAcquireEvent {
  /** The lease's id. */
  id: string;
  /** Units it holds. */
  cost: number;
  /** Redis holds it (false: granted by `onFailure: 'open'` while Redis failed). */
  backed: boolean;
  /** Units in use across the fleet right after the grant (NaN when not backed). */
  used: number;
  /** The pool's limit. */
  limit: number;
  /** Time spent waiting for the lease, in ms (the pool's clock). */
  waitedMs: number;
}

/** A lease was released. */
export interface LeaseReleaseEvent {
  /** The lease's id. */
  id: string;
  /** Units it held. */
  cost: number;
  /** How long it was held, in ms. */
  heldMs: number;
  /** The lease was still in Redis (false: it had expired and been reclaimed, or Redis failed). */
  held: boolean;
}

/** An acquire was refused. */
export interface LeaseRejectEvent {
  /** Why: `limit`, `expired`, `aborted`, `too_large` or `closed`. */
  reason: RejectReason;
  /** Units asked for. */
  cost: number;
  /** Units in use at the last answer from Redis (NaN when unknown). */
  used: number;
  /** The pool's limit. */
  limit: number;
}

/** Redis failed (or did not answer within `timeoutMs`) and the failure policy applied. */
export interface RedisFailureEvent {
  /** What the pool was doing. */
  operation: LeasePoolOperation;
  /** The pool's `onFailure`. */
  policy: FailurePolicy;
  /** Redis did not answer within `timeoutMs`. */
  timedOut: boolean;
  /** The client's error, the timeout, or "not connected". */
  error: unknown;
}

/** Redis answered again after one or more failures. */
export interface RedisRecoveredEvent {
  /** Time since the first failure of the episode, in ms. */
  downMs: number;
}

/** A held lease was found gone from Redis (expired while its renewals failed, or deleted). */
export interface LeaseLostEvent {
  /** The lease's id. */
  id: string;
  /** Units it held. */
  cost: number;
  /** How long it had been held, in ms. */
  heldMs: number;
}

/**
 * A lease (or the lease of a `LeasedPermit`) was garbage-collected before `release()`: its units
 * were given back to the fleet (one Redis round trip, followed by a `release` event).
 */
export interface LeaseLeakEvent {
  /** The lease's id. */
  id: string;
  /** Units it held. */
  cost: number;
  /** How long it was held before it was collected, in ms (the pool's clock). */
  heldMs: number;
}

/** Events of {@link RedisLeasePool}. */
export interface LeasePoolEvents {
  acquire: [LeaseAcquireEvent];
  release: [LeaseReleaseEvent];
  reject: [LeaseRejectEvent];
  redisFailure: [RedisFailureEvent];
  redisRecovered: [RedisRecoveredEvent];
  leaseLost: [LeaseLostEvent];
  leak: [LeaseLeakEvent];
  /** A listener of another event threw (without an `error` listener, it is rethrown on a microtask). */
  error: [unknown];
}
