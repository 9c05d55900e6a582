import type { RejectReason } from 'limits-core';
import type { BudgetOperation } from './errors.js';
import type { FailurePolicy } from './options.js';

/** A lease was granted (`backed: false` when `onFailure: 'open'` let the call through without Redis). */
export interface BudgetAcquireEvent {
  id: string;
  cost: number;
  backed: boolean;
  /** Units in use across the fleet right after the grant (NaN when not backed). */
  used: number;
  limit: number;
  /** Time spent waiting for the lease, in ms (the budget's clock). */
  waitedMs: number;
}

/** A lease was released. */
export interface BudgetReleaseEvent {
  id: string;
  cost: number;
  /** How long it was held, in ms. */
  heldMs: number;
  /** The lease was still in Redis (false: it had expired and been reclaimed, or Redis failed). */
  held: boolean;
}

/** An acquire was refused. */
export interface BudgetRejectEvent {
  reason: RejectReason;
  cost: number;
  /** Units in use at the last answer from Redis (NaN when unknown). */
  used: number;
  limit: number;
}

/** Redis failed (or did not answer within `timeoutMs`) and the failure policy applied. */
export interface BudgetRedisFailureEvent {
  operation: BudgetOperation;
  policy: FailurePolicy;
  timedOut: boolean;
  error: unknown;
}

/** Redis answered again after one or more failures. */
export interface BudgetRedisRecoveredEvent {
  /** Time since the first failure of the episode, in ms. */
  downMs: number;
}

/** A held lease was found gone from Redis (expired while its renewals failed, or deleted). */
export interface BudgetLeaseLostEvent {
  id: string;
  cost: number;
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
}
