import type { Clock } from 'limits-core';
import type { LeasePoolOperation } from './errors.js';
import { type HeldLease, heldLease } from './HeldLease.js';
import type { Lease } from './Lease.js';
import type { ScriptCaller } from './ScriptCaller.js';
import { poolScripts } from './scripts.js';

/** @internal What maintenance reports to its pool. */
export interface MaintenanceHooks {
  /** A Redis call failed (the pool emits `redisFailure`). */
  failed(operation: LeasePoolOperation, error: unknown): void;
  /** A renewal found `lease` gone from Redis (the caller's `Lease`, if alive, is marked lost). */
  lost(lease: HeldLease): void;
  /** `lease` was garbage-collected before `release()`: its units are still held in Redis. */
  leaked(lease: HeldLease): void;
}

/**
 * @internal The leases this instance holds, and one timer, running only while there is something to
 * do: every `renewEveryMs` it renews every held lease (one script call for all of them) and retries
 * the releases that failed or came back late (orphans) until their TTL has surely freed them.
 *
 * It keeps {@link HeldLease} records, never the caller's {@link Lease}: a lease dropped without
 * `release()` is garbage-collected, found by a `FinalizationRegistry`, and handed to `leaked` (the
 * renewal would otherwise keep its units for as long as the process lives). Registering costs well
 * under a microsecond per lease, beside the Redis round trip that granted it.
 */
export class Maintenance {
  /** Leases held here, by member. */
  readonly held = new Map<string, HeldLease>();
  /** Members to release, with the time (pool clock) after which their TTL has freed them anyway. */
  readonly orphans = new Map<string, number>();
  readonly #calls: ScriptCaller;
  readonly #clock: Clock;
  readonly #everyMs: number;
  readonly #ttlMs: number;
  readonly #timeoutMs: number;
  readonly #hooks: MaintenanceHooks;
  readonly #collected = new FinalizationRegistry<HeldLease>((h) => this.reclaim(h));
  #timer: unknown;
  #running = false;
  #stopped = false;

  constructor(
    calls: ScriptCaller,
    clock: Clock,
    o: { renewEveryMs: number; leaseTtlMs: number; timeoutMs: number },
    hooks: MaintenanceHooks,
  ) {
    this.#calls = calls;
    this.#clock = clock;
    this.#everyMs = o.renewEveryMs;
    this.#ttlMs = o.leaseTtlMs;
    this.#timeoutMs = o.timeoutMs;
    this.#hooks = hooks;
  }

  /** Starts the timer if it is not running and there is work. */
  wake(): void {
    if (this.#timer !== undefined || this.#running || this.#stopped) return;
    if (this.held.size === 0 && this.orphans.size === 0) return;
    this.#timer = this.#clock.setTimeout(() => this.#run(), this.#everyMs);
  }

  /** Holds a lease Redis granted: renews it until it is forgotten, reclaims it if it is collected. */
  hold(lease: Lease): void {
    const h = heldLease(lease);
    this.held.set(h.member, h);
    this.#collected.register(lease, h, h);
    this.wake();
  }

  /** Forgets a held lease (its record, if it was held); the timer stops when nothing is left to do. */
  forget(member: string): HeldLease | undefined {
    const h = this.held.get(member);
    if (h === undefined) return undefined;
    this.held.delete(member);
    this.#collected.unregister(h);
    if (this.held.size === 0 && this.orphans.size === 0 && this.#timer !== undefined) {
      this.#clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    return h;
  }

  /**
   * The caller's leases still held here, for `close()` to release; a held lease already collected
   * (its finalizer not run yet) is reclaimed now.
   */
  leases(): Lease[] {
    const alive: Lease[] = [];
    for (const h of [...this.held.values()]) {
      const lease = h.lease.deref();
      if (lease === undefined) this.reclaim(h);
      else alive.push(lease);
    }
    return alive;
  }

  /**
   * A held lease whose caller's object is gone (collected, or found so by `close()`): forgets it and
   * hands it to `leaked`. Does nothing for a lease released, lost or reclaimed already.
   */
  reclaim(h: HeldLease): void {
    if (this.held.get(h.member) !== h) return;
    this.forget(h.member);
    this.#hooks.leaked(h);
  }

  /** Stops for good (close). */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Queues a release that failed, to retry until the lease's TTL has passed. */
  orphan(member: string): void {
    if (this.#stopped) return;
    this.orphans.set(member, this.#clock.now() + this.#ttlMs);
    this.wake();
  }

  /** Releases a member without a lease object; true when Redis answered. */
  release(member: string): Promise<boolean> {
    return this.#calls.call(poolScripts.release, [member], this.#timeoutMs).then(
      () => true,
      (error) => {
        this.#hooks.failed('release', error);
        return false;
      },
    );
  }

  async #run(): Promise<void> {
    this.#timer = undefined;
    this.#running = true;
    try {
      await this.#renew();
      const now = this.#clock.now();
      for (const [member, until] of this.orphans) {
        if (now >= until || (await this.release(member))) this.orphans.delete(member);
      }
    } finally {
      this.#running = false;
      this.wake();
    }
  }

  async #renew(): Promise<void> {
    const leases = [...this.held.values()];
    if (leases.length === 0) return;
    try {
      const args = [this.#ttlMs, ...leases.map((l) => l.member)];
      const flags = (await this.#calls.call(poolScripts.renew, args, this.#timeoutMs)) as number[];
      leases.forEach((h, i) => {
        if (Number(flags[i]) === 1 || this.forget(h.member) === undefined) return;
        h.lease.deref()?._lose();
        this.#hooks.lost(h);
      });
    } catch (error) {
      this.#hooks.failed('renew', error);
    }
  }
}
