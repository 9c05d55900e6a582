import { LimitsError } from '../errors/LimitsError.js';
import { sha256Utf16 } from '../internal/sha256.js';
import { checkKeys, checkNumber, checkObject, formatValue } from '../internal/validate.js';
import {
  MAX_QUOTA_KEY_LENGTH,
  type QuotaStore,
  type QuotaStoreRequest,
  type QuotaStoreVerdict,
} from './QuotaStore.js';

/** Options of a {@link MemoryQuotaStore}. */
export interface MemoryQuotaStoreOptions {
  /**
   * Most counters held at once (one per axis and key in the current window). When full, counters of
   * ended windows are dropped; if it is still full, a call that needs a new counter fails closed
   * (its quota answers `status` 503 until the window ends) while existing counters keep working:
   * evicting a live counter would hand its tenant a fresh allowance.
   * @default 100000
   */
  maxKeys?: number;
  /** Wall-clock source in milliseconds; windows start at multiples of `windowMs` on it. @default `{ now: Date.now }` */
  clock?: { now(): number };
}

interface Counter {
  count: number;
  /** When this counter's window ends (ms on the store's clock). */
  endsAt: number;
}

const wallClock = { now: () => Date.now() };

/** Raised (as a failure, not a rejection) when a {@link MemoryQuotaStore} has no room for a new counter. */
export class QuotaStoreFullError extends LimitsError {
  /** Stable code of this error. */
  static readonly code = 'QUOTA_STORE_FULL';
  constructor(maxKeys: number) {
    super(
      QuotaStoreFullError.code,
      `quota store full: ${maxKeys}/${maxKeys} counters in the current window (option "maxKeys")`,
    );
    this.name = 'QuotaStoreFullError';
  }
}

/**
 * The embedded {@link QuotaStore}: counters in a `Map` of this process, judged and charged in one
 * synchronous step (so atomically). Counters of ended windows are dropped when their window is next
 * touched and in a sweep whenever a window ends; at most `maxKeys` counters are held. A key longer
 * than {@link MAX_QUOTA_KEY_LENGTH} is held as its SHA-256 (64 hex digits), so no counter holds more
 * than a few hundred bytes. One store can serve several quotas (counters are namespaced by quota and
 * axis name).
 * @example `new Quota({ windowMs: 3_600_000, axes, store: new MemoryQuotaStore({ maxKeys: 50_000 }) })`
 */
export class MemoryQuotaStore implements QuotaStore {
  readonly #counters = new Map<string, Counter>();
  readonly #maxKeys: number;
  readonly #clock: { now(): number };
  /** Earliest end of any held counter's window: the next sweep is due then. */
  #nextSweep = Infinity;

  /**
   * @param options - see {@link MemoryQuotaStoreOptions}.
   * @throws TypeError/RangeError for a bad option.
   */
  constructor(options?: MemoryQuotaStoreOptions) {
    checkKeys('MemoryQuotaStore', options, ['maxKeys', 'clock']);
    this.#maxKeys = checkNumber('maxKeys', options?.maxKeys, 100_000, { min: 1, integer: true });
    const clock = checkObject<{ now(): number }>('clock', options?.clock) ?? wallClock;
    if (typeof clock.now !== 'function')
      throw new TypeError(
        `limits: option "clock.now" must be a function, got ${formatValue(clock.now)}`,
      );
    this.#clock = clock;
  }

  /** Counters held now (those of ended windows included until the next sweep). */
  get size(): number {
    return this.#counters.size;
  }

  /** Judges and charges `request` atomically; see {@link QuotaStore.consume}. */
  consume(request: QuotaStoreRequest): Promise<QuotaStoreVerdict> {
    return Promise.resolve(this.consumeNow(request));
  }

  /** {@link MemoryQuotaStore.consume}, synchronously. */
  consumeNow(request: QuotaStoreRequest): QuotaStoreVerdict {
    const now = this.#clock.now();
    if (now >= this.#nextSweep) this.#sweep(now);
    const { windowMs, amount, axes } = request;
    const endsAt = (Math.floor(now / windowMs) + 1) * windowMs;
    const resetInMs = endsAt - now;
    const prefix = `${request.quota.length}:${request.quota}`;
    const ids: string[] = [];
    const counts: number[] = [];
    let missing = 0;
    let refused = -1;
    for (let i = 0; i < axes.length; i++) {
      const axis = axes[i] as (typeof axes)[number];
      // A long key is held as its digest, after "#" where a key held as given has ":": no collision.
      const id =
        axis.key.length <= MAX_QUOTA_KEY_LENGTH
          ? `${prefix}${axis.name.length}:${axis.name}${axis.key}`
          : `${prefix}${axis.name.length}#${axis.name}${sha256Utf16(axis.key)}`;
      const c = this.#counters.get(id);
      const count = c !== undefined && c.endsAt === endsAt ? c.count : 0;
      if (c === undefined) missing++;
      ids.push(id);
      counts.push(count);
      if (refused === -1 && count + amount > axis.limit) refused = i;
    }
    if (refused !== -1) return { refused, counts, resetInMs };
    if (missing > 0 && this.#counters.size + missing > this.#maxKeys) {
      this.#sweep(now);
      if (this.#counters.size + missing > this.#maxKeys)
        return {
          refused: -1,
          counts: [],
          resetInMs: Number.isFinite(this.#nextSweep) ? this.#nextSweep - now : resetInMs,
          failure: { policy: 'closed', error: new QuotaStoreFullError(this.#maxKeys) },
        };
    }
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as string;
      const count = (counts[i] as number) + amount;
      counts[i] = count;
      const c = this.#counters.get(id);
      if (c === undefined) this.#counters.set(id, { count, endsAt });
      else {
        c.count = count;
        c.endsAt = endsAt;
      }
    }
    if (endsAt < this.#nextSweep) this.#nextSweep = endsAt;
    return { refused: -1, counts, resetInMs };
  }

  /** Drops every counter whose window has ended by `now`. */
  #sweep(now: number): void {
    let next = Infinity;
    for (const [id, c] of this.#counters) {
      if (c.endsAt <= now) this.#counters.delete(id);
      else if (c.endsAt < next) next = c.endsAt;
    }
    this.#nextSweep = next;
  }
}
