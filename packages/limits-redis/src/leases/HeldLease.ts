import type { Lease } from './Lease.js';

/**
 * @internal A lease this instance holds, as its pool keeps it: what renewing and releasing it
 * need, and only a weak reference to the {@link Lease} handed to the caller, so that a lease its
 * caller dropped without `release()` can be garbage-collected (and then reclaimed) while the pool
 * renews it.
 */
export interface HeldLease {
  /** The lease's id. */
  readonly id: string;
  /** Units it holds. */
  readonly cost: number;
  /** The sorted-set member: `<id>#<cost>`. */
  readonly member: string;
  /** When it was granted (pool clock, ms). */
  readonly acquiredAt: number;
  /** The caller's lease, while it is reachable. */
  readonly lease: WeakRef<Lease>;
}

/** @internal The record of a lease the pool now holds. */
export function heldLease(lease: Lease): HeldLease {
  const { id, cost, member, acquiredAt } = lease;
  return { id, cost, member, acquiredAt, lease: new WeakRef(lease) };
}
