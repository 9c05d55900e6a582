import { AcquireWaiter } from '../../src/limiter/waiters.js';
import type { Waiter as QueueWaiter } from '../../src/queue/Waiter.js';

/**
 * A waiter for the queue's unit tests (list, heap, selectors): `new Waiter(owner, cost, enqueuedAt,
 * resolve, extras)` builds the kind `acquire()` queues; as a type it is the queue's
 * contract, which every kind of waiter implements.
 */
export const Waiter = AcquireWaiter;
export type Waiter = QueueWaiter;
