/** What a lease reports back to: its pool. */
export interface LeaseOwner {
  /** @internal */
  _releaseLease(lease: Lease): Promise<boolean>;
}

const NOT_HELD = Promise.resolve(false);

/**
 * One unit (or `cost` units) of a {@link RedisLeasePool}, held across the fleet until
 * `release()`. While held, the pool renews it automatically; a lease whose renewal finds it gone
 * (its holder stalled or Redis was down for longer than the TTL) is marked `lost`, its `signal`
 * aborts, and the pool emits `leaseLost`. Release exactly once, when the work really ends: later
 * calls do nothing. `using lease = await pool.acquire()` releases it at the end of the block. A
 * lease garbage-collected before `release()` is released then (its units go back to the fleet) and
 * reported: the pool's `leak` event, and once per pool a process warning (`LIMITS_LEASE_LEAK`).
 */
export class Lease {
  /** Unique id of the lease (this instance's id and a sequence number). */
  readonly id: string;
  /** Units held. */
  readonly cost: number;
  /**
   * Whether Redis holds the lease. `false` for a lease granted by `onFailure: 'open'` while
   * Redis failed: only local limits protected that call.
   */
  readonly backed: boolean;
  /** When it was granted, in the pool's clock (ms). */
  readonly acquiredAt: number;
  /** @internal The sorted-set member: `<id>#<cost>`. */
  readonly member: string;
  #owner: LeaseOwner | undefined;
  #lost = false;
  #controller: AbortController | undefined;

  /** @internal Leases are made by a pool. */
  constructor(owner: LeaseOwner, id: string, cost: number, backed: boolean, acquiredAt: number) {
    this.#owner = owner;
    this.id = id;
    this.cost = cost;
    this.backed = backed;
    this.acquiredAt = acquiredAt;
    this.member = `${id}#${cost}`;
  }

  /** True once `release()` was called (or the pool closed). */
  get released(): boolean {
    return this.#owner === undefined;
  }

  /** True once a renewal found the lease gone from Redis: the fleet no longer counts this work. */
  get lost(): boolean {
    return this.#lost;
  }

  /** Aborts when the lease is lost (made on first use). */
  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    if (this.#lost) this.#controller.abort(lostReason(this));
    return this.#controller.signal;
  }

  /**
   * Gives the units back to the fleet (one Redis round trip) and wakes waiters. Never rejects: when
   * Redis fails, the pool retries in the background and the lease's TTL frees it at the latest.
   * @returns whether Redis still held the lease (false after an expiry, a failure, or a second call).
   */
  release(): Promise<boolean> {
    const owner = this.#owner;
    if (owner === undefined) return NOT_HELD;
    this.#owner = undefined;
    return owner._releaseLease(this);
  }

  /** Releases the lease if it was not (for `using`); the round trip runs in the background. */
  [Symbol.dispose](): void {
    void this.release();
  }

  /** @internal Marks the lease lost and aborts its signal. */
  _lose(): void {
    if (this.#lost) return;
    this.#lost = true;
    this.#controller?.abort(lostReason(this));
  }

  /** @internal Marks the lease released without a round trip (the pool released it itself). */
  _detach(): void {
    this.#owner = undefined;
  }
}

function lostReason(lease: Lease): Error {
  const error = new Error(`limits: lease ${lease.id} was lost (expired in Redis while held)`);
  error.name = 'LeaseLostError';
  return error;
}
