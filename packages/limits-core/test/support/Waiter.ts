import type { DeficitRoundRobin } from '../../src/fairness/DeficitRoundRobin.js';
import { AcquireWaiter } from '../../src/limiter/waiters.js';
import type { Waiter as QueueWaiter } from '../../src/queue/Waiter.js';

/**
 * A waiter for the queue's unit tests (list, heap, selectors): `new Waiter(owner, cost, enqueuedAt,
 * resolve, extras)` builds the kind `acquire()` queues; as a type it is the queue's
 * contract, which every kind of waiter implements.
 */
export const Waiter = AcquireWaiter;
export type Waiter = QueueWaiter;

/** A waiter's owner for queue unit tests: aborts and releases go nowhere. */
export const testOwner = { _abortWaiter: () => false, _release() {} };

/** The tenant a waiter is queued for (fair queueing). */
export const tenantOf = (w: Waiter): string => w.sel?.tenant ?? '';

/** Serves `n` picks of a fair queue and returns the tenants in order. */
export function serveTenants(drr: DeficitRoundRobin, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const w = drr.peek();
    if (w === undefined) break;
    out.push(tenantOf(w));
    drr.served(w);
  }
  return out;
}
