/**
 * The calls in flight on the downstream as a trace's calls start, in start order: a call is in flight
 * from its start to its end (start + duration); a call ending at another's start does not meet it.
 * Memory: the calls in flight at once (a min-heap of their ends).
 */
export class InFlight {
  readonly #ends: number[] = [];
  #peak = 0;

  /** The most calls in flight at once so far. */
  get peak(): number {
    return this.#peak;
  }

  /**
   * A call starting at `startMs` (not before the last one) and ending at `endMs`: the number of calls
   * in flight as it starts, itself included.
   */
  enter(startMs: number, endMs: number): number {
    const ends = this.#ends;
    while (ends.length > 0 && (ends[0] as number) <= startMs) this.#popMin();
    this.#push(endMs);
    if (ends.length > this.#peak) this.#peak = ends.length;
    return ends.length;
  }

  #push(end: number): void {
    const ends = this.#ends;
    let i = ends.length;
    ends.push(end);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((ends[parent] as number) <= end) break;
      ends[i] = ends[parent] as number;
      i = parent;
    }
    ends[i] = end;
  }

  #popMin(): void {
    const ends = this.#ends;
    const last = ends.pop() as number;
    if (ends.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= ends.length) break;
      const r = l + 1;
      const child = r < ends.length && (ends[r] as number) < (ends[l] as number) ? r : l;
      if ((ends[child] as number) >= last) break;
      ends[i] = ends[child] as number;
      i = child;
    }
    ends[i] = last;
  }
}
