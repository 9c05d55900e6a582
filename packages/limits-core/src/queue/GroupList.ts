import type { Waiter } from './Waiter.js';

/** @internal A FIFO of waiters linked through their selector links (`sprev`/`snext`). */
export class GroupList {
  head: Waiter | undefined = undefined;
  tail: Waiter | undefined = undefined;
  size = 0;

  push(w: Waiter): void {
    w.sprev = this.tail;
    w.snext = undefined;
    if (this.tail === undefined) this.head = w;
    else this.tail.snext = w;
    this.tail = w;
    this.size++;
  }

  remove(w: Waiter): void {
    if (w.sprev === undefined) this.head = w.snext;
    else w.sprev.snext = w.snext;
    if (w.snext === undefined) this.tail = w.sprev;
    else w.snext.sprev = w.sprev;
    w.sprev = undefined;
    w.snext = undefined;
    this.size--;
  }
}
