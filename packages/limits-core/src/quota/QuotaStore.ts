/**
 * The contract between a {@link Quota} and where its counters live: in this process
 * ({@link MemoryQuotaStore}) or shared by a fleet (limits-redis's `RedisQuotaStore`).
 */

/**
 * The longest key, in characters, a quota store keeps as given. A key longer than this (e.g. an
 * account id the size of a header) is kept as a fixed-length digest of the whole key, marked so that
 * it cannot collide with any key kept as given: `MemoryQuotaStore` uses SHA-256 of its UTF-16 code
 * units, limits-redis's `RedisQuotaStore` SHA-256 of its percent-encoded form (longer than this). A
 * counter's memory is then bounded whatever its key. Events still carry the key as given.
 */
export const MAX_QUOTA_KEY_LENGTH = 256;

/** One axis of a charge: which counter, and the most it may reach in the window. */
export interface QuotaStoreAxis {
  /** The axis' name (e.g. `"account"`); unique within the quota. */
  readonly name: string;
  /**
   * The counter's key within the axis, as the axis' key function returned it (any string; one longer
   * than {@link MAX_QUOTA_KEY_LENGTH} is stored as a digest).
   */
  readonly key: string;
  /** The most units the counter may hold in one window. */
  readonly limit: number;
}

/** What a {@link Quota} asks its store for on every `consume`. */
export interface QuotaStoreRequest {
  /** The quota's name: the store's namespace for the quota's counters. */
  readonly quota: string;
  /** Length of a fixed window in milliseconds; windows start at multiples of it on the store's clock. */
  readonly windowMs: number;
  /** Units to charge on every axis (an integer ≥ 1). */
  readonly amount: number;
  /** The axes, in judgement order. */
  readonly axes: readonly QuotaStoreAxis[];
}

/** A store that could not judge (e.g. Redis down or slow) and answered by its failure policy. */
export interface QuotaStoreFailure {
  /** `'open'`: the call was let through uncharged; `'closed'`: it was refused. */
  readonly policy: 'open' | 'closed';
  /** Why the store could not judge. */
  readonly error: Error;
}

/** A store's answer to one {@link QuotaStoreRequest}. */
export interface QuotaStoreVerdict {
  /**
   * Index (in `axes`) of the first axis whose counter plus `amount` would exceed its limit, or `-1`
   * when every axis was charged. When it is not `-1` no counter was charged.
   */
  readonly refused: number;
  /** Each axis' count in the current window after the call (charged or not); empty after a failure. */
  readonly counts: readonly number[];
  /** Milliseconds until the current window ends, by the store's clock (after a failure: a retry hint). */
  readonly resetInMs: number;
  /** Set when the store could not judge; `refused` and `counts` then follow the failure policy. */
  readonly failure?: QuotaStoreFailure;
}

/**
 * Where a {@link Quota}'s counters live. One call judges and charges every axis **atomically**: if
 * any axis' count plus `amount` would exceed its limit, nothing is charged and the first such axis
 * (in order) is reported; otherwise every axis is charged. Counts are per fixed window
 * (`floor(now / windowMs)` on the store's clock); a new window starts every counter at 0, and a
 * store drops the counters of windows that have ended.
 *
 * The store, not the quota, reads the clock, so a store shared by several processes (Redis) uses
 * one clock for all of them. Because the counts it returns are the atomic result of the charge,
 * exactly one call crosses any threshold, which is how a quota's `alert` fires once per window
 * fleet-wide.
 *
 * A store should not reject: when it cannot judge, it resolves with `failure` set and answers by
 * its failure policy (a rejection reaches `consume`'s caller as is).
 */
export interface QuotaStore {
  /** Judges and charges `request` atomically. */
  consume(request: QuotaStoreRequest): Promise<QuotaStoreVerdict>;
}
