import type { Clock } from 'limits-core';

/** An entry of the timeout list. */
export interface Timed {
  /** Clock ms when it times out. */
  readonly deadline: number;
  /** Its neighbours in the list (the list's to set). */
  timeoutPrev: Timed | undefined;
  timeoutNext: Timed | undefined;
  /** Called once, at its deadline, unless it left the list before. */
  expire(): void;
}

/**
 * The calls of one guard waiting for their `timeoutMs`, on one timer. Every call of a guard has the
 * same `timeoutMs`, counted from `fire()` on a monotonic clock, so calls time out in the order they
 * were fired: a first-in first-out list is already sorted by deadline, and a single timer armed for
 * its head serves them all (opossum arms a `setTimeout` per call instead). Entries must be added in
 * deadline order. The list is linked through its entries, as the calls in flight are (see
 * `CallsInFlight`).
 */
export class TimeoutList {
  readonly #clock: Clock;
  #head: Timed | undefined = undefined;
  #tail: Timed | undefined = undefined;
  #timer: unknown = undefined;
  /** Inside `#fire`'s loop: an entry added meanwhile arms no timer; `#fire` arms one after the loop. */
  #firing = false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Adds `t` at the tail (its deadline no earlier than any entry's). */
  add(t: Timed): void {
    const tail = this.#tail;
    t.timeoutPrev = tail;
    t.timeoutNext = undefined;
    this.#tail = t;
    if (tail === undefined) this.#head = t;
    else tail.timeoutNext = t;
    if (this.#timer === undefined && !this.#firing) this.#arm();
  }

  /** Whether `t` is listed. */
  has(t: Timed): boolean {
    return t.timeoutPrev !== undefined || this.#head === t;
  }

  /** Takes `t` out (if listed). The timer stays armed; when it fires it re-arms for the new head. */
  remove(t: Timed): void {
    if (!this.has(t)) return;
    if (t.timeoutPrev === undefined) this.#head = t.timeoutNext;
    else t.timeoutPrev.timeoutNext = t.timeoutNext;
    if (t.timeoutNext === undefined) this.#tail = t.timeoutPrev;
    else t.timeoutNext.timeoutPrev = t.timeoutPrev;
    t.timeoutPrev = undefined;
    t.timeoutNext = undefined;
  }

  /** Clears the timer and forgets every entry (they will not expire). */
  clear(): void {
    while (this.#head !== undefined) this.remove(this.#head);
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Arms the timer for the head, if any. */
  #arm(): void {
    const head = this.#head;
    if (head === undefined) return;
    const delay = Math.max(0, head.deadline - this.#clock.now());
    this.#timer = this.#clock.setTimeout(this.#fire, delay);
  }

  /** Expires every entry due, oldest first, then re-arms (even when an expiry threw). */
  readonly #fire = (): void => {
    this.#timer = undefined;
    const now = this.#clock.now();
    this.#firing = true;
    try {
      for (let t = this.#head; t !== undefined && t.deadline <= now; t = this.#head) {
        this.remove(t);
        t.expire();
      }
    } finally {
      this.#firing = false;
      this.#arm();
    }
  };
}
