import type { SelectorEntry } from './Waiter.js';

/** @internal A FIFO of selector entries linked through `sprev`/`snext`. */
export class GroupList {
  head: SelectorEntry | undefined = undefined;
  tail: SelectorEntry | undefined = undefined;
  size = 0;

  push(e: SelectorEntry): void {
    e.sprev = this.tail;
    e.snext = undefined;
    if (this.tail === undefined) this.head = e;
    else this.tail.snext = e;
    this.tail = e;
    this.size++;
  }

  remove(e: SelectorEntry): void {
    if (e.sprev === undefined) this.head = e.snext;
    else e.sprev.snext = e.snext;
    if (e.snext === undefined) this.tail = e.sprev;
    else e.snext.sprev = e.sprev;
    e.sprev = undefined;
    e.snext = undefined;
    this.size--;
  }
}
