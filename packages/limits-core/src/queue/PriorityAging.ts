import { checkNumber, checkObject, formatValue } from '../internal/validate.js';
import { GroupList, joinGroup, leaveGroup } from './GroupList.js';
import type { Selector } from './Selector.js';
import type { SelectorEntry, Waiter } from './Waiter.js';

/** Options of priority queueing, {@link LimiterOptions.priority}. */
export interface PriorityOptions {
  /**
   * Priority a waiter gains per second of waiting (aging), so low-priority work is not starved
   * forever by a steady stream of high-priority work. 0 turns aging off.
   * @default 1
   */
  agingPerSecond?: number;
  /** The highest priority aging can reach. @default Infinity */
  maxAgedPriority?: number;
  /**
   * Minimum share of grants per priority class, in [0, 1): a class with waiters that has not been served
   * for `ceil(1 / minShare) − 1` consecutive grants is served next, whatever the priorities.
   * @default 0 (off)
   */
  minShare?: number;
}

/** @internal One priority class: a FIFO of waiters with the same base priority. */
interface PriorityClass {
  priority: number;
  list: GroupList;
  /** Grants to other classes since this class was last served (while it had waiters). */
  starved: number;
}

/**
 * @internal Priority with aging: higher effective priority first, where
 * `effective = max(priority, min(maxAgedPriority, priority + agingPerSecond × seconds waited))`; ties go to the older
 * waiter. Each base priority is a FIFO class, so only class heads (their oldest, hence most aged,
 * waiters) compete: a pick costs O(classes).
 *
 * Progress guaranteed, given capacity keeps freeing: with `agingPerSecond > 0` and
 * `maxAgedPriority` ≥ the highest base priority in use, a waiter of base priority p waits at most
 * `(highest − p) / agingPerSecond` seconds before no newcomer can overtake it, then only for waiters
 * that were already ahead of it (a bounded number). With `minShare = s`, every class with waiters
 * gets at least one grant in every `ceil(1 / s)`. Not guaranteed: progress while nothing is released,
 * and any bound at all with aging and `minShare` both off (strict priority can starve).
 */
export class PriorityAging implements Selector {
  readonly #rate: number;
  readonly #cap: number;
  readonly #starveAfter: number;
  readonly #classes = new Map<number, PriorityClass>();

  /** @throws TypeError/RangeError naming the option, the allowed range and the value given. */
  constructor(options: PriorityOptions) {
    checkObject('priority', options);
    this.#rate =
      checkNumber('priority.agingPerSecond', options.agingPerSecond, 1, { min: 0 }) / 1000;
    this.#cap = checkNumber('priority.maxAgedPriority', options.maxAgedPriority, Infinity, {
      allowInfinity: true,
    });
    const share = checkNumber('priority.minShare', options.minShare, 0, { min: 0 });
    if (share >= 1) {
      throw new RangeError(
        `limits: option "priority.minShare" must be a number in [0, 1), got ${formatValue(share)}`,
      );
    }
    this.#starveAfter = share === 0 ? Infinity : Math.ceil(1 / share) - 1;
  }

  refuse(): undefined {
    return undefined;
  }

  add(w: Waiter): void {
    const e = w.sel as SelectorEntry;
    let c = this.#classes.get(e.priority);
    if (c === undefined) {
      c = { priority: e.priority, list: new GroupList(), starved: 0 };
      this.#classes.set(e.priority, c);
    }
    joinGroup(e, c);
  }

  delete(w: Waiter): void {
    const emptied = leaveGroup<PriorityClass>(w);
    if (emptied !== undefined) this.#classes.delete(emptied.priority);
  }

  served(w: Waiter): void {
    const chosen = (w.sel as SelectorEntry).group as PriorityClass;
    for (const c of this.#classes.values()) c.starved = c === chosen ? 0 : c.starved + 1;
    this.delete(w);
  }

  peek(now: number): Waiter | undefined {
    let best: Waiter | undefined;
    let bestScore = -Infinity;
    let starvedMost: PriorityClass | undefined;
    for (const c of this.#classes.values()) {
      const head = (c.list.head as SelectorEntry).waiter;
      if (
        c.starved >= this.#starveAfter &&
        (starvedMost === undefined || c.starved > starvedMost.starved)
      ) {
        starvedMost = c;
      }
      const aged = Math.min(this.#cap, c.priority + this.#rate * (now - head.enqueuedAt));
      const score = Math.max(c.priority, aged);
      if (
        score > bestScore ||
        (score === bestScore && best !== undefined && head.enqueuedAt < best.enqueuedAt)
      ) {
        best = head;
        bestScore = score;
      }
    }
    return starvedMost !== undefined ? starvedMost.list.head?.waiter : best;
  }
}
