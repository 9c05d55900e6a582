import type { RejectReason } from 'limits-core';
import type { BudgetOperation } from './errors.js';
import type { FailurePolicy } from './options.js';

/** A lease was granted (`backed: false` when `onFailure: 'open'` let the call through without Redis). */
export interface BudgetAcquireEvent {
  /** The lease's id. */
  id: string;
  /** Units it holds. */
  cost: number;
  /** Redis holds it (false: granted by `onFailure: 'open'` while Redis failed). */
  backed: boolean;
  /** Units in use across the fleet right after the grant (NaN when not backed). */
  used: number;
  /** The budget's limit. */
  limit: number;
  /** Time spent waiting for the lease, in ms (the budget's clock). */
  waitedMs: number;
}

/** A lease was released. */
export interface BudgetReleaseEvent {
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
export interface BudgetRejectEvent {
  /** Why: `limit`, `expired`, `aborted`, `too_large` or `closed`. */
  reason: RejectReason;
  /** Units asked for. */
  cost: number;
  /** Units in use at the last answer from Redis (NaN when unknown). */
  used: number;
  /** The budget's limit. */
  limit: number;
}

/** Redis failed (or did not answer within `timeoutMs`) and the failure policy applied. */
export interface BudgetRedisFailureEvent {
  /** What the budget was doing. */
  operation: BudgetOperation;
  /** The budget's `onFailure`. */
  policy: FailurePolicy;
  /** Redis did not answer within `timeoutMs`. */
  timedOut: boolean;
  /** The client's error, the timeout, or "not connected". */
  error: unknown;
}

/** Redis answered again after one or more failures. */
export interface BudgetRedisRecoveredEvent {
  /** Time since the first failure of the episode, in ms. */
  downMs: number;
}

/** A held lease was found gone from Redis (expired while its renewals failed, or deleted). */
export interface BudgetLeaseLostEvent {
  /** The lease's id. */
  id: string;
  /** Units it held. */
  cost: number;
  /** How long it had been held, in ms. */
  heldMs: number;
}

/**
 * A lease (or the lease of a `BudgetedPermit`) was garbage-collected before `release()`: its units
 * were given back to the fleet (one Redis round trip, followed by a `release` event).
 */
export interface BudgetLeakEvent {
  /** The lease's id. */
  id: string;
  /** Units it held. */
  cost: number;
  /** How long it was held before it was collected, in ms (the budget's clock). */
  heldMs: number;
}

/** Events of {@link RedisConcurrencyBudget}. */
export interface BudgetEvents {
  acquire: [BudgetAcquireEvent];
  release: [BudgetReleaseEvent];
  reject: [BudgetRejectEvent];
  redisFailure: [BudgetRedisFailureEvent];
  redisRecovered: [BudgetRedisRecoveredEvent];
  leaseLost: [BudgetLeaseLostEvent];
  leak: [BudgetLeakEvent];
  /** A listener of another event threw (without an `error` listener, it is rethrown on a microtask). */
  error: [unknown];
}
