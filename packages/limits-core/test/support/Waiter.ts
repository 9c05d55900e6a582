import { PromiseWaiter } from '../../src/limiter/waiters.js';
import type { Waiter as QueueWaiter } from '../../src/queue/Waiter.js';

/**
 * A waiter for the queue's unit tests (list, heap, selectors): `new Waiter(owner, cost, enqueuedAt,
 * resolve, extras, task)` builds the kind `acquire()` and `run()` queue; as a type it is the queue's
 * contract, which every kind of waiter implements.
 */
export const Waiter = PromiseWaiter;
export type Waiter = QueueWaiter;
