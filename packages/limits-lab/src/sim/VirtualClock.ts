import type { Clock } from 'limits-core';

/** Something that happens at a moment of virtual time: a timer, the end of a call, a client's send. */
export interface SimEvent {
  /** Runs the event; the clock reads its due time meanwhile. */
  fire(): void;
}

/** A `Clock` timer: an event that may be cancelled before it fires. */
class Timer implements SimEvent {
  cancelled = false;
  constructor(readonly fn: () => void) {}
  fire(): void {
    if (!this.cancelled) this.fn();
  }
}

/**
 * A limits-core `Clock` on virtual time, and the simulator's event queue: `now()` reads the time of
 * the event being run; timers and the simulator's own events wait in one binary heap ordered by due
 * time, then by the order they were scheduled (so two events due at once run in a fixed order). No
 * real timer, no wall time: time moves only when {@link VirtualClock.runUntil} runs events.
 */
export class VirtualClock implements Clock {
  #now = 0;
  #seq = 0;
  // The heap as parallel arrays: due time, scheduling order, event.
  readonly #at: number[] = [];
  readonly #order: number[] = [];
  readonly #events: SimEvent[] = [];

  /** The current virtual time, in ms. */
  now(): number {
    return this.#now;
  }

  /** A one-shot timer `ms` from now (a negative or non-finite delay runs at the current time). */
  setTimeout(fn: () => void, ms: number): unknown {
    const timer = new Timer(fn);
    this.schedule(this.#now + (ms > 0 && Number.isFinite(ms) ? ms : 0), timer);
    return timer;
  }

  /** Cancels a timer of {@link VirtualClock.setTimeout}; anything else is ignored. */
  clearTimeout(handle: unknown): void {
    if (handle instanceof Timer) handle.cancelled = true;
  }

  /** Events waiting (cancelled timers included until their due time). */
  get pending(): number {
    return this.#events.length;
  }

  /** The due time of the next event (`Infinity` when none waits). */
  nextAt(): number {
    return this.#events.length === 0 ? Number.POSITIVE_INFINITY : (this.#at[0] as number);
  }

  /** Schedules `event` at virtual time `atMs` (not before now). */
  schedule(atMs: number, event: SimEvent): void {
    const at = Math.max(atMs, this.#now);
    const order = this.#seq++;
    const times = this.#at;
    const orders = this.#order;
    const events = this.#events;
    let i = events.length;
    times.push(at);
    orders.push(order);
    events.push(event);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pt = times[parent] as number;
      if (pt < at || (pt === at && (orders[parent] as number) < order)) break;
      times[i] = pt;
      orders[i] = orders[parent] as number;
      events[i] = events[parent] as SimEvent;
      i = parent;
    }
    times[i] = at;
    orders[i] = order;
    events[i] = event;
  }

  /**
   * Runs every event due at or before `atMs`, in order (events they schedule within the span run
   * too), then sets the time to `atMs`.
   */
  runUntil(atMs: number): void {
    while (this.#events.length > 0 && (this.#at[0] as number) <= atMs) {
      this.#now = this.#at[0] as number;
      this.#pop().fire();
    }
    if (atMs > this.#now) this.#now = atMs;
  }

  /** Runs the next event, if any; returns whether one ran. */
  step(): boolean {
    if (this.#events.length === 0) return false;
    this.#now = this.#at[0] as number;
    this.#pop().fire();
    return true;
  }

  #pop(): SimEvent {
    const times = this.#at;
    const orders = this.#order;
    const events = this.#events;
    const top = events[0] as SimEvent;
    const lastAt = times.pop() as number;
    const lastOrder = orders.pop() as number;
    const last = events.pop() as SimEvent;
    const n = events.length;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (
        right < n &&
        ((times[right] as number) < (times[child] as number) ||
          (times[right] === times[child] && (orders[right] as number) < (orders[child] as number)))
      ) {
        child = right;
      }
      const ct = times[child] as number;
      if (lastAt < ct || (lastAt === ct && lastOrder < (orders[child] as number))) break;
      times[i] = ct;
      orders[i] = orders[child] as number;
      events[i] = events[child] as SimEvent;
      i = child;
    }
    times[i] = lastAt;
    orders[i] = lastOrder;
    events[i] = last;
    return top;
  }
}
