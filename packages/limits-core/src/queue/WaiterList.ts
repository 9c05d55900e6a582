import type { Waiter } from './Waiter.js';

/** @internal A doubly-linked list of waiters in arrival order: O(1) push, pop at both ends, removal. */
export class WaiterList {
  head: Waiter | undefined = undefined;
  tail: Waiter | undefined = undefined;
  size = 0;

  push(w: Waiter): void {
    w.prev = this.tail;
    w.next = undefined;
    if (this.tail === undefined) this.head = w;
    else this.tail.next = w;
    this.tail = w;
    this.size++;
  }

  remove(w: Waiter): void {
    if (w.prev === undefined) this.head = w.next;
    else w.prev.next = w.next;
    if (w.next === undefined) this.tail = w.prev;
    else w.next.prev = w.prev;
    w.prev = undefined;
    w.next = undefined;
    this.size--;
  }
}
