/** Cleared entries tolerated at the front before a push moves the arrays (a lane that never empties). */
const TRIM_MIN = 1024;

/**
 * @internal The compact form of the plainest queued request: a `run()` of cost 1 without options, on
 * a queue where nothing acts on arrival time (FIFO, no selector, CoDel or `maxQueueWaitMs`). Such a
 * request cannot expire, be aborted or be picked out of order, so it needs no `Waiter`: the lane
 * keeps its task, its caller's resolve function and its arrival time at the same index of three
 * arrays (the times unboxed doubles; two arrays of 10,000 pointers stay ordinary heap objects where
 * one of 20,000 would be a large object, kept in the old generation), and makes no object of its
 * own. A burst of 10,000 queued runs then allocates only the caller's promise per call. Kept because
 * it pays where users look: with a waiter object each, a fixed `Limiter.run` took 3.0× the
 * hand-written semaphore's time for 10,000 at once, against 1.55× with the lane (same run of
 * `bench/overhead.mjs` against a build without the lane).
 *
 * The wait queue puts requests here only while its waiter list is empty, so every lane request is
 * older than every listed waiter and the lane is served first (FIFO across both holds).
 */
export class RunLane {
  /** The requests' tasks, oldest first from `#first`. */
  #tasks: unknown[] = [];
  /** Their callers' resolve functions, in the same order. */
  #resolves: unknown[] = [];
  /** Arrival time (the queue's clock, ms) per request, oldest first from `#first`. */
  #times: number[] = [];
  #first = 0;
  /** Requests in the lane. */
  size = 0;

  /** Queues a request that arrived at `at` (the queue's clock, ms). */
  push(task: unknown, resolve: unknown, at: number): void {
    const first = this.#first;
    // Trimming waits for a push (as in WaiterList): a lane that only drains never moves its arrays.
    if (first >= TRIM_MIN && first >= this.#times.length >> 1) {
      this.#tasks.copyWithin(0, first);
      this.#tasks.length -= first;
      this.#resolves.copyWithin(0, first);
      this.#resolves.length -= first;
      this.#times.copyWithin(0, first);
      this.#times.length -= first;
      this.#first = 0;
    }
    this.#tasks.push(task);
    this.#resolves.push(resolve);
    this.#times.push(at);
    this.size++;
  }

  /** Arrival time of the oldest request (`Infinity` when empty). */
  get oldestAt(): number {
    return this.size === 0 ? Infinity : (this.#times[this.#first] as number);
  }

  /** The oldest request's task (the lane must not be empty). */
  get firstTask(): unknown {
    return this.#tasks[this.#first];
  }

  /** The oldest request's resolve function (the lane must not be empty). */
  get firstResolve(): unknown {
    return this.#resolves[this.#first];
  }

  /** Takes the oldest request out (after reading it: `firstTask`, `firstResolve`). */
  dropFirst(): void {
    this.#drop(this.#first);
  }

  /** Empties the lane, oldest first, calling `refuse` with each request's resolve function. */
  drain(refuse: (resolve: unknown) => void): void {
    while (this.size > 0) {
      const i = this.#first;
      const resolve = this.#resolves[i];
      this.#drop(i);
      refuse(resolve);
    }
  }

  /** Clears the oldest request's slots (from `i`); the arrays are reset once empty. */
  #drop(i: number): void {
    this.#tasks[i] = undefined;
    this.#resolves[i] = undefined;
    if (--this.size === 0) {
      this.#tasks.length = 0;
      this.#resolves.length = 0;
      this.#times.length = 0;
      this.#first = 0;
    } else {
      this.#first = i + 1;
    }
  }
}
