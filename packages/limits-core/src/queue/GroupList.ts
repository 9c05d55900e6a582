import type { SelectorEntry, Waiter } from './Waiter.js';

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

/** @internal A selector's group of waiters (a tenant, a priority class): its FIFO of entries. */
export interface Group {
  readonly list: GroupList;
}

/** @internal Appends `e` to `group`'s list and records the group in the entry. */
export function joinGroup(e: SelectorEntry, group: Group): void {
  e.group = group;
  group.list.push(e);
}

/**
 * @internal Takes `w`'s selector entry out of its group's list.
 * @returns the group when that left it empty (the selector drops it), else `undefined`.
 */
export function leaveGroup<G extends Group>(w: Waiter): G | undefined {
  const e = w.sel as SelectorEntry;
  const group = e.group as G;
  group.list.remove(e);
  return group.list.size === 0 ? group : undefined;
}
