import type { PromCounter, PromLabels } from './promClient.js';

/** One series of a {@link Tally}: its labels and the count not yet handed to prom-client. */
export interface Slot {
  readonly labels: PromLabels;
  n: number;
}

/**
 * Counts kept as plain numbers (an increment per event, no label hashing) and added to the
 * prom-client counter by its `collect`, which prom-client runs before every read of the counter.
 */
export class Tally {
  counter: PromCounter | undefined;
  readonly #slots: Slot[] = [];

  /** A new series, exported at 0 from the start. */
  slot(labels: PromLabels): Slot {
    const slot = { labels, n: 0 };
    this.#slots.push(slot);
    this.counter?.inc(labels, 0);
    return slot;
  }

  /** One series per value of label `name`, on top of `labels`. */
  slots(labels: PromLabels, name: string, values: readonly string[]): Record<string, Slot> {
    const set: Record<string, Slot> = {};
    for (const value of values) set[value] = this.slot({ ...labels, [name]: value });
    return set;
  }

  flush(counter: PromCounter): void {
    for (const slot of this.#slots) {
      if (slot.n === 0) continue;
      counter.inc(slot.labels, slot.n);
      slot.n = 0;
    }
  }
}
