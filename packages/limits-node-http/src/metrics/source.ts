import type { Limiter, PartitionedLimiter, Quota, RetryBudget, RetryPolicy } from 'limits-core';
import { formatValue } from 'limits-core/internal';

/** Circuit states of a limits-breaker guard. */
export type GuardCircuitState = 'CLOSED' | 'OPEN' | 'HALF_OPEN';

/** Why a guarded call went to the fallback (limits-breaker's `FallbackReason`). */
export type GuardFallbackReason = 'open' | 'limiter' | 'timeout' | 'error';

/**
 * What metrics and diagnostics need of a limits-breaker `Guard` (typed here so that this package
 * does not need limits-breaker, an optional peer, to type-check): any `guard()` satisfies it.
 */
export interface GuardSource {
  /** The limiter in front of the action. */
  readonly limiter: Limiter;
  /** The circuit state. */
  readonly state: GuardCircuitState;
  /** The opossum breaker (its `success` and `failure` events). */
  readonly breaker: {
    on(event: string, listener: (...args: unknown[]) => void): unknown;
    removeListener(event: string, listener: (...args: unknown[]) => void): unknown;
  };
  /** Subscribes to the guard's `fallback` event. */
  on(
    event: 'fallback',
    listener: (cause: { readonly reason: GuardFallbackReason }) => void,
  ): unknown;
  /** Unsubscribes from the guard's `fallback` event. */
  off(
    event: 'fallback',
    listener: (cause: { readonly reason: GuardFallbackReason }) => void,
  ): unknown;
}

/**
 * What limits' own `loadShed()` returns, as metrics see it: the limiter (or PartitionedLimiter) it
 * admits requests with, and its quota. Any `loadShed()` satisfies it.
 */
export interface LoadShedSource {
  (...args: never[]): unknown;
  /** The limiter requests take their permits from. */
  readonly limiter: Limiter | PartitionedLimiter;
  /** The quota judged before the limiter, if any. */
  readonly quota: QuotaSource | undefined;
  /** The node:http wrapper (how a loadShed is told from other functions). */
  readonly wrap: unknown;
}

/**
 * What metrics need of a limits-core `Quota`: its axes' names and its `refuse`, `alert` and
 * `failure` events (limits-redis' quota store sits behind a `Quota`, so its refusals and failures
 * come through here).
 */
export type QuotaSource = Pick<Quota<never>, 'axes' | 'on' | 'off'>;

/** What metrics need of a limits-core `RetryPolicy`: its `retry` and `budget_exhausted` events. */
export type RetryPolicySource = Pick<RetryPolicy, 'on' | 'off'>;

/** What metrics need of a limits-core `RetryBudget`: the retries it allows now. */
export type RetryBudgetSource = Pick<RetryBudget, 'available'>;

/**
 * What {@link registerMetrics}, {@link registerOtelMetrics} and {@link publishDiagnostics} observe:
 * a limits-core `Limiter`, a `PartitionedLimiter` (each partition is observed, labelled with its
 * name), a limits-breaker guard (its limiter, plus the circuit) or a `loadShed()` (its limiter, plus
 * its quota). For `limitFetch`, `limitInterceptor` or a gRPC interceptor, observe the limiter or
 * guard you gave it.
 */
export type LimitsSource = Limiter | PartitionedLimiter | GuardSource | LoadShedSource;

/** One limiter of a source, with its partition name (`undefined` outside a PartitionedLimiter). */
export interface SourcePart {
  readonly partition: string | undefined;
  readonly limiter: Limiter;
}

/** A source taken apart: its limiters, the guard when it is one, the quota of a loadShed. */
export interface ResolvedSource {
  readonly parts: readonly SourcePart[];
  /** The PartitionedLimiter, when the source is one (its ledger). */
  readonly partitioned: PartitionedLimiter | undefined;
  readonly guard: GuardSource | undefined;
  /** The quota of a loadShed source. */
  readonly quota: QuotaSource | undefined;
}

/**
 * @internal Takes a source apart, through the public API only (a PartitionedLimiter's partition
 * names come from its ledger and are fixed at construction, so a `partition` label is bounded).
 * Sources are recognised by shape, not `instanceof`, so two installed copies of limits-core work.
 * @throws TypeError naming `where` when `source` is none of the four.
 */
export function resolveSource(where: string, source: unknown): ResolvedSource {
  if (isLimiter(source)) {
    return {
      parts: [{ partition: undefined, limiter: source }],
      partitioned: undefined,
      guard: undefined,
      quota: undefined,
    };
  }
  if (isPartitioned(source)) {
    const parts = Object.keys(source.ledger().partitions).map((partition) => ({
      partition,
      limiter: source.partition(partition),
    }));
    return { parts, partitioned: source, guard: undefined, quota: undefined };
  }
  if (isGuard(source)) {
    return {
      parts: [{ partition: undefined, limiter: source.limiter }],
      partitioned: undefined,
      guard: source,
      quota: undefined,
    };
  }
  if (isLoadShed(source)) {
    return { ...resolveSource(where, source.limiter), quota: source.quota };
  }
  throw new TypeError(
    `limits: ${where} needs a Limiter, a PartitionedLimiter, a guard or a loadShed, got ${formatValue(source)}`,
  );
}

function isLimiter(source: unknown): source is Limiter {
  if (source === null || typeof source !== 'object') return false;
  const l = source as Partial<Limiter>;
  return (
    typeof l.tryAcquire === 'function' &&
    typeof l.acquireWith === 'function' &&
    typeof l.snapshot === 'function' &&
    typeof l.on === 'function' &&
    typeof l.off === 'function'
  );
}

function isPartitioned(source: unknown): source is PartitionedLimiter {
  if (source === null || typeof source !== 'object') return false;
  const p = source as Partial<PartitionedLimiter>;
  return typeof p.partition === 'function' && typeof p.ledger === 'function';
}

function isGuard(source: unknown): source is GuardSource {
  if (source === null || typeof source !== 'object') return false;
  const g = source as Partial<GuardSource>;
  return (
    isLimiter(g.limiter) &&
    typeof g.on === 'function' &&
    typeof g.off === 'function' &&
    typeof g.breaker?.on === 'function' &&
    typeof g.breaker.removeListener === 'function'
  );
}

function isLoadShed(source: unknown): source is LoadShedSource {
  if (typeof source !== 'function') return false;
  const s = source as Partial<LoadShedSource>;
  return s.wrap !== undefined && (isLimiter(s.limiter) || isPartitioned(s.limiter));
}
