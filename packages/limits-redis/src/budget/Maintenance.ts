import type { Clock } from 'limits-core';
import type { BudgetOperation } from './errors.js';
import type { Lease } from './Lease.js';
import type { ScriptCaller } from './ScriptCaller.js';
import { budgetScripts } from './scripts.js';

/** @internal What maintenance reports to its budget. */
export interface MaintenanceHooks {
  /** A Redis call failed (the budget emits `redisFailure`). */
  failed(operation: BudgetOperation, error: unknown): void;
  /** A renewal found `lease` gone from Redis. */
  lost(lease: Lease): void;
}

/**
 * @internal The leases this instance holds, and one timer, running only while there is something to
 * do: every `renewEveryMs` it renews every held lease (one script call for all of them) and retries
 * the releases that failed or came back late (orphans) until their TTL has surely freed them.
 */
export class Maintenance {
  /** Leases held here, by member. */
  readonly held = new Map<string, Lease>();
  /** Members to release, with the time (budget clock) after which their TTL has freed them anyway. */
  readonly orphans = new Map<string, number>();
  readonly #calls: ScriptCaller;
  readonly #clock: Clock;
  readonly #everyMs: number;
  readonly #ttlMs: number;
  readonly #timeoutMs: number;
  readonly #hooks: MaintenanceHooks;
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

  /** Forgets a held lease; the timer stops when nothing is left to do. */
  forget(member: string): boolean {
    const had = this.held.delete(member);
    if (this.held.size === 0 && this.orphans.size === 0 && this.#timer !== undefined) {
      this.#clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    return had;
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
    return this.#calls.call(budgetScripts.release, [member], this.#timeoutMs).then(
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
    const now = this.#clock.now();
    try {
      const args = [this.#ttlMs, ...leases.map((l) => l.member)];
      const flags = (await this.#calls.call(
        budgetScripts.renew,
        args,
        this.#timeoutMs,
      )) as number[];
      leases.forEach((lease, i) => {
        if (Number(flags[i]) === 1) lease.renewedAt = now;
        else if (this.held.delete(lease.member)) this.#hooks.lost(lease);
      });
    } catch (error) {
      this.#hooks.failed('renew', error);
    }
  }
}
