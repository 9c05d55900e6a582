import { checkFunction, checkNumber, checkObject, formatValue } from '../internal/validate.js';
import { GroupList, joinGroup, leaveGroup } from '../queue/GroupList.js';
import type { Selector } from '../queue/Selector.js';
import type { SelectorEntry, Waiter } from '../queue/Waiter.js';

/** Options of tenant fairness (deficit round robin), {@link LimiterOptions.fairness}. */
export interface FairnessOptions {
  /**
   * Credit a tenant earns per round, in the same unit as the charge (the request's `cost`, or the
   * estimator's estimate), finite and > 0: a number for all tenants, or a function of the tenant
   * key for weights (a tenant with twice the quantum gets twice the served cost under contention).
   * The function is called when a tenant's first waiter queues; a result that is not a finite
   * number > 0 refuses that request with a TypeError/RangeError naming the tenant, and leaves the
   * fair queue as it was.
   * @default 1
   */
  quantum?: number | ((tenant: string) => number);
  /**
   * Cap on a tenant's unspent credit, so a tenant that waited long cannot burst through many requests
   * at once. When the largest charge is known (the algorithm's `maxLimit`, or the estimator's
   * ceiling) it must be at least that. A request whose charge still exceeds it (a custom algorithm
   * without `maxLimit`) is served once its tenant's credit reaches `maxCredit`; the excess is
   * carried as a debt the tenant works off in later rounds, so it still gets only its share.
   * @default the largest admissible charge (the limiter's largest cost, or the estimator's ceiling)
   */
  maxCredit?: number;
  /** Largest number of queued waiters per tenant (reason `queue_full` beyond it). @default Infinity */
  maxQueuedPerTenant?: number;
}

/** @internal Per-tenant state; exists only while the tenant has queued waiters. */
interface Tenant {
  key: string;
  list: GroupList;
  deficit: number;
  quantum: number;
  /** Credit for the current turn was already added. */
  inTurn: boolean;
  prev: Tenant | undefined;
  next: Tenant | undefined;
}

/**
 * @internal Deficit round robin over per-tenant FIFO queues (Shreedhar & Varghese), charging each
 * request its estimated cost. On its turn a tenant earns `quantum` (capped at `maxCredit`) and is
 * served while its head's charge fits its credit; the credit is reset when its queue empties, and the
 * tenant's entry is deleted then, so the table holds only tenants with waiters (at most `maxQueued`).
 *
 * Progress: a head needs `min(charge, maxCredit)` credit (a charge above the cap would otherwise
 * never fit); serving it subtracts the full charge, so the credit may go negative (a debt worked
 * off in later rounds, forgiven with the rest of the credit when the tenant's queue empties). With
 * every quantum finite and > 0 (checked), one `peek()` always returns a waiter when any is queued.
 */
export class DeficitRoundRobin implements Selector {
  readonly #quantum: (tenant: string) => number;
  readonly #maxCredit: number;
  readonly #maxPerTenant: number;
  readonly #tenants = new Map<string, Tenant>();
  /** The tenant whose turn it is (the ring is circular through next/prev). */
  #current: Tenant | undefined = undefined;

  /**
   * @param largestCharge - the largest charge a request can have (validates `maxCredit`).
   * @throws RangeError/TypeError naming the option, the allowed range and the value given.
   */
  constructor(options: FairnessOptions, largestCharge: number) {
    checkObject('fairness', options);
    const q = options.quantum;
    if (typeof q === 'function') {
      const fn = checkFunction<(t: string) => number>('fairness.quantum', q) as (
        t: string,
      ) => number;
      this.#quantum = (t) => checkQuantum(t, fn(t));
    } else {
      const n = checkNumber('fairness.quantum', q, 1, { min: 0, minExclusive: true });
      this.#quantum = () => n;
    }
    const fallback = Number.isFinite(largestCharge) ? largestCharge : Number.MAX_SAFE_INTEGER;
    this.#maxCredit = checkNumber('fairness.maxCredit', options.maxCredit, fallback, {
      min: Number.isFinite(largestCharge) ? largestCharge : 0,
      minExclusive: !Number.isFinite(largestCharge),
    });
    this.#maxPerTenant = checkNumber(
      'fairness.maxQueuedPerTenant',
      options.maxQueuedPerTenant,
      Infinity,
      {
        min: 1,
        integer: true,
        allowInfinity: true,
      },
    );
  }

  /** Tenants currently holding waiters (the size of the tenant table). */
  get tenants(): number {
    return this.#tenants.size;
  }

  refuse(tenant: string | undefined): string | undefined {
    const t = this.#tenants.get(tenant ?? '');
    return t !== undefined && t.list.size >= this.#maxPerTenant ? 'tenant' : undefined;
  }

  /** @throws TypeError/RangeError when the quantum function gives a new tenant a bad quantum (nothing changes then). */
  add(w: Waiter): void {
    const e = w.sel as SelectorEntry;
    const key = e.tenant ?? '';
    let t = this.#tenants.get(key);
    if (t === undefined) {
      // The user's quantum function runs (and may throw) before anything here changes.
      const quantum = this.#quantum(key);
      t = {
        key,
        list: new GroupList(),
        deficit: 0,
        quantum,
        inTurn: false,
        prev: undefined,
        next: undefined,
      };
      this.#tenants.set(key, t);
      this.#link(t);
    }
    joinGroup(e, t);
  }

  delete(w: Waiter): void {
    const emptied = leaveGroup<Tenant>(w);
    if (emptied !== undefined) this.#drop(emptied);
  }

  served(w: Waiter): void {
    const e = w.sel as SelectorEntry;
    (e.group as Tenant).deficit -= e.charge;
    this.delete(w);
  }

  peek(): Waiter | undefined {
    let t = this.#current;
    if (t === undefined) return undefined;
    // Visit tenants in turn; after a full round in which nobody could be served, jump ahead by the
    // rounds the closest tenant still needs instead of looping round by round.
    let visited = 0;
    for (;;) {
      if (!t.inTurn) {
        t.deficit = Math.min(this.#maxCredit, t.deficit + t.quantum);
        t.inTurn = true;
      }
      const head = t.list.head as SelectorEntry;
      if (Math.min(head.charge, this.#maxCredit) <= t.deficit) {
        this.#current = t;
        return head.waiter;
      }
      t.inTurn = false;
      t = t.next as Tenant;
      if (++visited >= this.#tenants.size) {
        this.#skipRounds();
        visited = 0;
      }
    }
  }

  /**
   * Gives every tenant the credit of the rounds the closest one still needs (capped), as this turn's
   * credit (`inTurn`): the next visit of that tenant serves it, whatever rounding did to the sum.
   */
  #skipRounds(): void {
    let rounds = Infinity;
    let closest: Tenant | undefined;
    for (const t of this.#tenants.values()) {
      const need = Math.min((t.list.head as SelectorEntry).charge, this.#maxCredit) - t.deficit;
      const r = Math.max(1, Math.ceil(need / t.quantum));
      if (r < rounds) {
        rounds = r;
        closest = t;
      }
    }
    for (const t of this.#tenants.values()) {
      t.deficit = Math.min(this.#maxCredit, t.deficit + rounds * t.quantum);
      t.inTurn = true;
    }
    // Floating-point sums may fall a hair short: the closest tenant has what it needs by definition.
    const c = closest as Tenant;
    c.deficit = Math.max(
      c.deficit,
      Math.min((c.list.head as SelectorEntry).charge, this.#maxCredit),
    );
  }

  #link(t: Tenant): void {
    const cur = this.#current;
    if (cur === undefined) {
      t.next = t;
      t.prev = t;
      this.#current = t;
      return;
    }
    // A new tenant joins at the end of the round (just before the current one).
    const last = cur.prev as Tenant;
    last.next = t;
    t.prev = last;
    t.next = cur;
    cur.prev = t;
  }

  #drop(t: Tenant): void {
    this.#tenants.delete(t.key);
    if (t.next === t) {
      this.#current = undefined;
    } else {
      (t.prev as Tenant).next = t.next;
      (t.next as Tenant).prev = t.prev;
      if (this.#current === t) this.#current = t.next;
    }
    t.next = undefined;
    t.prev = undefined;
  }
}

/** A tenant's quantum from the user's function: a finite number > 0. @throws TypeError/RangeError naming the tenant. */
function checkQuantum(tenant: string, value: unknown): number {
  const name = `fairness.quantum(${formatValue(tenant)})`;
  if (value === undefined) {
    throw new TypeError(
      `limits: option "${name}" must be a number in (0, Infinity), got undefined`,
    );
  }
  return checkNumber(name, value, 1, { min: 0, minExclusive: true });
}
