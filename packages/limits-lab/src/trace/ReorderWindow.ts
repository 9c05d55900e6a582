import type { TraceRecord } from './TraceRecord.js';

interface Held {
  record: TraceRecord;
  /** Read order, so records with equal starts leave in the order they came. */
  seq: number;
}

/**
 * Puts records read slightly out of order back in start order, in bounded memory: a record is held
 * until a record starting `windowMs` later has been read, then handed on. A record starting more than
 * `windowMs` before the latest start read is refused (it would come after records already handed on).
 * Memory: the records of one window (arrival rate × `windowMs`).
 */
export class ReorderWindow {
  readonly #windowMs: number;
  readonly #heap: Held[] = [];
  #seq = 0;
  #latestMs = Number.NEGATIVE_INFINITY;
  #latestWhere = '';

  /** @param windowMs - how far back a record may start, in ms (finite, ≥ 0). */
  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /**
   * Takes one record (its `startMs` as read) and returns those now ready, in start order.
   * @param where - the record's place, for the error.
   * @throws RangeError naming `where`, the record this one is too far behind and the window.
   */
  push(record: TraceRecord, where: string): TraceRecord[] {
    if (record.startMs < this.#latestMs - this.#windowMs) {
      throw new RangeError(
        `limits: ${where}: field "start" is ${this.#latestMs - record.startMs} ms before the start of ${this.#latestWhere}, beyond the reorder window of ${this.#windowMs} ms (option "reorderWindowMs"; sort the file, or widen the window)`,
      );
    }
    if (record.startMs > this.#latestMs) {
      this.#latestMs = record.startMs;
      this.#latestWhere = where;
    }
    this.#add({ record, seq: this.#seq++ });
    const ready: TraceRecord[] = [];
    while (this.#heap.length > 0) {
      const top = this.#heap[0] as Held;
      if (top.record.startMs > this.#latestMs - this.#windowMs) break;
      ready.push(this.#take().record);
    }
    return ready;
  }

  /** The records still held, in start order (at the end of the input). */
  drain(): TraceRecord[] {
    const rest: TraceRecord[] = [];
    while (this.#heap.length > 0) rest.push(this.#take().record);
    return rest;
  }

  #before(a: Held, b: Held): boolean {
    return (
      a.record.startMs < b.record.startMs ||
      (a.record.startMs === b.record.startMs && a.seq < b.seq)
    );
  }

  #add(item: Held): void {
    const heap = this.#heap;
    let i = heap.length;
    heap.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#before(item, heap[parent] as Held)) break;
      heap[i] = heap[parent] as Held;
      i = parent;
    }
    heap[i] = item;
  }

  #take(): Held {
    const heap = this.#heap;
    const top = heap[0] as Held;
    const last = heap.pop() as Held;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= heap.length) break;
        const r = l + 1;
        const child = r < heap.length && this.#before(heap[r] as Held, heap[l] as Held) ? r : l;
        if (!this.#before(heap[child] as Held, last)) break;
        heap[i] = heap[child] as Held;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}
