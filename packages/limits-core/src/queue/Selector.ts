import type { Waiter } from './Waiter.js';

/**
 * @internal A queue discipline that chooses which waiter is served next (tenant fairness,
 * priorities). The wait queue keeps every waiter in its arrival list (for age, expiry and close) and
 * also hands it to the selector, which keeps its own structure.
 */
export interface Selector {
  /** A waiter entered the queue. */
  add(waiter: Waiter): void;
  /** A waiter left the queue without being served (expired, aborted, closed). */
  delete(waiter: Waiter): void;
  /** The waiter to serve next, or `undefined` when empty. Repeated calls return the same one. */
  peek(now: number): Waiter | undefined;
  /** The waiter returned by `peek` was served. */
  served(waiter: Waiter, now: number): void;
  /** Refuses a waiter before it is queued (e.g. a per-tenant cap); returns a reason or undefined. */
  refuse(tenant: string | undefined): string | undefined;
}

/** @internal The keys of a request that a selector orders by (from its acquire options). */
export interface SelectorKeys {
  /** Tenant key (fair queueing). */
  tenant?: string | undefined;
  /** Base priority (priority queueing). */
  priority?: number | undefined;
  /** Kind of call, for the cost estimator (fair queueing). */
  kind?: string | undefined;
}

/** @internal Estimates what fair queueing charges a request (a `CostEstimator`, as the queue sees it). */
export interface ChargeEstimator {
  estimate(kind: string, bytes: number): number;
}
