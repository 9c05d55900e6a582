import type { Clock } from 'limits-core';

/** @internal An entry of the timeout list. */
export interface Timed {
  /**
   * Clock ms when its budget started (it times out `timeoutMs` later); not read while the entry is
   * pending (see {@link TimeoutList.addPending}).
   */
  fired: number;
  prev: Timed | undefined;
  next: Timed | undefined;
  /** Called once when it times out. */
  expire(): void;
}

/**
 * @internal Per-call timeouts with one timer for all calls. Every call gets the same timeout, so
 * calls time out in the order they were fired (entered in `fire()`, before the call waits for a
 * permit; budget starts never go backwards along the list): a FIFO list is already sorted by due
 * time, adding and
 * removing are O(1), and a single timer armed for the head is enough. opossum arms a `setTimeout`
 * per call instead.
 */
export class TimeoutList {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  #head: Timed | undefined = undefined;
  #tail: Timed | undefined = undefined;
  #timer: unknown = undefined;
  /**
   * Inside `#fire`'s loop: an entry added meanwhile (a call fired by a listener of an expiring call)
   * must not arm a timer of its own; `#fire` arms one for the head when the loop ends.
   */
  #firing = false;
  /**
   * The first of the entries at the tail whose budget start is not known yet (see
   * {@link TimeoutList.addPending}), `undefined` when none: they are stamped together.
   */
  #firstPending: Timed | undefined = undefined;

  constructor(clock: Clock, timeoutMs: number) {
    this.#clock = clock;
    this.#timeoutMs = timeoutMs;
  }

  add(t: Timed): void {
    // Entries before it still unstamped were fired before it: they start no later (the list stays
    // sorted by due time).
    if (this.#firstPending !== undefined) this.stamp(t.fired);
    const tail = this.#tail;
    t.prev = tail;
    t.next = undefined;
    this.#tail = t;
    if (tail !== undefined) tail.next = t;
    else this.#first(t);
  }

  /**
   * Adds `t` at the tail with its budget start unknown yet (its `fired` is not read): it gets one from
   * {@link TimeoutList.stamp}, with every other entry still pending, or by the next `add`. A pending
   * entry never expires; a list whose head is pending arms no timer until the stamp.
   */
  addPending(t: Timed): void {
    const tail = this.#tail;
    t.prev = tail;
    t.next = undefined;
    this.#tail = t;
    if (tail !== undefined) tail.next = t;
    else this.#head = t;
    if (this.#firstPending === undefined) this.#firstPending = t;
  }

  /** Whether entries wait for their budget start. */
  get pending(): boolean {
    return this.#firstPending !== undefined;
  }

  /** Gives every pending entry the budget start `fired`, and arms the timer if none is armed. */
  stamp(fired: number): void {
    for (let t = this.#firstPending; t !== undefined; t = t.next) t.fired = fired;
    this.#firstPending = undefined;
    if (this.#timer === undefined && !this.#firing) this.#arm();
  }

  /**
   * `t` is the only entry. Only then can the timer need arming: while the list is not empty a timer
   * is armed (`#fire` re-arms for the new head, even when an expiry throws), except inside `#fire`'s
   * loop. (Kept out of `add`: the smaller `add` measured about 100 machine instructions less per
   * call with 10,000 timed calls at once, `bench/instructions.mjs`.)
   */
  #first(t: Timed): void {
    this.#head = t;
    if (this.#timer === undefined && !this.#firing) this.#arm();
  }

  /** Whether `t` is listed (a removed entry has no links and is not the head). */
  has(t: Timed): boolean {
    return t.prev !== undefined || this.#head === t;
  }

  remove(t: Timed): void {
    if (!this.has(t)) return;
    if (t === this.#firstPending) this.#firstPending = t.next;
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
    for (let t = this.#head; t !== undefined; ) {
      const next = t.next;
      t.prev = undefined;
      t.next = undefined;
      t = next;
    }
    this.#head = undefined;
    this.#tail = undefined;
    this.#firstPending = undefined;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    const head = this.#head;
    // (A pending head: the stamp arms it.)
    if (head === undefined || head === this.#firstPending) return;
    const due = head.fired + this.#timeoutMs;
    this.#timer = this.#clock.setTimeout(this.#fire, Math.max(0, due - this.#clock.now()));
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    const now = this.#clock.now();
    const timeoutMs = this.#timeoutMs;
    this.#firing = true;
    try {
      for (
        let t = this.#head;
        t !== undefined && t !== this.#firstPending && t.fired + timeoutMs <= now;
        t = this.#head
      ) {
        this.remove(t);
        t.expire();
      }
    } finally {
      this.#firing = false;
      // Armed for the new head even if an expiry threw (`add` arms only an empty list's first entry).
      // (clear() from inside the loop emptied the list: nothing to arm.)
      this.#arm();
    }
  };
}
