import { LimitExceededError, type Limiter } from 'limits-core';
import type { LimiterSource } from './options.js';

/**
 * The limiter of each origin for a function `limiter` option: the function's answer per origin,
 * kept in a table of at most `max` origins ordered by last use. A new origin with the table full
 * evicts the least recently used origin whose limiter is idle (nothing in flight or queued): a
 * limiter with work in flight is never forgotten, or the origin's next requests would get a fresh
 * limiter and exceed its limit. With every limiter busy, the new origin is refused.
 */
export class OriginLimiters {
  readonly #source: (origin: string) => Limiter | undefined;
  readonly #max: number;
  readonly #table = new Map<string, Limiter | undefined>();

  constructor(source: (origin: string) => Limiter | undefined, max: number) {
    this.#source = source;
    this.#max = max;
  }

  /** Origins kept right now. */
  get size(): number {
    return this.#table.size;
  }

  /**
   * The origin's limiter (`undefined`: not limited).
   * @throws LimitExceededError (reason `limit`) when the table is full of busy limiters; whatever
   *   the `limiter` function throws, or a TypeError when it returns something else than a Limiter.
   */
  for(origin: string): Limiter | undefined {
    const table = this.#table;
    if (table.has(origin)) {
      const known = table.get(origin);
      // Move to the end: the Map's order is the order of last use.
      table.delete(origin);
      table.set(origin, known);
      return known;
    }
    if (table.size >= this.#max && !this.#evictIdle()) {
      throw new LimitExceededError(
        `limits: no room for origin ${origin}: ${this.#max}/${this.#max} origins have work in flight (maxOrigins)`,
        { reason: 'limit' },
      );
    }
    const limiter = this.#source(origin);
    if (
      limiter !== undefined &&
      (typeof limiter !== 'object' ||
        limiter === null ||
        typeof (limiter as Limiter).acquireWith !== 'function')
    ) {
      throw new TypeError(
        `limits: option "limiter" returned something else than a Limiter or undefined for ${origin}`,
      );
    }
    table.set(origin, limiter);
    return limiter;
  }

  #evictIdle(): boolean {
    for (const [origin, limiter] of this.#table) {
      if (limiter === undefined || (limiter.inflight === 0 && limiter.queued === 0)) {
        this.#table.delete(origin);
        return true;
      }
    }
    return false;
  }
}

/** A single limiter for every origin, or the per-origin table of a function source. */
export function originLimiters(source: LimiterSource, max: number): Limiter | OriginLimiters {
  return typeof source === 'function' ? new OriginLimiters(source, max) : source;
}
