import { GroupList, joinGroup, leaveGroup } from './GroupList.js';
import type { Selector } from './Selector.js';
import type { SelectorEntry, Waiter } from './Waiter.js';

/** @internal The waiters of one rank, oldest first. */
interface RankClass {
  readonly rank: number;
  readonly list: GroupList;
}

/**
 * @internal The queue order of a shedding limiter: the highest rank first, the oldest first within a
 * rank (a waiter's rank is its selector entry's `priority`, an integer in `[0, ranks)`: see
 * `AdmissionThreshold.rankOf`). It also names the waiter to give up first, the lowest rank's newest,
 * for a full queue that must make room for a higher-ranked newcomer and for a threshold that rose.
 *
 * Strict: a waiter waits while higher ranks keep arriving, until it is served, leaves by time
 * (`maxQueueWaitMs`, its deadline) or the threshold rises above it. One list per rank; the highest
 * and lowest non-empty ranks are tracked, so `peek` and `lowest` cost O(1) and a class that empties
 * costs a scan to the next non-empty one.
 */
export class RankOrder implements Selector {
  readonly #classes: (RankClass | undefined)[];
  /** The highest non-empty rank, -1 when empty. */
  #top = -1;
  /** The lowest non-empty rank, `ranks` when empty. */
  #bottom: number;

  constructor(ranks: number) {
    this.#classes = new Array<RankClass | undefined>(ranks).fill(undefined);
    this.#bottom = ranks;
  }

  refuse(): undefined {
    return undefined;
  }

  add(w: Waiter): void {
    const rank = (w.sel as SelectorEntry).priority;
    let c = this.#classes[rank];
    if (c === undefined) {
      c = { rank, list: new GroupList() };
      this.#classes[rank] = c;
    }
    joinGroup(w.sel as SelectorEntry, c);
    if (rank > this.#top) this.#top = rank;
    if (rank < this.#bottom) this.#bottom = rank;
  }

  delete(w: Waiter): void {
    const emptied = leaveGroup<RankClass>(w);
    if (emptied === undefined) return;
    const classes = this.#classes;
    if (emptied.rank === this.#top) {
      let r = this.#top - 1;
      while (r >= 0 && (classes[r]?.list.size ?? 0) === 0) r--;
      this.#top = r;
    }
    if (emptied.rank === this.#bottom) {
      let r = this.#bottom + 1;
      while (r < classes.length && (classes[r]?.list.size ?? 0) === 0) r++;
      this.#bottom = r;
    }
  }

  served(w: Waiter): void {
    this.delete(w);
  }

  peek(): Waiter | undefined {
    return this.#top < 0 ? undefined : this.#classes[this.#top]?.list.head?.waiter;
  }

  /** The waiter to give up first: the newest of the lowest rank (`undefined` when empty). */
  lowest(): Waiter | undefined {
    return this.#bottom >= this.#classes.length
      ? undefined
      : this.#classes[this.#bottom]?.list.tail?.waiter;
  }

  /** The rank of a queued waiter. */
  static rankOf(w: Waiter): number {
    return (w.sel as SelectorEntry).priority;
  }
}
