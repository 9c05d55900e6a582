import type { Waiter } from './Waiter.js';

/**
 * @internal An indexed binary min-heap of waiters by `expiresAt`: the limiter keeps one timer for the
 * earliest expiry instead of one per waiter, and removes an aborted or granted waiter in O(log n).
 */
export class ExpiryHeap {
  readonly #items: Waiter[] = [];

  get size(): number {
    return this.#items.length;
  }

  /** The waiter that expires first. */
  peek(): Waiter | undefined {
    return this.#items[0];
  }

  push(w: Waiter): void {
    w.heapIndex = this.#items.length;
    this.#items.push(w);
    this.#up(w.heapIndex);
  }

  remove(w: Waiter): void {
    const i = w.heapIndex;
    if (i < 0) return;
    const last = this.#items.pop() as Waiter;
    w.heapIndex = -1;
    if (i === this.#items.length) return;
    this.#items[i] = last;
    last.heapIndex = i;
    this.#down(i);
    this.#up(last.heapIndex);
  }

  #up(i: number): void {
    const items = this.#items;
    const w = items[i] as Waiter;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = items[p] as Waiter;
      if (parent.expiresAt <= w.expiresAt) break;
      items[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    items[i] = w;
    w.heapIndex = i;
  }

  #down(i: number): void {
    const items = this.#items;
    const n = items.length;
    const w = items[i] as Waiter;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let c = l;
      if (r < n && (items[r] as Waiter).expiresAt < (items[l] as Waiter).expiresAt) c = r;
      const child = items[c] as Waiter;
      if (child.expiresAt >= w.expiresAt) break;
      items[i] = child;
      child.heapIndex = i;
      i = c;
    }
    items[i] = w;
    w.heapIndex = i;
  }
}
