import type { CostEstimator } from '../fairness/CostEstimator.js';
import type { Clock } from '../internal/clock.js';
import type { LimitAlgorithm } from '../limit/LimitAlgorithm.js';
import type { FairnessOptions } from '../queue/DeficitRoundRobin.js';
import type { PriorityOptions } from '../queue/PriorityAging.js';
import type { Classify } from './outcome.js';

/** Order in which queued waiters are served. */
export type QueueOrder = 'fifo' | 'lifo' | 'adaptive';

/** CoDel-style queue timeout: see {@link LimiterOptions.codel}. */
export interface CodelOptions {
  /** The short maximum wait applied while a standing queue persists, in ms. */
  targetMs: number;
  /** How long the queue must stay non-empty before it counts as standing, in ms. */
  intervalMs: number;
}

/** Options of {@link Limiter}. */
export interface LimiterOptions {
  /**
   * The limit algorithm, or a number for a fixed limit.
   * @default 20 (fixed)
   */
  limit?: LimitAlgorithm | number;
  /**
   * Capacity floor: the limiter admits at least this many units even when the algorithm's limit
   * falls below it, so a sick downstream keeps receiving a few probes and its recovery is seen.
   * Separate from the algorithm's `minLimit`.
   * @default 1
   */
  probeSlots?: number;
  /**
   * Largest number of waiters in the queue. 0 rejects at once with reason `limit` when there is no
   * capacity.
   * @default 0
   */
  maxQueued?: number;
  /** Largest total `bytes` of queued waiters. @default Infinity */
  maxQueuedBytes?: number;
  /** Longest time a waiter may stay queued, in ms; it then leaves with reason `expired`. @default Infinity */
  maxQueueWaitMs?: number;
  /**
   * `fifo` serves the oldest first; `lifo` the newest (the one whose caller most likely still waits);
   * `adaptive` is FIFO while the queue drains and LIFO once a standing queue forms (non-empty for
   * `standingQueueMs`), as in Facebook's "Fail at Scale".
   * @default 'fifo'
   */
  queueOrder?: QueueOrder;
  /**
   * How long the queue must stay non-empty to count as standing (adaptive order), in ms.
   * @default codel.intervalMs, else 100
   */
  standingQueueMs?: number;
  /**
   * CoDel-style timeout: once the queue has not been empty for `intervalMs`, waiters older than
   * `targetMs` leave with reason `expired`, whatever their own deadline; a queue that keeps
   * emptying uses the normal limits. Off by default.
   */
  codel?: CodelOptions;
  /** Time source and timers (inject a fake one in tests). @default the system clock */
  clock?: Clock;
  /** Outcome of a `run` task; see {@link defaultClassify}. */
  classify?: Classify;
  /**
   * A timer tick this many ms late marks an event-loop stall; samples that overlap one are not fed to
   * the algorithm (a 50 ms block would otherwise read as 50 ms of downstream queueing). The timer runs
   * every `stallThresholdMs / 2` ms, only while calls are in flight and the algorithm is adaptive.
   * `Infinity` turns detection off.
   * @default 50
   */
  stallThresholdMs?: number;
  /**
   * An adaptive limiter times one call in `sampleEvery` and feeds only those to the algorithm
   * (dropped calls are always fed). Each timed call costs two clock reads (≈ 50 ns each on Node 20),
   * the largest part of an adaptive limiter's overhead; at tens of thousands of calls per second a
   * sample of them is plenty, but the algorithm then adapts `sampleEvery` times slower per call.
   * @default 1 (every call)
   */
  sampleEvery?: number;
  /**
   * Guess for `retryAfterMs` and deadline admission before the first call has been measured, in ms.
   * @default 1000
   */
  initialServiceMs?: number;
  /**
   * Fair queueing across tenants (the `tenant` acquire option): deficit round robin over per-tenant
   * queues, charging each request its `cost`, or — with an `estimator` — the estimated cost of its
   * `kind`, learned from how long calls of that kind really held their permit. Replaces `queueOrder`.
   */
  fairness?: FairnessOptions & {
    /** Charges estimated costs instead of `cost`; `run` observes each call's duration into it. */
    estimator?: CostEstimator;
  };
  /** Priority queueing with aging (the `priority` acquire option). Replaces `queueOrder`. */
  priority?: PriorityOptions;
  /**
   * @internal Replaces the capacity check with an outside ledger (used by `PartitionedLimiter`);
   * not part of the stable API.
   */
  gate?: CapacityGate;
}

/** @internal An outside capacity ledger consulted instead of the limiter's own capacity. */
export interface CapacityGate {
  /** Whether `cost` more units may start now, given the limiter's own in-flight units. */
  fits(cost: number, inflight: number): boolean;
  /** Units were granted. */
  granted(cost: number): void;
  /** Units came back (before the limiter serves its own queue). */
  released(cost: number): void;
  /** The limiter has served its own queue after a release: others may use what is left. */
  afterRelease(): void;
  /** The in-flight figure to put in samples (the whole ledger's, not one limiter's). */
  inflight(): number;
  /**
   * The largest cost the gate can ever let through: a larger one is refused with `too_large` at
   * admission (replaces the limit algorithm's `maxLimit`).
   */
  readonly maxCost: number;
  /** Units this limiter can use now, for deadline admission and `retryAfterMs` (instead of its capacity). */
  capacity(): number;
}

/** Options of {@link Limiter.acquire}, {@link Limiter.tryAcquire} and {@link Limiter.run}. */
export interface AcquireOptions {
  /** Aborts the wait (and is handed to the `run` task). An aborted signal rejects at once. */
  signal?: AbortSignal;
  /**
   * Absolute deadline in clock ms by which the caller needs the call **finished**: a request that
   * cannot start and finish before it (given the queue ahead and the measured service time) is
   * rejected with reason `deadline`, and a waiter that can no longer make it leaves the queue.
   */
  deadline?: number;
  /** Relative deadline in ms (from now); the earlier of `deadline` and `timeout` wins. */
  timeout?: number;
  /** Units of capacity the call takes. @default 1 */
  cost?: number;
  /** Bytes the request holds while queued (counted against `maxQueuedBytes`). @default 0 */
  bytes?: number;
  /** Tenant key for fair queueing (`fairness`); ignored otherwise. */
  tenant?: string;
  /** Kind of request, for the fairness cost estimator; ignored otherwise. */
  kind?: string;
  /** Queue priority, higher first (`priority`); ignored otherwise. @default 0 */
  priority?: number;
}

/** A point-in-time view of a limiter, for logs and dashboards. */
export interface LimiterSnapshot {
  /** The algorithm's integer limit. */
  limit: number;
  /** Units that may be in flight: `max(limit, probeSlots)`. */
  capacity: number;
  /** Units in flight. */
  inflight: number;
  /** Permits outstanding (calls in flight, whatever their cost). */
  permits: number;
  /** Waiters in the queue. */
  queued: number;
  /** Units (cost) requested by queued waiters. */
  queuedCost: number;
  /** Bytes held by queued waiters. */
  queuedBytes: number;
  /** Age in ms of the oldest waiter (0 when the queue is empty). */
  oldestQueuedMs: number;
  /** The running estimate of how long a permit is held, in ms. */
  serviceMs: number;
  /** Samples withheld from the algorithm because they overlapped an event-loop stall. */
  stalledSamples: number;
  /** Tenants with queued waiters (the fair queue's tenant table; 0 without `fairness`). */
  tenants: number;
  /** `close()` was called. */
  closed: boolean;
}
