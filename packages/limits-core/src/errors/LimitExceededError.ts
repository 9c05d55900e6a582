import { LimitsError } from './LimitsError.js';

/**
 * Why a request was not admitted:
 * - `at_limit`: no free capacity and no queue to wait in (`maxQueued: 0`);
 * - `queue_full`: the queue holds `maxQueued` entries;
 * - `queue_bytes`: admitting the request would exceed `maxQueuedBytes`;
 * - `too_large`: its `cost` exceeds the largest capacity the limiter can ever have;
 * - `deadline`: it cannot start (and finish) before its deadline, given the queue ahead of it;
 * - `expired`: its deadline or the maximum queue wait passed while it waited;
 * - `aborted`: its `signal` aborted (`cause` is `signal.reason`);
 * - `closed`: the limiter is closed;
 * - `shed`: under overload, a limiter with `shedding` refused it for a more important request (its
 *   criticality, attempt and cohort were below the admission threshold, or it was queued and made
 *   room for a more important one).
 */
export type RejectReason = (typeof REJECT_REASONS)[number];

/** Every {@link RejectReason}, in a stable order (e.g. to pre-create one metric series per reason). */
export const REJECT_REASONS = [
  'at_limit',
  'queue_full',
  'queue_bytes',
  'too_large',
  'deadline',
  'expired',
  'aborted',
  'closed',
  'shed',
] as const;

/** Numbers attached to a {@link LimitExceededError}. */
export interface LimitExceededDetails {
  /** Why it was rejected. */
  reason: RejectReason;
  /**
   * Estimated ms until capacity frees, where an estimate exists (never negative, never NaN); left
   * out when there is none (a limiter that has measured no hold time and was given no
   * `initialServiceMs`).
   */
  retryAfterMs?: number;
  /** The `signal.reason` of an aborted request. */
  cause?: unknown;
}

/**
 * A request was not admitted (or left the queue without a permit). `code` is `LIMIT_EXCEEDED`.
 *
 * @example
 * ```ts
 * try { await limiter.run(call) } catch (e) {
 *   if (e instanceof LimitExceededError) res.setHeader('Retry-After', Math.ceil((e.retryAfterMs ?? 1000) / 1000));
 * }
 * ```
 */
export class LimitExceededError extends LimitsError {
  static readonly code = 'LIMIT_EXCEEDED';
  /** Why it was rejected. */
  readonly reason: RejectReason;
  /**
   * Estimated ms until capacity frees, where an estimate exists: the work ahead of the request at
   * the limiter's measured service time (or its `initialServiceMs`, when given, until a hold time
   * is measured). `undefined` while the limiter has no estimate; an HTTP server then answers
   * with a short `Retry-After` of its own choosing (limits-node-http's `loadShed` says 1 s).
   */
  readonly retryAfterMs: number | undefined;

  /**
   * @param message - message with the live numbers (e.g. "limit reached: 20/20 in flight").
   * @param details - reason, retry estimate, cause.
   */
  constructor(message: string, details: LimitExceededDetails) {
    super(
      LimitExceededError.code,
      message,
      details.cause === undefined ? undefined : { cause: details.cause },
    );
    this.name = 'LimitExceededError';
    this.reason = details.reason;
    this.retryAfterMs = details.retryAfterMs;
  }
}
