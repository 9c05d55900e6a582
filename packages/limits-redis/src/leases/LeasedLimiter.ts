import type { AcquireOptions, Limiter, Permit } from 'limits-core';
import { formatValue } from 'limits-core/internal';
import type { Lease } from './Lease.js';
import type { LeaseAcquireOptions } from './options.js';

/** What {@link LeasedLimiter} needs of a fleet pool (a {@link RedisLeasePool}). */
export interface LeaseSource {
  acquire(options?: LeaseAcquireOptions): Promise<Lease>;
  /** The default wait for a lease, in ms. */
  readonly maxWaitMs: number;
}

/**
 * A local permit and a fleet lease, completed together: the outcome goes to the local permit (its
 * algorithm learns from it) and the lease goes back to the fleet (one Redis round trip, in the
 * background). The first call wins; later calls do nothing. One garbage-collected without an outcome
 * is reclaimed: the limiter gives back the permit (its `trackLeaks`, `leak` event), the pool the
 * lease (its `leak` event).
 */
export class LeasedPermit {
  /** The local limiter's permit. */
  readonly permit: Permit;
  /** The fleet lease (`lease.backed` is false when `onFailure: 'open'` let the call through without Redis). */
  readonly lease: Lease;

  /** @internal Made by {@link LeasedLimiter.acquire}. */
  constructor(permit: Permit, lease: Lease) {
    this.permit = permit;
    this.lease = lease;
  }

  /** True once an outcome was reported. */
  get released(): boolean {
    return this.permit.released;
  }

  /** The call succeeded: a latency sample for the local algorithm. */
  success(): void {
    if (this.#end()) this.permit.success();
  }

  /** The call ended in a congestion signal: the local algorithm backs off. */
  dropped(): void {
    if (this.#end()) this.permit.dropped();
  }

  /** The call failed in a way that says nothing about load. */
  failure(): void {
    if (this.#end()) this.permit.failure();
  }

  /** The call says nothing about load (or never started). */
  ignore(): void {
    if (this.#end()) this.permit.ignore();
  }

  /** Ends with `ignore` if nothing else did (for `using`). */
  [Symbol.dispose](): void {
    this.ignore();
  }

  #end(): boolean {
    if (this.permit.released) return false;
    void this.lease.release();
    return true;
  }
}

/**
 * A {@link Limiter} behind a {@link RedisLeasePool}: every call needs a local permit (the
 * adaptive, per-process limit) and a fleet lease. The local permit comes first, so a process never
 * has more lease requests in flight than its local limit, and a full local limiter costs no Redis
 * call. Per call: one Redis round trip to acquire the lease and one to release it.
 * Make one with {@link RedisLeasePool.wrap}.
 */
export class LeasedLimiter {
  /** The local limiter. */
  readonly limiter: Limiter;
  /** The fleet pool (a {@link RedisLeasePool}). */
  readonly pool: LeaseSource;
  readonly #now: () => number;

  /** @internal Use {@link RedisLeasePool.wrap}. */
  constructor(pool: LeaseSource, limiter: Limiter, now: () => number) {
    if (
      limiter === null ||
      typeof limiter !== 'object' ||
      typeof limiter.acquire !== 'function' ||
      typeof limiter.run !== 'function'
    ) {
      throw new TypeError(`limits: wrap(limiter) needs a Limiter, got ${formatValue(limiter)}`);
    }
    this.pool = pool;
    this.limiter = limiter;
    this.#now = now;
  }

  /**
   * Takes a local permit (with all of the limiter's acquire options), then a lease of the same cost
   * (rounded up), waiting for it no longer than what is left of `timeoutMs` / `deadline` (deadline
   * on the pool's clock, which should be the limiter's) nor the pool's `maxWaitMs`. A lease that
   * is refused returns the local permit at once (`ignore`).
   * @throws what `limiter.acquire` throws, then what `pool.acquire` throws.
   */
  async acquire(options?: AcquireOptions): Promise<LeasedPermit> {
    const start = this.#now();
    const permit = await this.limiter.acquire(options);
    let lease: Lease;
    try {
      lease = await this.pool.acquire(this.#leaseOptions(options, start));
    } catch (error) {
      permit.ignore();
      throw error;
    }
    return new LeasedPermit(permit, lease);
  }

  /**
   * Runs `task` under both: `limiter.run` (its timing, classification, queue and `timeoutMs`), and
   * inside it a lease taken with the task's signal (so its `timeoutMs` and the caller's signal also
   * bound the wait for the lease), released when the task settles. A refused lease rejects the call
   * (the local permit is released as the limiter's `classify` says: `failure` by default, which
   * feeds no sample to the algorithm).
   * @throws what `limiter.run` throws, then what `pool.acquire` throws, then what the task threw.
   */
  run<T>(task: (signal: AbortSignal) => T | PromiseLike<T>, options?: AcquireOptions): Promise<T> {
    const cost = options?.cost;
    return this.limiter.run(async (signal: AbortSignal) => {
      const lease = await this.pool.acquire(
        cost === undefined ? { signal } : { signal, cost: Math.ceil(cost) },
      );
      try {
        return await task(signal);
      } finally {
        void lease.release();
      }
    }, options);
  }

  #leaseOptions(options: AcquireOptions | undefined, start: number): LeaseAcquireOptions {
    if (options === undefined) return {};
    const lease: LeaseAcquireOptions = {};
    if (options.signal !== undefined) lease.signal = options.signal;
    if (options.cost !== undefined) lease.cost = Math.ceil(options.cost);
    let left = Infinity;
    if (options.timeoutMs !== undefined) left = options.timeoutMs - (this.#now() - start);
    if (options.deadline !== undefined) left = Math.min(left, options.deadline - this.#now());
    if (left !== Infinity) lease.maxWaitMs = Math.max(0, Math.min(left, this.pool.maxWaitMs));
    return lease;
  }
}
