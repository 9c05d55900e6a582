import type { DeficitRoundRobin } from '../../src/fairness/DeficitRoundRobin.js';
import type { PermitOwner } from '../../src/permit/Permit.js';
import { Waiter as QueueWaiter, type WaiterExtras } from '../../src/queue/Waiter.js';

/** A queued request as the queue's unit tests make it: it keeps the resolve function it was given. */
class TestWaiter extends QueueWaiter {
  constructor(
    owner: PermitOwner,
    cost: number,
    enqueuedAt: number,
    readonly resolve: (value: unknown) => void,
    extras: WaiterExtras | undefined,
  ) {
    super(owner, cost, enqueuedAt, extras);
  }

  /** Its signal aborted: nothing to do in a queue unit test (the limiter takes a waiter out). */
  handleEvent(): void {}
}

/**
 * A waiter for the queue's unit tests (list, heap, selectors): `new Waiter(owner, cost, enqueuedAt,
 * resolve, extras)`; as a type it is the queue's waiter, which every kind of queued call extends.
 */
export const Waiter = TestWaiter;
export type Waiter = QueueWaiter;

/** A waiter's owner for queue unit tests: releases go nowhere. */
export const testOwner: PermitOwner = { _release() {} };

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
