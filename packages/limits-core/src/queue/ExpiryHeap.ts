import type { Waiter, WaiterExtras } from './Waiter.js';

/**
 * @internal An indexed binary min-heap of waiters by expiry time: the wait queue keeps one timer for the
 * earliest expiry instead of one per waiter, and removes an aborted or granted waiter in O(log n).
 * The expiry times sit in their own array of numbers (stored unboxed), not on the waiters; a waiter's
 * position is kept in its extras (`heapIndex`), which every waiter in the heap has.
 */
export class ExpiryHeap {
  readonly #items: Waiter[] = [];
  readonly #keys: number[] = [];

  get size(): number {
    return this.#items.length;
  }

  /** The waiter that expires first. */
  peek(): Waiter | undefined {
    return this.#items[0];
  }

  /** When the first waiter expires (`Infinity` when empty). */
  peekTime(): number {
    return this.#items.length === 0 ? Infinity : (this.#keys[0] as number);
  }

  /** Adds `w` (which must have extras) expiring at `expiresAt`. */
  push(w: Waiter, expiresAt: number): void {
    const i = this.#items.length;
    this.#items.push(w);
    this.#keys.push(expiresAt);
    this.#up(i, w, expiresAt);
  }

  remove(w: Waiter): void {
    const x = w.extras as WaiterExtras;
    const i = x.heapIndex;
    if (i < 0) return;
    x.heapIndex = -1;
    const last = this.#items.pop() as Waiter;
    const lastKey = this.#keys.pop() as number;
    if (i === this.#items.length) return;
    this.#down(i, last, lastKey);
    const at = (last.extras as WaiterExtras).heapIndex;
    this.#up(at, last, lastKey);
  }

  /** Moves `w` (key `k`) up from slot `i` to where it belongs. */
  #up(i: number, w: Waiter, k: number): void {
    const items = this.#items;
    const keys = this.#keys;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((keys[p] as number) <= k) break;
      const parent = items[p] as Waiter;
      items[i] = parent;
      keys[i] = keys[p] as number;
      (parent.extras as WaiterExtras).heapIndex = i;
      i = p;
    }
    items[i] = w;
    keys[i] = k;
    (w.extras as WaiterExtras).heapIndex = i;
  }

  /** Moves `w` (key `k`) down from slot `i` to where it belongs. */
  #down(i: number, w: Waiter, k: number): void {
    const items = this.#items;
    const keys = this.#keys;
    const n = items.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && (keys[r] as number) < (keys[l] as number)) c = r;
      if ((keys[c] as number) >= k) break;
      const child = items[c] as Waiter;
      items[i] = child;
      keys[i] = keys[c] as number;
      (child.extras as WaiterExtras).heapIndex = i;
      i = c;
    }
    items[i] = w;
    keys[i] = k;
    (w.extras as WaiterExtras).heapIndex = i;
  }
}
