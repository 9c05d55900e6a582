import type { LaneHost } from './RunLane.js';
import type { ChargeEstimator, Selector } from './Selector.js';
import type { Waiter } from './Waiter.js';

// The contract between the wait queue (queue/WaitQueue) and the limiter above it: what the queue is
// told (its options, the hold-time estimate) and what it asks of the limiter while serving. The
// queue imports nothing from the limiter; the limiter implements these.

/** @internal How a `WaitQueue` orders and bounds its waiters (resolved limiter options). */
export interface WaitQueueOptions {
  /** Longest wait in the queue (ms); `Infinity`: no bound. */
  maxQueueWaitMs: number;
  /** Who is served next without a selector: the oldest, the newest, or the newest while a queue stands. */
  order: 'fifo' | 'lifo' | 'adaptive';
  /** A queue that has not emptied for this long is standing (adaptive order, CoDel). */
  standingMs: number;
  /** CoDel: while standing, a waiter queued this long leaves (`Infinity`: CoDel off). */
  codelTargetMs: number;
  /** Fair or priority queueing: chooses who is served next (the list keeps arrival order). */
  selector: Selector | undefined;
  /** What fair queueing charges a request (`undefined`: its cost). */
  estimator: ChargeEstimator | undefined;
}

/**
 * @internal The limiter's hold-time estimate, as the queue reads it for deadline checks (the
 * limiter's `ServiceTime`).
 */
export interface FinishEstimate {
  /** Mean hold time (ms); 0 until a call was timed. */
  readonly meanMs: number;
  /** Time a call needs to finish once started. */
  finishMargin(): number;
}

/**
 * @internal What the wait queue needs from its limiter while serving: whether a waiter fits,
 * granting (a waiter, or a lane request: `startLane`), and refusing a waiter that left by time.
 */
export interface WaitQueueHost extends LaneHost {
  /** Whether `cost` units fit now. */
  fits(cost: number): boolean;
  /**
   * Counts the grant of `w`, already out of the queue, and makes it the permit; the queue then hands
   * it over (`w._granted`).
   * @param now - the limiter's time if read for this dispatch (`NaN` otherwise: its wait is not
   *   measured).
   */
  grant(w: Waiter, now: number): void;
  /** Refuses `w`, which left the queue by time (expired, past its deadline, CoDel). */
  expired(w: Waiter): void;
}
