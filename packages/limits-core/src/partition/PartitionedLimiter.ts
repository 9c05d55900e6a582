import { FixedLimit } from '../algorithms/FixedLimit.js';
import type { LimitAlgorithm, Sample } from '../algorithms/LimitAlgorithm.js';
import { checkKeys, checkNumber, formatValue, nearestName } from '../internal/validate.js';
import { Limiter } from '../limiter/Limiter.js';
import type {
  AcquireOptions,
  CapacityGate,
  CloseOptions,
  CloseResult,
} from '../limiter/options.js';
import { GATE, type GatedOptions } from '../limiter/options.js';
import {
  type PartitionedLimiterOptions,
  prefixed,
  resolvePartitionedOptions,
} from './partitionOptions.js';
import { maxReach, reservedAt, sharedAt } from './reach.js';

export type { PartitionedLimiterOptions, PartitionOptions } from './partitionOptions.js';

/** One partition's line of the ledger. */
export interface PartitionLedger {
  /** Units reserved for it now (a fractional reserve follows the total limit). */
  reserved: number;
  /** Units it runs beyond its reserve, taken from the shared pool: `max(0, running − reserved)`. */
  borrowed: number;
  /** Units in flight. */
  running: number;
  /** Units released since creation (cumulative). */
  released: number;
  /** Waiters in its queue. */
  queued: number;
}

/** The whole ledger. */
export interface Ledger {
  /** The total limit now. */
  total: number;
  /** The shared pool: `max(0, total − Σ reserved)`. */
  shared: number;
  /** Units borrowed from the shared pool, all partitions together. */
  borrowed: number;
  /** Units in flight, all partitions together. */
  running: number;
  /** Whether new borrowing is allowed. */
  borrowing: boolean;
  /** Per partition. */
  partitions: Record<string, PartitionLedger>;
}

interface Part {
  name: string;
  reserved: number;
  maxBorrow: number;
  /** The most units this partition can ever have: a costlier request is refused with `too_large`. */
  maxCost: number;
  running: number;
  borrowed: number;
  released: number;
  limiter: Limiter;
}

/**
 * Bulkheads over one capacity: each partition has a reserved minimum that is never lent out, and
 * may borrow from the shared rest (total − Σ reserved) up to its own cap. A saturated partition can
 * use idle shared capacity, yet never the others' reserves, so a slow feature cannot starve a
 * critical one. `stopBorrowing()` during an incident stops new borrowing; existing borrows drain as
 * their work really ends. Each partition is a full {@link Limiter} (its own queue settings, events).
 *
 * What a partition can ever have is its reserve plus what it may borrow (`maxBorrow`, bounded by the
 * shared pool), at the largest total (a fixed total, or an adaptive one's `maxLimit`): a costlier
 * request is refused with reason `too_large` at once. A request within that reach but above what the
 * partition can have now (an adaptive total shrank) runs alone, as in a plain Limiter: once its
 * partition has nothing in flight and no partition borrows from the shared pool, it takes its
 * reserve, the whole pool and the gap; the other partitions' reserves still hold. While a partition
 * with nothing in flight waits for a loan (either kind), no other partition starts a new loan, so the
 * units freed by ending loans reach it instead of being re-lent to busier partitions. Deadline
 * admission and `retryAfterMs` count what the partition can use now.
 *
 * If an adaptive total falls below the sum of absolute reserves, the reserves still hold (the
 * shared pool is empty): a reserve is a guarantee, so the total may be exceeded by up to that gap.
 *
 * @example
 * ```ts
 * const bulkheads = new PartitionedLimiter({
 *   limit: 10,
 *   partitions: { core: { reserved: 3, maxQueued: 20 }, recommendation: { reserved: 2, maxBorrow: 5 } },
 * });
 * await bulkheads.run('recommendation', (signal) => fetchRecs(signal));
 * bulkheads.stopBorrowing(); // during an incident
 * ```
 */
export class PartitionedLimiter {
  readonly #total: LimitAlgorithm;
  readonly #parts = new Map<string, Part>();
  readonly #order: Part[] = [];
  #borrowing = true;
  #borrowedSum = 0;
  #runningSum = 0;
  #pokeFrom = 0;
  /** The total's last good value (an algorithm's bad one is reported and ignored). */
  #totalValue: number;
  /** A partition with nothing in flight whose head waits for a loan: no new loans start elsewhere meanwhile. */
  #claim: Part | undefined = undefined;

  /**
   * Every option is checked before anything is built.
   * @throws TypeError for a wrong type or an unknown key (with the nearest valid name), RangeError
   *   for a value out of range: each names the option, the allowed range and the value given.
   */
  constructor(options: PartitionedLimiterOptions) {
    const o = resolvePartitionedOptions(options);
    this.#total = o.total;
    this.#totalValue = o.total.limit;
    const reach = maxReach(o.partitions, o.maxTotal);
    o.partitions.forEach((spec, i) => {
      const maxCost = reach[i] as number;
      if (maxCost < 1) {
        throw new RangeError(
          `limits: partition "${spec.name}" could never run a call: it has no reserve and ${spec.maxBorrow === 0 ? '"maxBorrow" is 0' : 'the shared pool is empty (the other reserves take the whole total)'}`,
        );
      }
      this.#order.push({
        name: spec.name,
        reserved: spec.reserved,
        maxBorrow: spec.maxBorrow,
        maxCost,
        running: 0,
        borrowed: 0,
        released: 0,
        limiter: undefined as unknown as Limiter,
      });
    });
    // A fixed total needs no sampling (the limiter skips the clock for a FixedLimit).
    const shared = o.fixed ? undefined : this.#proxy();
    o.partitions.forEach((spec, i) => {
      const part = this.#order[i] as Part;
      try {
        const gated: GatedOptions = {
          ...spec.queue,
          algorithm: shared ?? new FixedLimit(o.maxTotal),
          probeSlots: 0,
          [GATE]: this.#gate(part),
          ...(options.clock === undefined ? {} : { clock: options.clock }),
          ...(options.classify === undefined ? {} : { classify: options.classify }),
          ...(options.stallThresholdMs === undefined
            ? {}
            : { stallThresholdMs: options.stallThresholdMs }),
        };
        part.limiter = new Limiter(gated);
      } catch (error) {
        throw prefixed(error, `partitions.${part.name}.`);
      }
      this.#parts.set(part.name, part);
    });
  }

  /**
   * The limiter of one partition (acquire, run, events, snapshot).
   * @throws TypeError when `name` is not a string; RangeError for an unknown name (with the nearest one).
   */
  partition(name: string): Limiter {
    return this.#part(name).limiter;
  }

  /**
   * Runs `task` in partition `name`; see {@link Limiter.run}.
   * @throws (rejected promise) TypeError/RangeError for a bad or unknown `name`, as `partition()` throws.
   */
  run<T>(
    name: string,
    task: (signal: AbortSignal) => T | PromiseLike<T>,
    options?: AcquireOptions,
  ): Promise<T> {
    let part: Part;
    try {
      part = this.#part(name);
    } catch (error) {
      return Promise.reject(error);
    }
    return part.limiter.run(task, options);
  }

  /** Stops new borrowing from the shared pool; existing borrows drain as their work ends. */
  stopBorrowing(): void {
    this.#borrowing = false;
  }

  /** Allows borrowing again and serves waiters that now fit. */
  resumeBorrowing(): void {
    this.#borrowing = true;
    this.#poke(undefined);
  }

  /** The ledger: reserved, borrowed, running and released per partition, and the totals. */
  ledger(): Ledger {
    const total = this.#totalNow();
    const partitions: Record<string, PartitionLedger> = {};
    let reservedSum = 0;
    for (const p of this.#order) {
      const reserved = this.#reservedOf(p, total);
      reservedSum += reserved;
      partitions[p.name] = {
        reserved,
        borrowed: p.borrowed,
        running: p.running,
        released: p.released,
        queued: p.limiter.queued,
      };
    }
    return {
      total,
      shared: Math.max(0, total - reservedSum),
      borrowed: this.#borrowedSum,
      running: this.#runningSum,
      borrowing: this.#borrowing,
      partitions,
    };
  }

  /**
   * Closes every partition (new requests and queued waiters are refused with reason `closed`) and
   * resolves when all their work has ended, or when `timeoutMs` has passed, with what was still held.
   * @param options - `timeoutMs`: bound on the wait for permits in flight (default: no bound).
   * @returns the sum over the partitions (`drained` only when every partition drained).
   * @throws (as a rejected promise) TypeError/RangeError for bad options, before anything closes.
   */
  async close(options?: CloseOptions): Promise<CloseResult> {
    if (options !== undefined) {
      checkKeys('PartitionedLimiter.close', options, ['timeoutMs']);
      checkNumber('timeoutMs', options.timeoutMs, Infinity, { min: 0, allowInfinity: true });
    }
    const results = await Promise.all(this.#order.map((p) => p.limiter.close(options)));
    return {
      drained: results.every((r) => r.drained),
      permits: results.reduce((sum, r) => sum + r.permits, 0),
      inflight: results.reduce((sum, r) => sum + r.inflight, 0),
    };
  }

  #part(name: string): Part {
    if (typeof name !== 'string') {
      throw new TypeError(`limits: a partition name must be a string, got ${formatValue(name)}`);
    }
    const part = this.#parts.get(name);
    if (part === undefined) {
      const near = nearestName(name, [...this.#parts.keys()]);
      throw new RangeError(
        `limits: unknown partition "${name}"; partitions are ${[...this.#parts.keys()].map((n) => `"${n}"`).join(', ')}${near === undefined ? '' : `; did you mean "${near}"?`}`,
      );
    }
    return part;
  }

  #totalNow(): number {
    return Math.max(0, Math.floor(this.#totalValue));
  }

  #reservedOf(p: Part, total: number): number {
    return reservedAt(p.reserved, total);
  }

  #shared(total: number): number {
    return sharedAt(this.#order, total);
  }

  /** Every partition feeds the one total algorithm; its limit is what each partition's limiter sees. */
  #proxy(): LimitAlgorithm {
    const total = this.#total;
    const self = this;
    return {
      get limit() {
        return self.#totalValue;
      },
      get maxLimit() {
        return total.maxLimit;
      },
      get lastDecision() {
        return total.lastDecision;
      },
      update: (sample: Sample) => {
        const before = this.#totalNow();
        const next = total.update(sample);
        const value = total.limit;
        if (typeof value !== 'number' || !(value >= 0) || value === Infinity) {
          // Reported by the partition's limiter (its `error` event); the last good total stays.
          throw new RangeError(
            `limits: the PartitionedLimiter's limit algorithm gave limit ${formatValue(value)}; the last good total ${this.#totalValue} is kept`,
          );
        }
        this.#totalValue = value;
        const after = this.#totalNow();
        if (after !== before) {
          // Fractional reserves follow the total: recompute every partition's borrowed units.
          for (const p of this.#order) this.#rebalance(p);
          // A grown total may fit waiters of any partition.
          if (after > before) queueMicrotask(() => this.#poke(undefined));
        }
        return next;
      },
    };
  }

  #gate(part: Part): CapacityGate {
    return {
      fits: (cost) => {
        const total = this.#totalNow();
        const reserved = this.#reservedOf(part, total);
        const borrowAfter = Math.max(0, part.running + cost - reserved);
        if (borrowAfter <= part.borrowed) return this.#unclaim(part); // within its reserve
        if (!this.#borrowing) return false;
        const claim = this.#claim;
        if (claim !== undefined && claim !== part) {
          // Another partition's head waits to run alone: no new loan until it has run.
          if (claim.limiter.queued > 0 && claim.running === 0) return false;
          this.#claim = undefined;
        }
        if (
          borrowAfter <= part.maxBorrow &&
          this.#borrowedSum - part.borrowed + borrowAfter <= this.#shared(total)
        ) {
          return this.#unclaim(part);
        }
        // Not now. An idle partition claims the pool: no new loan elsewhere until its head runs
        // (on a loan as soon as one fits, or alone once every loan has ended when it costs more
        // than the partition can have now, the total having shrunk; larger costs than it can ever
        // have are refused at admission).
        if (part.running > 0) return false;
        if (this.#borrowedSum === 0) return this.#unclaim(part);
        this.#claim ??= part;
        return false;
      },
      granted: (cost) => {
        part.running += cost;
        this.#runningSum += cost;
        this.#rebalance(part);
      },
      released: (cost) => {
        part.running -= cost;
        part.released += cost;
        this.#runningSum -= cost;
        this.#rebalance(part);
      },
      afterRelease: () => this.#poke(part),
      inflight: () => this.#runningSum,
      maxCost: part.maxCost,
      capacity: () => {
        const total = this.#totalNow();
        const reserved = this.#reservedOf(part, total);
        if (!this.#borrowing) return reserved;
        const free = this.#shared(total) - (this.#borrowedSum - part.borrowed);
        return reserved + Math.max(0, Math.min(part.maxBorrow, free));
      },
    };
  }

  /** `part` got what it asked for: a claim it held is over. Returns `true` (a fit). */
  #unclaim(part: Part): true {
    if (this.#claim === part) this.#claim = undefined;
    return true;
  }

  /** Recomputes a partition's borrowed units: whatever it runs beyond its reserve. */
  #rebalance(part: Part): void {
    const borrowed = Math.max(0, part.running - this.#reservedOf(part, this.#totalNow()));
    this.#borrowedSum += borrowed - part.borrowed;
    part.borrowed = borrowed;
  }

  /** Lets the other partitions' queues use capacity a release freed, starting after the last one poked. */
  #poke(except: Part | undefined): void {
    const n = this.#order.length;
    const start = this.#pokeFrom;
    this.#pokeFrom = (start + 1) % n;
    for (let i = 0; i < n; i++) {
      const p = this.#order[(start + i) % n] as Part;
      if (p !== except && p.limiter.queued > 0) p.limiter._dispatch();
    }
  }
}
