import type { AcquireOptions } from '../limiter/options.js';
import type { Permit } from '../limiter/Permit.js';

/** @internal What a waiter calls back into when its signal aborts. */
export interface WaiterOwner {
  /** @internal */
  _abortWaiter(waiter: Waiter): void;
}

/**
 * @internal One queued request. It is its own abort listener (`handleEvent`), so a waiter with a
 * signal costs no extra closure, and it keeps only `resolve` (a rejection resolves the promise with a
 * rejected one), to stay small: the queue may hold 100,000 of them.
 */
export class Waiter {
  /** Units requested. */
  readonly cost: number;
  /** Bytes held while queued. */
  readonly bytes: number;
  /** Clock ms when it entered the queue. */
  readonly enqueuedAt: number;
  /** Clock ms after which it leaves the queue (`Infinity`: never by time). */
  readonly expiresAt: number;
  /** The caller's deadline (clock ms), checked against the service time estimate at dispatch. */
  readonly deadline: number;
  /** Settles the caller's promise (with the permit, or with the run task's result). */
  readonly resolve: (value: Permit | PromiseLike<unknown>) => void;
  /** The caller's signal, if any. */
  readonly signal: AbortSignal | undefined;
  readonly #owner: WaiterOwner;
  /** List links (arrival order). */
  prev: Waiter | undefined = undefined;
  next: Waiter | undefined = undefined;
  /** Position in the expiry heap, -1 when not in it. */
  heapIndex = -1;
  /** Still in the queue. */
  queued = true;
  /** Selector bookkeeping (fair or priority queueing only): kept apart so a plain waiter stays small. */
  sel: SelectorEntry | undefined = undefined;
  /** For `run`: the task to start under the permit once granted (the waiter then settles its result). */
  task: ((signal: AbortSignal) => unknown) | undefined = undefined;
  /** For `run`: the acquire options of the call. */
  options: AcquireOptions | undefined = undefined;

  constructor(
    owner: WaiterOwner,
    cost: number,
    bytes: number,
    enqueuedAt: number,
    expiresAt: number,
    deadline: number,
    signal: AbortSignal | undefined,
    resolve: (value: Permit | PromiseLike<unknown>) => void,
  ) {
    this.#owner = owner;
    this.cost = cost;
    this.bytes = bytes;
    this.enqueuedAt = enqueuedAt;
    this.expiresAt = expiresAt;
    this.deadline = deadline;
    this.signal = signal;
    this.resolve = resolve;
  }

  /** The signal aborted. */
  handleEvent(): void {
    this.#owner._abortWaiter(this);
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
