import type { Clock } from '../internal/clock.js';
import { checkNumber } from '../internal/validate.js';
import { FixedLimit } from '../limit/FixedLimit.js';
import type { LimitAlgorithm, Sample } from '../limit/LimitAlgorithm.js';
import { Limiter } from '../limiter/Limiter.js';
import type { AcquireOptions, CapacityGate, LimiterOptions } from '../limiter/options.js';
import type { Classify } from '../limiter/outcome.js';

/** Settings of one partition of a {@link PartitionedLimiter}. */
export interface PartitionOptions
  extends Pick<
    LimiterOptions,
    | 'maxQueued'
    | 'maxQueuedBytes'
    | 'maxQueueWaitMs'
    | 'queueOrder'
    | 'standingQueueMs'
    | 'codel'
    | 'fairness'
    | 'priority'
    | 'initialServiceMs'
  > {
  /**
   * Capacity reserved for this partition and never lent to others: a whole number of units, or a
   * fraction in (0, 1) of the current total limit (rounded down).
   * @default 0
   */
  reserved?: number;
  /** Most units this partition may borrow from the shared pool on top of its reserve. @default Infinity */
  maxBorrow?: number;
}

/** Options of {@link PartitionedLimiter}. */
export interface PartitionedLimiterOptions {
  /** Total capacity: a number, or an adaptive algorithm fed by every partition's calls. */
  limit: number | LimitAlgorithm;
  /** The partitions by name. */
  partitions: Record<string, PartitionOptions>;
  /** Time source and timers. @default the system clock */
  clock?: Clock;
  /** Outcome of `run` tasks, for every partition. */
  classify?: Classify;
  /** Event-loop stall threshold for adaptive totals; see {@link LimiterOptions.stallThresholdMs}. */
  stallThresholdMs?: number;
}

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

  /** @throws RangeError/TypeError naming the option, the allowed range and the value given. */
  constructor(options: PartitionedLimiterOptions) {
    const limit = options.limit;
    this.#total = typeof limit === 'number' ? new FixedLimit(limit) : limit;
    if (typeof this.#total?.update !== 'function' || typeof this.#total.limit !== 'number') {
      throw new TypeError('limits: option "limit" must be a number or a LimitAlgorithm');
    }
    const names = Object.keys(options.partitions ?? {});
    if (names.length === 0)
      throw new RangeError('limits: option "partitions" must name at least one partition');
    let absolute = 0;
    let fractions = 0;
    for (const name of names) {
      const p = options.partitions[name] as PartitionOptions;
      const reserved = checkNumber(`partitions.${name}.reserved`, p.reserved, 0, { min: 0 });
      if (reserved > 0 && reserved < 1) fractions += reserved;
      else if (!Number.isInteger(reserved)) {
        throw new RangeError(
          `limits: option "partitions.${name}.reserved" must be a whole number of units or a fraction in (0, 1), got ${reserved}`,
        );
      } else absolute += reserved;
      checkNumber(`partitions.${name}.maxBorrow`, p.maxBorrow, Infinity, {
        min: 0,
        allowInfinity: true,
      });
    }
    if (fractions > 1) {
      throw new RangeError(
        `limits: the fractional reserves of "partitions" add up to ${fractions}, more than 1`,
      );
    }
    const initialTotal = Math.floor(this.#total.limit);
    if (
      typeof limit === 'number' &&
      absolute + Math.floor(fractions * initialTotal) > initialTotal
    ) {
      throw new RangeError(
        `limits: the reserves of "partitions" add up to ${absolute} units (+ fractions), more than the total limit ${initialTotal}`,
      );
    }
    // A fixed total needs no sampling (the limiter skips the clock for a FixedLimit).
    const shared = typeof limit === 'number' ? undefined : this.#proxy();
    for (const name of names) {
      const p = options.partitions[name] as PartitionOptions;
      const part: Part = {
        name,
        reserved: p.reserved ?? 0,
        maxBorrow: p.maxBorrow ?? Infinity,
        running: 0,
        borrowed: 0,
        released: 0,
        limiter: undefined as unknown as Limiter,
      };
      const { reserved: _r, maxBorrow: _m, ...queueOptions } = p;
      part.limiter = new Limiter({
        ...queueOptions,
        limit: shared ?? new FixedLimit(limit as number),
        probeSlots: 0,
        gate: this.#gate(part),
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        ...(options.classify === undefined ? {} : { classify: options.classify }),
        ...(options.stallThresholdMs === undefined
          ? {}
          : { stallThresholdMs: options.stallThresholdMs }),
      });
      this.#parts.set(name, part);
      this.#order.push(part);
    }
  }

  /** The limiter of one partition (acquire, run, events, snapshot). @throws RangeError for an unknown name. */
  partition(name: string): Limiter {
    return this.#part(name).limiter;
  }

  /** Runs `task` in partition `name`; see {@link Limiter.run}. */
  run<T>(
    name: string,
    task: (signal: AbortSignal) => T | PromiseLike<T>,
    options?: AcquireOptions,
  ): Promise<T> {
    return this.#part(name).limiter.run(task, options);
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

  /** Closes every partition; resolves when all their work has ended. */
  async close(): Promise<void> {
    await Promise.all(this.#order.map((p) => p.limiter.close()));
  }

  #part(name: string): Part {
    const part = this.#parts.get(name);
    if (part === undefined) {
      throw new RangeError(
        `limits: unknown partition "${name}"; partitions are ${[...this.#parts.keys()].map((n) => `"${n}"`).join(', ')}`,
      );
    }
    return part;
  }

  #totalNow(): number {
    return Math.max(0, Math.floor(this.#total.limit));
  }

  #reservedOf(p: Part, total: number): number {
    return p.reserved > 0 && p.reserved < 1 ? Math.floor(p.reserved * total) : p.reserved;
  }

  #shared(total: number): number {
    let reserved = 0;
    for (const p of this.#order) reserved += this.#reservedOf(p, total);
    return Math.max(0, total - reserved);
  }

  /** Every partition feeds the one total algorithm; its limit is what each partition's limiter sees. */
  #proxy(): LimitAlgorithm {
    const total = this.#total;
    return {
      get limit() {
        return total.limit;
      },
      get maxLimit() {
        return total.maxLimit ?? Math.floor(total.limit);
      },
      get lastDecision() {
        return total.lastDecision;
      },
      update: (sample: Sample) => {
        const before = this.#totalNow();
        const next = total.update(sample);
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
        if (borrowAfter <= part.borrowed) return true; // within its reserve (or no new borrowing)
        if (!this.#borrowing || borrowAfter > part.maxBorrow) return false;
        return this.#borrowedSum - part.borrowed + borrowAfter <= this.#shared(total);
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
    };
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
