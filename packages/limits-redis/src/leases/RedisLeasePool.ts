import { randomBytes } from 'node:crypto';
import type { Clock, LimitExceededError, Limiter, RejectReason } from 'limits-core';
import { type LeasePoolOperation, RedisTimeoutError, RedisUnavailableError } from './errors.js';
import type { HeldLease } from './HeldLease.js';
import { poolKeys } from './keys.js';
import { Lease, type LeaseOwner } from './Lease.js';
import { LeasedLimiter } from './LeasedLimiter.js';
import { LeasePoolEmitter } from './LeasePoolEmitter.js';
import { warnLeakedLease } from './leakWarning.js';
import { Maintenance } from './Maintenance.js';
import {
  type FailurePolicy,
  type LeaseAcquireOptions,
  type RedisLeasePoolOptions,
  type ResolvedAcquire,
  type ResolvedLeasePoolOptions,
  resolveAcquire,
  resolveLeasePoolOptions,
} from './options.js';
import type { RedisClient } from './RedisClient.js';
import { refusal } from './refusal.js';
import { ScriptCaller } from './ScriptCaller.js';
import { poolScripts } from './scripts.js';
import { newWaiter, type Waiter } from './Waiter.js';
import { WaitList } from './WaitList.js';

/** Units in use and leases held across the fleet, from {@link RedisLeasePool.status}. */
export interface LeasePoolStatus {
  used: number;
  leases: number;
  limit: number;
}

/**
 * A cap on in-flight work shared by every instance through Redis: `limit` units across the fleet,
 * held as leases in one sorted set scored by expiry (Redis time). Acquire and release are one Lua
 * script each (one round trip); every script first reclaims expired leases, so a crashed holder's
 * leases free themselves after `leaseTtlMs`; live holders renew theirs automatically. Callers that
 * wait are woken by a pub/sub message on each release (a second connection), with a bounded
 * fallback poll. When Redis fails or is slower than `timeoutMs`, `onFailure` decides, an event
 * reports it, and no call waits past its bounds. Compose it with a local {@link Limiter} with
 * {@link RedisLeasePool.wrap}.
 *
 * @example
 * ```ts
 * const pool = new RedisLeasePool(redis, { name: 'orders-db', limit: 40, onFailure: 'open' });
 * const db = pool.wrap(new Limiter({ algorithm: new VegasLimit({ maxLimit: 20 }) }));
 * const rows = await db.run(() => pool.query(sql), { timeoutMs: 500 });
 * ```
 */
export class RedisLeasePool extends LeasePoolEmitter implements LeaseOwner {
  /** The pool's name (shared by the fleet). */
  readonly name: string;
  /** Units that may be in flight across the fleet. */
  readonly limit: number;
  /** What happens when Redis fails: `'open'` or `'closed'`. */
  readonly onFailure: FailurePolicy;
  readonly #o: ResolvedLeasePoolOptions;
  readonly #clock: Clock;
  readonly #calls: ScriptCaller;
  readonly #instance = randomBytes(6).toString('hex');
  #seq = 0;
  readonly #maintenance: Maintenance;
  readonly #waiters: WaitList;
  /** Acquires not yet answered: on their first attempt or waiting (close() refuses them all). */
  readonly #open = new Set<Waiter>();
  readonly #pending = new Set<Promise<unknown>>();
  #closed = false;

  /**
   * @param redis - an ioredis 5 or 6 `Redis` or `Cluster` (or any {@link RedisClient}), owned by the
   *   caller: the pool never closes it. The pool opens one more connection with
   *   `redis.duplicate()` the first time a caller waits (pub/sub), and closes it in `close()`.
   * @param options - see {@link RedisLeasePoolOptions}; `name`, `limit` and `onFailure` are
   *   required.
   * @throws TypeError/RangeError naming the option, before anything is built.
   */
  constructor(redis: RedisClient, options: RedisLeasePoolOptions) {
    super();
    const o = resolveLeasePoolOptions(redis, options);
    this.#o = o;
    this.#clock = o.clock;
    this.name = o.name;
    this.limit = o.limit;
    this.onFailure = o.onFailure;
    const k = poolKeys(o.prefix, o.name);
    const onRecovered = (downMs: number) => {
      if (this.listenerCount('redisRecovered') > 0) this.emitSafely('redisRecovered', { downMs });
    };
    const keys = [k.leases, k.used];
    this.#calls = new ScriptCaller(redis, keys, k.channel, o.clock, o.timeoutMs, onRecovered);
    const attempt = (w: Waiter) => this.#attempt(w);
    this.#waiters = new WaitList(redis, k.channel, this.#instance, o.clock, o.pollMs, attempt);
    this.#maintenance = new Maintenance(this.#calls, o.clock, o, {
      failed: (operation, error) => this.#failed(operation, error),
      lost: (held) => this.#report('leaseLost', held),
      leaked: (held) => this.#leaked(held),
    });
  }

  /** Leases this instance holds now. */
  get held(): number {
    return this.#maintenance.held.size;
  }

  /** The default wait of an acquire when the pool is full, in ms. */
  get maxWaitMs(): number {
    return this.#o.maxWaitMs;
  }

  /** Acquires waiting for a release now. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /**
   * Takes a lease of `cost` units (one Redis round trip). When the pool is full, waits up to
   * `maxWaitMs` for a release (woken by pub/sub), leaving at once on `signal`. Callers of one
   * instance are served in arrival order: a call that may wait queues behind this instance's
   * waiters without a Redis call.
   * @returns the lease; release it when the work really ends.
   * @throws (as a rejected promise) LimitExceededError with reason `at_limit` (full, no wait), `expired`
   *   (full for the whole wait), `aborted`, `too_large` (cost > limit) or `closed`;
   *   {@link RedisUnavailableError} when Redis fails and `onFailure` is `'closed'`; TypeError/
   *   RangeError for bad options, before anything changes.
   */
  acquire(options?: LeaseAcquireOptions): Promise<Lease> {
    let o: ResolvedAcquire;
    try {
      o = resolveAcquire(options, this.#o);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#closed) return Promise.reject(this.#refusal('closed', o.cost, Number.NaN));
    if (o.signal?.aborted) {
      return Promise.reject(this.#refusal('aborted', o.cost, Number.NaN, o.signal.reason));
    }
    if (o.cost > this.limit) return Promise.reject(this.#refusal('too_large', o.cost, Number.NaN));
    return new Promise<Lease>((resolve, reject) => {
      const w = newWaiter(o, this.#clock.now(), resolve, reject);
      if (o.maxWaitMs > 0 && o.maxWaitMs !== Infinity) {
        w.timer = this.#clock.setTimeout(() => this.#expire(w), o.maxWaitMs);
      }
      this.#open.add(w);
      if (o.signal !== undefined) {
        const signal = o.signal;
        w.onAbort = () => this.#settle(w, this.#refusal('aborted', o.cost, w.used, signal.reason));
        signal.addEventListener('abort', w.onAbort, { once: true });
      }
      // Waiters here were refused already: queue behind them (FIFO here, no Redis call) unless
      // this call cannot wait.
      if (o.maxWaitMs > 0 && this.#waiters.size > 0) this.#waiters.add(w);
      else this.#attempt(w);
    });
  }

  /**
   * Runs `task` under a lease: acquires, calls `task(signal)` (the lease's signal, aborted if the
   * lease is lost) and releases when the task's promise settles.
   * @throws what {@link RedisLeasePool.acquire} throws, or what the task threw.
   */
  async run<T>(
    task: (signal: AbortSignal) => T | PromiseLike<T>,
    options?: LeaseAcquireOptions,
  ): Promise<T> {
    const lease = await this.acquire(options);
    try {
      return await task(lease.signal);
    } finally {
      void lease.release();
    }
  }

  /**
   * Puts this pool behind a local limiter: each call takes a local permit first, then a lease, so
   * a process never has more lease requests in flight than its local limit. Costs one Redis round
   * trip per acquire and one per release.
   */
  wrap(limiter: Limiter): LeasedLimiter {
    return new LeasedLimiter(this, limiter, () => this.#clock.now());
  }

  /**
   * Units in use and leases held across the fleet (reclaiming expired ones first).
   * @throws RedisUnavailableError when Redis fails (whatever the policy).
   */
  async status(): Promise<LeasePoolStatus> {
    try {
      const r = (await this.#calls.call(poolScripts.status, [], this.#o.timeoutMs)) as number[];
      return { used: Number(r[0]), leases: Number(r[1]), limit: this.limit };
    } catch (error) {
      throw this.#failed('status', error);
    }
  }

  /**
   * Stops admitting (new acquires reject with reason `closed`), rejects waiters with reason
   * `closed`, releases the leases still held here, stops every timer and closes the subscriber
   * connection. The caller's `redis` client is left open. Call it after local work has drained.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of [...this.#open]) this.#settle(w, this.#refusal('closed', w.o.cost, w.used));
    this.#maintenance.stop();
    for (const lease of this.#maintenance.leases()) void lease.release();
    for (const member of this.#maintenance.orphans.keys())
      this.#track(this.#maintenance.release(member));
    this.#maintenance.orphans.clear();
    this.#waiters.close();
    // Attempts still in flight, and the releases of grants they bring back.
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }

  /** @internal */
  _releaseLease(lease: Lease): Promise<boolean> {
    const held = this.#maintenance.forget(lease.member);
    if (!lease.backed || held === undefined) {
      this.#emitRelease(lease, this.#clock.now() - lease.acquiredAt, false);
      return Promise.resolve(false);
    }
    return this.#giveBack(held);
  }

  /** Releases a lease this instance held, in Redis (one round trip), and wakes the waiters here. */
  #giveBack(lease: HeldLease): Promise<boolean> {
    const heldMs = this.#clock.now() - lease.acquiredAt;
    const args = [lease.member, this.#instance];
    const done = this.#calls.call(poolScripts.release, args, this.#o.timeoutMs).then(
      (r) => {
        const removed = Number((r as number[])[0]) === 1;
        // Waiters here are woken by the reply, not by the message: the message names this instance,
        // which ignores it (one attempt per freed unit, not two). Not before the reply either: an
        // attempt could overtake a release sent again after NOSCRIPT, and find the pool full.
        this.#waiters.wake(lease.cost);
        this.#emitRelease(lease, heldMs, removed);
        return removed;
      },
      (error) => {
        this.#failed('release', error);
        this.#maintenance.orphan(lease.member);
        this.#emitRelease(lease, heldMs, false);
        return false;
      },
    );
    return this.#track(done);
  }

  // ---- acquiring -----------------------------------------------------------------------------

  #attempt(w: Waiter): void {
    w.attempting = true;
    w.recheck = false;
    const member = `${this.#instance}:${++this.#seq}#${w.o.cost}`;
    const args = [member, w.o.cost, this.limit, this.#o.leaseTtlMs];
    const onLate = (r: unknown) => this.#releaseLate(r, member);
    const call = this.#calls.call(poolScripts.acquire, args, w.o.timeoutMs, onLate).then(
      (r) => {
        w.attempting = false;
        const [granted, used] = r as [number, number];
        if (w.settled) {
          if (Number(granted) === 1) this.#releaseLate(r, member);
          return;
        }
        w.used = Number(used);
        if (Number(granted) === 1) return this.#grant(w, member, true);
        this.#refused(w);
      },
      (error) => {
        w.attempting = false;
        if (w.settled) return;
        const failure = this.#failed('acquire', error);
        this.#failOver(w, member, failure);
        // Redis is unreachable: the waiters here get the same answer now, not one per poll.
        for (const other of [...this.#open]) {
          if (other.queued && !other.attempting) this.#failOver(other, undefined, failure);
        }
      },
    );
    this.#track(call);
  }

  /** Applies `onFailure` to a waiter: an unbacked lease, or the error. */
  #failOver(w: Waiter, member: string | undefined, failure: RedisUnavailableError): void {
    if (this.onFailure === 'closed') this.#settle(w, failure);
    else this.#grant(w, member ?? `${this.#instance}:${++this.#seq}#${w.o.cost}`, false);
  }

  #refused(w: Waiter): void {
    const waited = this.#clock.now() - w.start;
    if (w.o.maxWaitMs === 0 || waited >= w.o.maxWaitMs) {
      this.#settle(
        w,
        this.#refusal(w.o.maxWaitMs === 0 ? 'at_limit' : 'expired', w.o.cost, w.used),
      );
      return;
    }
    this.#waiters.add(w);
    if (w.recheck) this.#attempt(w);
  }

  #grant(w: Waiter, member: string, backed: boolean): void {
    const id = member.slice(0, member.lastIndexOf('#'));
    const now = this.#clock.now();
    const lease = new Lease(this, id, w.o.cost, backed, now);
    if (backed) this.#maintenance.hold(lease);
    if (this.listenerCount('acquire') > 0) {
      this.emitSafely('acquire', {
        id,
        cost: w.o.cost,
        backed,
        used: backed ? w.used : Number.NaN,
        limit: this.limit,
        waitedMs: now - w.start,
      });
    }
    this.#settle(w, undefined, lease);
    // Units are still free (two releases woke one waiter): the next waiters try now.
    if (backed && w.used < this.limit) this.#waiters.wake(this.limit - w.used);
  }

  #expire(w: Waiter): void {
    w.timer = undefined;
    this.#settle(w, this.#refusal('expired', w.o.cost, w.used));
  }

  /** Ends a waiter once: with a lease, or with an error. */
  #settle(w: Waiter, error: unknown, lease?: Lease): void {
    if (w.settled) return;
    w.settled = true;
    this.#open.delete(w);
    if (w.timer !== undefined) this.#clock.clearTimeout(w.timer);
    w.timer = undefined;
    if (w.onAbort !== undefined) w.o.signal?.removeEventListener('abort', w.onAbort);
    w.onAbort = undefined;
    this.#waiters.remove(w);
    if (lease !== undefined) w.resolve(lease);
    else w.reject(error);
  }

  #refusal(reason: RejectReason, cost: number, used: number, cause?: unknown): LimitExceededError {
    if (this.listenerCount('reject') > 0) {
      this.emitSafely('reject', { reason, cost, used, limit: this.limit });
    }
    return refusal(this.name, this.limit, reason, cost, used, cause);
  }

  // ---- renewal, orphans, Redis calls ---------------------------------------------------------

  /** A lease was garbage-collected before `release()`: reports it and gives its units back. */
  #leaked(held: HeldLease): void {
    warnLeakedLease(this);
    this.#report('leak', held);
    void this.#giveBack(held);
  }

  /** Emits `leaseLost` (a renewal found the lease gone) or `leak` (it was collected unreleased). */
  #report(event: 'leaseLost' | 'leak', held: HeldLease): void {
    if (this.listenerCount(event) > 0) {
      const heldMs = this.#clock.now() - held.acquiredAt;
      this.emitSafely(event, { id: held.id, cost: held.cost, heldMs });
    }
  }

  /** An acquire that was given up on (timeout, abort) was granted after all: give it back. */
  #releaseLate(r: unknown, member: string): void {
    if (Number((r as number[])[0]) !== 1) return;
    const m = this.#maintenance;
    this.#track(m.release(member).then((ok) => ok || m.orphan(member)));
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#pending.add(p);
    const done = () => this.#pending.delete(p);
    p.then(done, done);
    return p;
  }

  /** Records a failure (event each time) and returns the error an `onFailure: 'closed'` call rejects with. */
  #failed(operation: LeasePoolOperation, error: unknown): RedisUnavailableError {
    this.#calls.failed(error);
    const timedOut = error instanceof RedisTimeoutError;
    if (this.listenerCount('redisFailure') > 0) {
      this.emitSafely('redisFailure', { operation, policy: this.onFailure, timedOut, error });
    }
    const why = error instanceof Error ? error.message : String(error);
    return new RedisUnavailableError(
      `limits: pool "${this.name}": Redis ${operation} failed (${why})`,
      operation,
      timedOut,
      error,
    );
  }

  #emitRelease(lease: { id: string; cost: number }, heldMs: number, held: boolean): void {
    if (this.listenerCount('release') > 0) {
      this.emitSafely('release', { id: lease.id, cost: lease.cost, heldMs, held });
    }
  }
}
