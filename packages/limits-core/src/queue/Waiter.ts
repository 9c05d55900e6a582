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
  /** Settles the caller's promise. */
  readonly resolve: (value: Permit | PromiseLike<Permit>) => void;
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
  /** Tenant key (fair queueing). */
  tenant: string | undefined = undefined;
  /** Base priority (priority queueing). */
  priority = 0;
  /** What fair queueing charges for serving it (the cost, or the estimator's estimate). */
  charge = 0;
  /** Selector bookkeeping: links in the selector's own lists and the group it belongs to. */
  sprev: Waiter | undefined = undefined;
  snext: Waiter | undefined = undefined;
  group: unknown = undefined;

  constructor(
    owner: WaiterOwner,
    cost: number,
    bytes: number,
    enqueuedAt: number,
    expiresAt: number,
    deadline: number,
    signal: AbortSignal | undefined,
    resolve: (value: Permit | PromiseLike<Permit>) => void,
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
