import type { Waiter } from './Waiter.js';

/** Holes tolerated before the array is trimmed or compacted. */
const COMPACT_MIN = 1024;
/** Slot numbers grow while the list never empties; renumber before they leave the small-integer range. */
const MAX_SLOT = 2 ** 30;

/**
 * @internal The waiters in arrival order, in an array: O(1) push, pop at both ends and removal
 * anywhere. A removed waiter leaves a hole (its slot is cleared) that the ends skip; the array is
 * reset when it empties, trimmed at the front once mostly holes there (waiters keep their slot
 * numbers: an offset moves instead), and compacted when holes elsewhere outnumber waiters, so it
 * never holds much more than twice the queued count. An array, not a linked list: serving the head
 * touches only that waiter, never its neighbour, which measured about twice as fast when draining
 * 100,000 waiters (and it needs one slot per waiter instead of two links).
 */
export class WaiterList {
  #items: Array<Waiter | undefined> = [];
  /** Index of the first slot that may hold a waiter (slots before it are holes). */
  #first = 0;
  /** Slot number of `#items[0]`. */
  #offset = 0;
  /** Waiters in the list. */
  size = 0;

  /** The oldest waiter. */
  get head(): Waiter | undefined {
    const items = this.#items;
    let i = this.#first;
    while (i < items.length && items[i] === undefined) i++;
    this.#first = i;
    return items[i];
  }

  /** The newest waiter. */
  get tail(): Waiter | undefined {
    const items = this.#items;
    while (items.length > this.#first && items[items.length - 1] === undefined) items.pop();
    return items.length > this.#first ? items[items.length - 1] : undefined;
  }

  push(w: Waiter): void {
    // Trimming waits for a push: a queue that only drains never moves its array.
    if (this.#first >= COMPACT_MIN && this.#first >= this.#items.length >> 1) this.#trim();
    if (this.#offset + this.#items.length >= MAX_SLOT) this.#compact();
    w.slot = this.#offset + this.#items.length;
    this.#items.push(w);
    this.size++;
  }

  /** Whether `w` is in the list. */
  has(w: Waiter): boolean {
    return w.slot >= 0;
  }

  remove(w: Waiter): void {
    if (w.slot < 0) return;
    const items = this.#items;
    const i = w.slot - this.#offset;
    w.slot = -1;
    items[i] = undefined;
    if (--this.size === 0) {
      items.length = 0;
      this.#first = 0;
      this.#offset = 0;
    } else if (i === this.#first) {
      this.#first = i + 1;
    } else if (items.length - this.#first > 2 * this.size + COMPACT_MIN) {
      this.#compact();
    }
  }

  /** Calls `fn` for each waiter, oldest first (`fn` must not change the list). */
  forEach(fn: (w: Waiter) => void): void {
    const items = this.#items;
    for (let i = this.#first; i < items.length; i++) {
      const w = items[i];
      if (w !== undefined) fn(w);
    }
  }

  /** Drops the holes at the front; waiters keep their slot numbers (the offset absorbs the move). */
  #trim(): void {
    const items = this.#items;
    const first = this.#first;
    items.copyWithin(0, first);
    items.length -= first;
    this.#offset += first;
    this.#first = 0;
  }

  /** Drops every hole: live waiters move to the front, their slots renumbered from 0. */
  #compact(): void {
    const items = this.#items;
    let j = 0;
    for (let i = this.#first; i < items.length; i++) {
      const w = items[i];
      if (w === undefined) continue;
      w.slot = j;
      items[j++] = w;
    }
    items.length = j;
    this.#first = 0;
    this.#offset = 0;
  }
}
