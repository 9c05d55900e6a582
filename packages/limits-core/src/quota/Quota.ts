import { EventEmitter } from 'eventemitter3';
import {
  checkFunction,
  checkKeys,
  checkNumber,
  checkObject,
  checkString,
  formatValue,
} from '../internal/validate.js';
import { MemoryQuotaStore } from './MemoryQuotaStore.js';
import type { QuotaStore, QuotaStoreAxis, QuotaStoreVerdict } from './QuotaStore.js';

/** One axis of a {@link Quota}: a counter per key, a limit per window, and what refusal means. */
export interface QuotaAxis<Ctx> {
  /** Name of the axis (e.g. `"account"`, `"global"`), unique within the quota; reported on refusal. */
  name: string;
  /** The counter this call charges on this axis (e.g. `ctx => ctx.userId`, or `() => 'all'`). Any string. */
  key: (ctx: Ctx) => string;
  /** Most units per window on one key (an integer ≥ 0; 0 refuses everything). */
  limit: number;
  /** The HTTP status a refusal on this axis means (429: the caller's own share; 503: the service is full). @default 429 */
  status?: number;
  /** Fraction of `limit` at which an `alert` fires, once per key per window, in (0, 1]. @default 0.66 */
  alertAt?: number;
}

/** Options of a {@link Quota}. */
export interface QuotaOptions<Ctx> {
  /** Length of a fixed window in milliseconds (e.g. 3,600,000 for hourly); counters restart at each window. */
  windowMs: number;
  /** The axes, in judgement order: the first axis that is full decides the answer. At least one. */
  axes: readonly QuotaAxis<Ctx>[];
  /** Where counters live. @default a new {@link MemoryQuotaStore} (this process only) */
  store?: QuotaStore;
  /** Name of the quota, its counters' namespace in a shared store. @default "quota" */
  name?: string;
  /** Status answered when the store fails closed (e.g. Redis down with `onFailure: 'closed'`). @default 503 */
  unavailableStatus?: number;
}

/** The answer of {@link Quota.consume}. */
export type QuotaResult =
  | { readonly ok: true }
  | {
      readonly ok: false;
      /** The first full axis' name, or `null` when the store failed closed. */
      readonly axis: string | null;
      /** That axis' `status` (or `unavailableStatus` after a store failure). */
      readonly status: number;
      /** Milliseconds until the window ends (for `Retry-After`). */
      readonly retryAfterMs: number;
    };

/** Payload of a quota's `alert` event. */
export interface QuotaAlertEvent {
  readonly quota: string;
  readonly axis: string;
  readonly key: string;
  /** The count after the charge that crossed `alertAt × limit`. */
  readonly count: number;
  readonly limit: number;
  readonly alertAt: number;
  /** Milliseconds until the window ends. */
  readonly resetInMs: number;
}

/** Payload of a quota's `refuse` event. */
export interface QuotaRefuseEvent {
  readonly quota: string;
  /** The full axis, or `null` when the store failed closed. */
  readonly axis: string | null;
  readonly key: string | null;
  readonly status: number;
  readonly retryAfterMs: number;
}

/** Payload of a quota's `failure` event: the store could not judge and answered by its policy. */
export interface QuotaFailureEvent {
  readonly quota: string;
  /** `'open'`: the call passed uncharged; `'closed'`: it was refused. */
  readonly policy: 'open' | 'closed';
  readonly error: Error;
}

/** Events of a {@link Quota} (eventemitter3). */
export interface QuotaEvents {
  /** A charge crossed an axis' `alertAt` (once per axis and key per window, fleet-wide with a shared store). */
  alert: (event: QuotaAlertEvent) => void;
  /** A call was refused. */
  refuse: (event: QuotaRefuseEvent) => void;
  /** The store could not judge (every time). */
  failure: (event: QuotaFailureEvent) => void;
  /** A listener threw. */
  error: (error: unknown) => void;
}

interface Axis<Ctx> {
  name: string;
  key: (ctx: Ctx) => string;
  limit: number;
  status: number;
  alertAt: number;
  /** The smallest count at or above `alertAt × limit` (0.7 × 10 is 7.000000000000001 in binary: the alert belongs at 7). */
  alertCount: number;
}

const OK: QuotaResult = Object.freeze({ ok: true });
const statusRange = { min: 100, max: 599, integer: true };

/**
 * A multi-axis quota over fixed windows (seed 002): every `consume` judges and charges all axes
 * **atomically or none**, so a call refused by the global axis never costs the caller its own share
 * (a retry after `Retry-After` does not self-harm), and the first full axis in order decides the
 * answer (account → 429 before global → 503). An `alert` fires once per axis and key per window
 * when a charge crosses `alertAt × limit`.
 *
 * @example
 * const quota = new Quota<{ userId: string }>({
 *   windowMs: 3_600_000,
 *   axes: [
 *     { name: 'account', key: (c) => c.userId, limit: 30, status: 429 },
 *     { name: 'global', key: () => 'all', limit: 3_000, status: 503 },
 *   ],
 * });
 * const r = await quota.consume({ userId }, images);
 * if (!r.ok) reply(r.status, { 'retry-after': Math.ceil(r.retryAfterMs / 1000) });
 */
export class Quota<Ctx = unknown> extends EventEmitter<QuotaEvents> {
  /** The quota's name (its namespace in the store). */
  readonly name: string;
  /** Window length in milliseconds. */
  readonly windowMs: number;
  readonly #axes: Axis<Ctx>[];
  readonly #store: QuotaStore;
  readonly #unavailableStatus: number;

  /**
   * @param options - see {@link QuotaOptions}.
   * @throws TypeError/RangeError for a bad option (nothing is created).
   */
  constructor(options: QuotaOptions<Ctx>) {
    super();
    checkObject('Quota options', options);
    checkKeys('Quota', options, ['windowMs', 'axes', 'store', 'name', 'unavailableStatus']);
    if (options === undefined)
      throw new TypeError('limits: Quota options must be an object, got undefined');
    const windowMs = checkNumber('windowMs', options.windowMs, Number.NaN, {
      min: 1,
      integer: true,
    });
    if (Number.isNaN(windowMs))
      throw new TypeError(
        'limits: option "windowMs" must be an integer in [1, Infinity), got undefined',
      );
    const axes = options.axes;
    if (!Array.isArray(axes) || axes.length === 0)
      throw new TypeError(
        `limits: option "axes" must be a non-empty array, got ${formatValue(axes)}`,
      );
    const seen = new Set<string>();
    this.#axes = axes.map((axis, i) => {
      const at = `axes[${i}]`;
      checkKeys('Quota', axis, ['name', 'key', 'limit', 'status', 'alertAt'], `${at}.`);
      if (axis === undefined) checkObject(at, null);
      const name = checkString(`${at}.name`, axis.name);
      if (name === undefined || name === '' || seen.has(name))
        throw new (name === undefined ? TypeError : RangeError)(
          `limits: option "${at}.name" must be a non-empty string unique among the axes, got ${formatValue(axis.name)}`,
        );
      seen.add(name);
      const key = checkFunction<(ctx: Ctx) => string>(`${at}.key`, axis.key);
      if (key === undefined)
        throw new TypeError(`limits: option "${at}.key" must be a function, got undefined`);
      const limit = checkNumber(`${at}.limit`, axis.limit, Number.NaN, { min: 0, integer: true });
      if (Number.isNaN(limit))
        throw new TypeError(
          `limits: option "${at}.limit" must be an integer in [0, Infinity), got undefined`,
        );
      const alertAt = checkNumber(`${at}.alertAt`, axis.alertAt, 0.66, {
        min: 0,
        minExclusive: true,
        max: 1,
      });
      const status = checkNumber(`${at}.status`, axis.status, 429, statusRange);
      const alertCount = Math.max(1, Math.ceil(Math.round(alertAt * limit * 1e6) / 1e6));
      return { name, key, limit, status, alertAt, alertCount };
    });
    const store = checkObject<QuotaStore>('store', options.store);
    if (store !== undefined && typeof store.consume !== 'function')
      throw new TypeError(
        `limits: option "store" must be a QuotaStore (with consume()), got ${formatValue(store)}`,
      );
    const name = checkString('name', options.name) ?? 'quota';
    if (name === '')
      throw new RangeError('limits: option "name" must be a non-empty string, got ""');
    this.#unavailableStatus = checkNumber(
      'unavailableStatus',
      options.unavailableStatus,
      503,
      statusRange,
    );
    this.windowMs = windowMs;
    this.name = name;
    this.#store = store ?? new MemoryQuotaStore();
  }

  /** The axes' names, in judgement order. */
  get axes(): readonly string[] {
    return this.#axes.map((a) => a.name);
  }

  /**
   * Judges and charges `amount` units on every axis, atomically: either every axis is charged
   * (`{ ok: true }`) or none is and the first full axis in order answers
   * `{ ok: false, axis, status, retryAfterMs }`.
   * @param ctx - passed to every axis' `key` function.
   * @param amount - units to charge (an integer ≥ 1). @default 1
   * @throws TypeError/RangeError for a bad `amount`, or a key function that does not return a
   *   string (the returned promise rejects; nothing is charged).
   */
  async consume(ctx: Ctx, amount = 1): Promise<QuotaResult> {
    checkNumber('amount', amount, 1, { min: 1, integer: true });
    const axes = this.#axes;
    const request: QuotaStoreAxis[] = [];
    for (const axis of axes) {
      const key = axis.key(ctx);
      if (typeof key !== 'string')
        throw new TypeError(
          `limits: the key function of axis "${axis.name}" must return a string, got ${formatValue(key)}`,
        );
      request.push({ name: axis.name, key, limit: axis.limit });
    }
    const verdict = await this.#store.consume({
      quota: this.name,
      windowMs: this.windowMs,
      amount,
      axes: request,
    });
    if (verdict.failure !== undefined) return this.#failed(verdict);
    if (verdict.refused !== -1) {
      const axis = axes[verdict.refused] as Axis<Ctx>;
      const retryAfterMs = Math.max(0, verdict.resetInMs);
      if (this.listenerCount('refuse') > 0)
        this.#emit('refuse', {
          quota: this.name,
          axis: axis.name,
          key: (request[verdict.refused] as QuotaStoreAxis).key,
          status: axis.status,
          retryAfterMs,
        });
      return { ok: false, axis: axis.name, status: axis.status, retryAfterMs };
    }
    for (let i = 0; i < axes.length; i++) {
      const axis = axes[i] as Axis<Ctx>;
      const count = verdict.counts[i] as number;
      // Exactly one charge moves a window's count from below the threshold to at or above it.
      if (count >= axis.alertCount && count - amount < axis.alertCount)
        this.#emit('alert', {
          quota: this.name,
          axis: axis.name,
          key: (request[i] as QuotaStoreAxis).key,
          count,
          limit: axis.limit,
          alertAt: axis.alertAt,
          resetInMs: verdict.resetInMs,
        });
    }
    return OK;
  }

  #failed(verdict: QuotaStoreVerdict): QuotaResult {
    const failure = verdict.failure as NonNullable<QuotaStoreVerdict['failure']>;
    this.#emit('failure', { quota: this.name, policy: failure.policy, error: failure.error });
    if (failure.policy === 'open') return OK;
    const retryAfterMs = Math.max(0, verdict.resetInMs);
    const status = this.#unavailableStatus;
    this.#emit('refuse', { quota: this.name, axis: null, key: null, status, retryAfterMs });
    return { ok: false, axis: null, status, retryAfterMs };
  }

  /** Emits an event; a listener that throws goes to `error`, else is rethrown on a microtask. */
  #emit<E extends 'alert' | 'refuse' | 'failure'>(
    event: E,
    payload: Parameters<QuotaEvents[E]>[0],
  ) {
    try {
      (this.emit as (e: E, p: unknown) => boolean)(event, payload);
    } catch (error) {
      if (this.listenerCount('error') > 0) this.emit('error', error);
      else
        queueMicrotask(() => {
          throw error;
        });
    }
  }
}
