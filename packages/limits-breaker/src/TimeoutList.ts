import type { Clock } from 'limits-core';

/** @internal An entry of the timeout list. */
export interface Timed {
  /** Clock ms when it times out. */
  due: number;
  prev: Timed | undefined;
  next: Timed | undefined;
  /** Still listed. */
  listed: boolean;
  /** Called once when it times out. */
  expire(): void;
}

/**
 * @internal Per-call timeouts with one timer for all calls. Every call gets the same timeout, so
 * calls time out in the order they started: a FIFO list is already sorted by due time, adding and
 * removing are O(1), and a single timer armed for the head is enough. opossum arms a `setTimeout`
 * per call instead.
 */
export class TimeoutList {
  readonly #clock: Clock;
  #head: Timed | undefined = undefined;
  #tail: Timed | undefined = undefined;
  #timer: unknown = undefined;
  #timerDue = Infinity;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  add(t: Timed): void {
    t.listed = true;
    t.prev = this.#tail;
    t.next = undefined;
    if (this.#tail === undefined) this.#head = t;
    else this.#tail.next = t;
    this.#tail = t;
    if (this.#timer === undefined) this.#arm();
  }

  remove(t: Timed): void {
    if (!t.listed) return;
    t.listed = false;
    if (t.prev === undefined) this.#head = t.next;
    else t.prev.next = t.next;
    if (t.next === undefined) this.#tail = t.prev;
    else t.next.prev = t.prev;
    t.prev = undefined;
    t.next = undefined;
    // The timer stays armed for a removed head; when it fires it re-arms for the new head.
  }

  /** Clears the timer and forgets every entry (they will not expire). */
  clear(): void {
    for (let t = this.#head; t !== undefined; t = t.next) t.listed = false;
    this.#head = undefined;
    this.#tail = undefined;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerDue = Infinity;
  }

  #arm(): void {
    const head = this.#head;
    if (head === undefined) return;
    this.#timerDue = head.due;
    this.#timer = this.#clock.setTimeout(this.#fire, Math.max(0, head.due - this.#clock.now()));
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#timerDue = Infinity;
    const now = this.#clock.now();
    for (let t = this.#head; t !== undefined && t.due <= now; t = this.#head) {
      this.remove(t);
      t.expire();
    }
    this.#arm();
  };

  /** @internal For tests: when the single timer is due. */
  get timerDue(): number {
    return this.#timerDue;
  }
}
