import type { AcquireSink } from '../limiter/AcquireSink.js';
import { Permit, type PermitOwner } from '../limiter/Permit.js';

/** @internal What a waiter calls back into when its signal aborts. */
export interface WaiterOwner {
  /** @internal */
  _abortWaiter(waiter: Waiter): void;
}

/**
 * @internal What a queued request carries beyond a plain one: bytes, an expiry or deadline, a signal,
 * a selector entry, `run` options. Most requests have none of it, and then no such object.
 */
export class WaiterExtras {
  /** Bytes held while queued. */
  bytes = 0;
  /**
   * The caller's deadline (clock ms), checked against the service time estimate at dispatch. The
   * waiter leaves the queue at `min(deadline, enqueuedAt + maxQueueWaitMs)`, which the limiter
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
 * @internal One queued request, and the permit it becomes when granted (so a grant allocates
 * nothing). It is its own abort listener (`handleEvent`), so a waiter with a signal costs no extra
 * closure; it keeps only one settle function (a rejection resolves the promise with a rejected one);
 * and everything a plain request does not use lives in {@link WaiterExtras}. The queue may hold
 * 100,000 of them, and the smaller they are the faster they drain: less for the garbage collector to
 * trace while they wait.
 */
export class Waiter extends Permit {
  /** Clock ms when it entered the queue. */
  readonly enqueuedAt: number;
  /**
   * Where the outcome goes: the caller promise's resolve function (called with the permit, the run
   * task's result, or a rejected promise), or a sink (`Limiter._acquireFor`).
   */
  readonly settle: ((value: unknown) => void) | AcquireSink;
  /**
   * Bytes, deadline, signal, selector entry, run options, expiry-heap position; `undefined` when none
   * applies (created later if the waiter enters the expiry heap).
   */
  extras: WaiterExtras | undefined;
  /** For `run`: the task to start under the permit once granted (the waiter then settles its result). */
  readonly task: ((signal: AbortSignal) => unknown) | undefined;
  /** Index in the limiter's list of waiters, -1 once out of it (served, expired, aborted, closed). */
  slot = -1;

  constructor(
    owner: WaiterOwner & PermitOwner,
    cost: number,
    enqueuedAt: number,
    settle: ((value: unknown) => void) | AcquireSink,
    extras: WaiterExtras | undefined,
    task: ((signal: AbortSignal) => unknown) | undefined,
  ) {
    super(owner, cost, Number.NaN, 0);
    this.enqueuedAt = enqueuedAt;
    this.settle = settle;
    this.extras = extras;
    this.task = task;
  }

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

  /** The signal aborted. */
  handleEvent(): void {
    // Once granted the waiter is no longer listening; a granted permit's owner may be a leak
    // tracker's record, which has no waiters.
    (this._owner() as Partial<WaiterOwner> | undefined)?._abortWaiter?.(this);
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
