import { Permit, type PermitOwner } from '../permit/Permit.js';

/**
 * @internal What a queued request carries beyond a plain one: bytes, an expiry or deadline, a signal,
 * a selector entry, `run` options. Most requests have none of it, and then no such object.
 */
export class WaiterExtras {
  /** Bytes held while queued. */
  bytes = 0;
  /**
   * The caller's deadline (clock ms), checked against the service time estimate at dispatch. The
   * waiter leaves the queue at `min(deadline, enqueuedAt + maxQueueWaitMs)`, which the queue
   * computes (one number less to store per waiter).
   */
  deadline = Infinity;
  /** The caller's signal, if any (kept apart from the options, which the caller may reuse and change). */
  signal: AbortSignal | undefined = undefined;
  /** Position in the expiry heap, -1 when not in it. */
  heapIndex = -1;
  /** Selector bookkeeping (fair or priority queueing only). */
  sel: SelectorEntry | undefined = undefined;
  /**
   * For `run`: the acquire options of the call, opaque to the queue (the limiter reads them when it
   * starts the task; the queue is a layer below the limiter and does not know their type).
   */
  options: object | undefined = undefined;
}

/**
 * @internal Something waiting for a permit, as the wait queue stores it: cost, arrival time, extras,
 * slot. Whoever made it (`acquire()`, `run()`, or an integration's `PermitRequest` through
 * `Limiter.acquireWith`) is the limiter's business: the limiter's kinds of waiter extend this class
 * and say how their wait ends (granted or refused); the queue treats them all alike.
 *
 * The waiter is also the permit it becomes when granted (so a grant allocates nothing), and its own
 * abort listener (`handleEvent`), so a waiter with a signal costs no extra closure; everything a
 * plain request does not use lives in {@link WaiterExtras}. The queue may hold 100,000 of them, and
 * the smaller they are the faster they drain: less for the garbage collector to trace while they wait.
 */
export abstract class Waiter extends Permit {
  /** Clock ms when it entered the queue, rounded down to a whole ms. */
  declare readonly enqueuedAt: number;
  /**
   * Bytes, deadline, signal, selector entry, run options, expiry-heap position; `undefined` when none
   * applies (created later if the waiter enters the expiry heap).
   */
  declare extras: WaiterExtras | undefined;
  /** Index in the queue's list of waiters, -1 once out of it (served, expired, aborted, closed). */
  declare slot: number;

  constructor(
    owner: PermitOwner,
    cost: number,
    enqueuedAt: number,
    extras: WaiterExtras | undefined,
  ) {
    super(owner, cost, Number.NaN, 0);
    // Whole ms (a wait reads up to 1 ms long): kept because a fraction is a boxed number, 17 B more
    // per waiter and a drain 1.4× slower against the semaphore (bench/queue-memory.mjs).
    this.enqueuedAt = Math.floor(enqueuedAt);
    this.extras = extras;
    this.slot = -1;
  }

  /** The caller's signal aborted: the waiter leaves the queue (it is the queue's abort listener). */
  abstract handleEvent(): void;

  /** The caller's deadline (clock ms). */
  get deadline(): number {
    return this.extras === undefined ? Infinity : this.extras.deadline;
  }

  /** The caller's signal, if any. */
  get signal(): AbortSignal | undefined {
    return this.extras?.signal;
  }

  /** For `run`: the acquire options of the call (opaque to the queue). */
  get options(): object | undefined {
    return this.extras?.options;
  }

  /** Selector bookkeeping (fair or priority queueing only). */
  get sel(): SelectorEntry | undefined {
    return this.extras?.sel;
  }

  /** Turns the waiter into a granted permit. */
  granted(startTime: number, inflight: number): void {
    this._start(startTime, inflight);
  }
}

/** @internal A waiter's entry in a selector (fair or priority queueing). */
export class SelectorEntry {
  /** Links in the selector's own per-group list. */
  sprev: SelectorEntry | undefined = undefined;
  snext: SelectorEntry | undefined = undefined;
  /** The group (tenant or priority class) it is queued in. */
  group: unknown = undefined;

  constructor(
    /** The waiter. */
    readonly waiter: Waiter,
    /** Tenant key (fair queueing). */
    readonly tenant: string | undefined,
    /** Base priority (priority queueing). */
    readonly priority: number,
    /** What fair queueing charges for serving it (the cost, or the estimator's estimate). */
    readonly charge: number,
  ) {}
}
