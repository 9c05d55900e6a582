import type { LimitAlgorithm } from '../algorithms/LimitAlgorithm.js';
import type { CostEstimator } from '../fairness/CostEstimator.js';
import type { FairnessOptions } from '../fairness/DeficitRoundRobin.js';
import type { Clock } from '../internal/clock.js';
import type { Classify } from '../permit/outcome.js';
import type { PriorityOptions } from '../queue/PriorityAging.js';
import type { Criticality } from '../shedding/criticality.js';
import type { SheddingOptions, ShedThreshold } from '../shedding/options.js';

/** Order in which queued waiters are served. */
export type QueueOrder = 'fifo' | 'lifo' | 'adaptive';

/** CoDel-style queue timeout: see {@link LimiterOptions.codel}. */
export interface CodelOptions {
  /** The short maximum wait applied while a standing queue persists, in ms, > 0. @default 5 */
  targetMs?: number;
  /** How long the queue must stay non-empty before it counts as standing, in ms, > 0. @default 100 */
  intervalMs?: number;
}

/**
 * Options of {@link Limiter}. Every option is checked at construction: an unknown key is a TypeError
 * naming the nearest valid one, a wrong type a TypeError, a value out of range a RangeError, each
 * message naming the option, what it allows and the value given. The algorithm's bounds
 * (`initialLimit`, `minLimit`, `maxLimit`) are options of the algorithm, not of the limiter.
 */
export interface LimiterOptions {
  /**
   * A fixed limit: the number of units in flight at most, an integer ≥ 1. Give this or `algorithm`,
   * not both.
   * @default 20 (when no `algorithm` is given)
   */
  limit?: number;
  /**
   * The limit algorithm that sets the limit from the calls' samples (`VegasLimit`, `GradientLimit`,
   * `AimdLimit`, `WindowedLimit`, or your own): an object with an `update` function and a finite
   * numeric `limit` ≥ 0 (and a `maxLimit` > 0, if any). Give this or `limit`, not both.
   * @default a fixed limit (see `limit`)
   */
  algorithm?: LimitAlgorithm;
  /**
   * Capacity floor: the limiter admits at least this many units even when the algorithm's limit
   * falls below it, so a sick downstream keeps receiving a few probes and its recovery is seen.
   * Separate from the algorithm's `minLimit`.
   * @default 1
   */
  probeSlots?: number;
  /**
   * Largest number of waiters in the queue. 0 rejects at once with reason `at_limit` when there is no
   * capacity.
   * @default 0
   */
  maxQueued?: number;
  /** Largest total `bytes` of queued waiters, > 0 or `Infinity`. @default Infinity */
  maxQueuedBytes?: number;
  /**
   * Longest time a waiter may stay queued, in ms (> 0 or `Infinity`); it then leaves with reason
   * `expired`.
   * @default Infinity
   */
  maxQueueWaitMs?: number;
  /**
   * `fifo` serves the oldest first; `lifo` the newest (the one whose caller most likely still waits);
   * `adaptive` is FIFO while the queue drains and LIFO once a standing queue forms (non-empty for
   * `standingQueueMs`), as in Facebook's "Fail at Scale".
   * @default 'fifo'
   */
  queueOrder?: QueueOrder;
  /**
   * How long the queue must stay non-empty to count as standing (adaptive order), in ms, ≥ 0.
   * @default codel.intervalMs, else 100
   */
  standingQueueMs?: number;
  /**
   * CoDel-style timeout: once the queue has not been empty for `intervalMs`, waiters older than
   * `targetMs` leave with reason `expired`, whatever their own deadline; a queue that keeps
   * emptying uses the normal limits. Off when left out; `{}` turns it on with the defaults (5 ms,
   * 100 ms). Anything but an object (`true`, `false`, `null`, a number) is a TypeError.
   * @default off
   */
  codel?: CodelOptions;
  /**
   * Time source and timers (inject a fake one in tests): an object with `now`, `setTimeout` and
   * `clearTimeout` functions, checked at construction.
   * @default the system clock
   */
  clock?: Clock;
  /** Outcome of a `run` task, a function; see {@link defaultClassify}. @default defaultClassify */
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
   * Guess of how long a permit is held, in ms, until the first call has been measured: used by
   * deadline admission, and for `retryAfterMs` on refusals. Without it, deadline admission guesses
   * 1000 ms, and refusals carry no `retryAfterMs` until a hold time is measured (a guess nobody made
   * is no basis for telling a caller when to come back: with 1,000 queued at a limit of 10 it would
   * say 100 s).
   * @default 1000 for deadline admission; none for `retryAfterMs`
   */
  initialServiceMs?: number;
  /**
   * Fair queueing across tenants (the `tenant` acquire option): deficit round robin over per-tenant
   * queues, charging each request its `cost`, or — with an `estimator` — the estimated cost of its
   * `kind`, learned from how long calls of that kind really held their permit. Replaces `queueOrder`.
   * Off when left out; `{}` turns it on with the defaults. Anything but an object (`true`, `false`,
   * `null`, `0`, `''`) is a TypeError; unknown keys are refused as `"fairness.<key>"`.
   * @default off
   */
  fairness?: FairnessOptions & {
    /**
     * Charges estimated costs instead of `cost`; `run` observes each call's duration into it. A
     * {@link CostEstimator}, or any object with `estimate` and `observe` functions (and a numeric
     * `ceiling` > 0, if any), checked at construction.
     */
    estimator?: CostEstimator;
  };
  /**
   * Priority queueing with aging (the `priority` acquire option). Replaces `queueOrder`; cannot be
   * combined with `fairness`. Off when left out; `{}` turns it on with the defaults. Anything but an
   * object is a TypeError; unknown keys are refused as `"priority.<key>"`.
   * @default off
   */
  priority?: PriorityOptions;
  /**
   * Leak detection for permits from `acquire()` and `tryAcquire()` (not `run()`, which completes its
   * own): a permit garbage-collected before `success()`/`dropped()`/`ignore()` was called is
   * reclaimed (released as `ignore`), reported on the `leak` event, and once per limiter as a
   * process warning (`LIMITS_PERMIT_LEAK`). `'stack'` also records where each permit was acquired
   * (an `Error` stack per permit: for debugging only, about 10 µs per permit). `'on'` costs a few ns
   * per permit: a permit is registered with the garbage collector (about 0.5 µs on Node 20) only if it
   * is still held 100 ms (or 1,024 grants) after its grant, so a leak is detected after that plus the
   * next collection. `'off'` turns tracking off.
   * @default 'on'
   */
  trackLeaks?: 'off' | 'on' | 'stack';
  /**
   * Importance-based shedding (the `criticality`, `attempt` and `cohort` acquire options): under
   * overload an admission threshold rises from the least important requests upward and falls back
   * when the queue drains, and the queue serves the most important first. See {@link SheddingOptions}.
   * Replaces `queueOrder`; cannot be combined with `fairness` or `priority`. Off when left out; `{}`
   * turns it on with the defaults. Anything but an object is a TypeError; unknown keys are refused
   * as `"shedding.<key>"`.
   * @default off
   */
  shedding?: SheddingOptions;
}

/**
 * @internal The key under which `PartitionedLimiter` hands its partitions' limiters their
 * {@link CapacityGate}: a symbol, so it is neither a public option nor named in option errors.
 */
export const GATE: unique symbol = Symbol('limits.gate');

/** @internal Limiter options with a partition's gate (see {@link GATE}). */
export interface GatedOptions extends LimiterOptions {
  [GATE]?: CapacityGate;
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

/**
 * Options of {@link Limiter.acquire}, {@link Limiter.tryAcquire} and {@link Limiter.run}. Every key is
 * checked on every call that passes an options object: an unknown key (with the nearest valid name),
 * a wrong type (TypeError) or a value out of range (RangeError) makes `acquire()` and `run()` reject
 * and `tryAcquire()` throw, before anything in the limiter changes.
 */
export interface AcquireOptions {
  /**
   * Aborts the wait. For `run`, the task gets a signal of its own that follows this one (when the
   * task declares a parameter). An aborted signal rejects at once with reason `aborted`.
   */
  signal?: AbortSignal | undefined;
  /**
   * Absolute deadline in clock ms (the limiter's `clock`) by which the caller needs the call
   * **finished**. A deadline already past is refused with reason `deadline`, even when capacity is
   * free; a request that would queue is refused when it cannot start and finish in time (given the
   * queue ahead and the measured service time), and a waiter that can no longer make it leaves the
   * queue with reason `expired`. For `run`, the time limit also bounds the execution: at the deadline
   * the task's signal aborts with a `TimeoutError` (a `DOMException`) and `run()` rejects with it;
   * the permit is held until the task really settles and is then released as `dropped`.
   * Any number (`Infinity`: none).
   */
  deadline?: number | undefined;
  /**
   * Relative time limit in ms from now, a number ≥ 0 (`Infinity`: none; 0 is always refused with
   * reason `deadline`); the earlier of `deadline` and `timeoutMs` wins. Same rules as `deadline`.
   */
  timeoutMs?: number | undefined;
  /** Units of capacity the call takes, a number > 0. @default 1 */
  cost?: number | undefined;
  /** Bytes the request holds while queued (counted against `maxQueuedBytes`), a number ≥ 0. @default 0 */
  bytes?: number | undefined;
  /** Tenant key for fair queueing (`fairness`), a string; ignored otherwise. */
  tenant?: string | undefined;
  /** Kind of request for the fairness cost estimator, a string; ignored otherwise. */
  kind?: string | undefined;
  /** Queue priority, higher first (`priority`), a finite number; ignored otherwise. @default 0 */
  priority?: number | undefined;
  /**
   * How much the call matters (`shedding`): one of `'critical_plus'`, `'critical'`,
   * `'sheddable_plus'`, `'sheddable'`; ignored without `shedding`. @default 'critical'
   */
  criticality?: Criticality | undefined;
  /**
   * Which attempt of the call this is, an integer ≥ 1 (`shedding`): under overload retries
   * (attempt ≥ 2) are refused before first attempts of the same criticality; ignored otherwise.
   * @default 1
   */
  attempt?: number | undefined;
  /**
   * Whose call it is, e.g. a user or account id (`shedding`): hashed into one of
   * `shedding.cohorts` cohorts, so that under overload the same users are refused consistently
   * rather than a random share of everybody's calls; ignored otherwise. A call without one is
   * placed in a cohort by rotation.
   */
  cohort?: string | undefined;
}

/** @internal The keys of {@link AcquireOptions}, for unknown-key checks. */
export const ACQUIRE_KEYS: readonly string[] = [
  'signal',
  'deadline',
  'timeoutMs',
  'cost',
  'bytes',
  'tenant',
  'kind',
  'priority',
  'criticality',
  'attempt',
  'cohort',
];

/** Options of {@link Limiter.close}. */
export interface CloseOptions {
  /**
   * Longest wait in ms for the permits in flight (on the limiter's clock), a number ≥ 0; the promise
   * then resolves with `drained: false` and what is still held. While it waits, the timer keeps a
   * Node process alive. @default Infinity (wait until every permit is back)
   */
  timeoutMs?: number | undefined;
}

/** What {@link Limiter.close} resolves with. */
export interface CloseResult {
  /** Every permit came back (`false`: `timeoutMs` passed first). */
  drained: boolean;
  /** Permits still held when the promise resolved. */
  permits: number;
  /** Units still in flight when the promise resolved. */
  inflight: number;
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
  /**
   * Age in ms of the oldest waiter (0 when the queue is empty). With the default clock and a queue
   * that acts on no arrival time (no `maxQueueWaitMs`, FIFO order, no CoDel, no fairness or
   * priority), a request without options is stamped with the first clock reading of the synchronous
   * run it arrived in, so the age may be over by that run's length (the clock is read once per burst).
   */
  oldestQueuedMs: number;
  /** The running estimate of how long a permit is held, in ms. */
  serviceMs: number;
  /** Samples withheld from the algorithm because they overlapped an event-loop stall. */
  stalledSamples: number;
  /** Tenants with queued waiters (the fair queue's tenant table; 0 without `fairness`). */
  tenants: number;
  /** `close()` was called. */
  closed: boolean;
  /** Where the admission threshold stands, with `shedding` (else `undefined`). */
  shedding: ShedThreshold | undefined;
}
