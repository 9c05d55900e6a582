import { LimitsError } from '../errors/LimitsError.js';
import type { Quota, QuotaResult } from './Quota.js';

/** A refusal of a limits-core `Quota` (`consume` answered `ok: false`). */
type QuotaRefusal = Extract<QuotaResult, { ok: false }>;

/**
 * A request refused by a {@link Quota} (`consume` answered `ok: false`), as an error to throw or hand
 * on (limits-node-http's `loadShed` gives it to `onShed`): an axis of the quota is full for this window
 * (`axis` names it), or the quota could not be judged and its store failed closed (`axis` is `null`).
 * `code` is `QUOTA_EXCEEDED`; `reason` is always `'quota'`, so a handler can tell it from the
 * limiter's `LimitExceededError` by `error.reason` alone.
 *
 * @example
 * ```ts
 * onShed(req, res, error) {
 *   if (error.reason === 'quota') res.writeHead(error.status, { 'retry-after': '60' }).end();
 *   else res.writeHead(503).end();
 * }
 * ```
 */
export class QuotaExceededError extends LimitsError {
  /** Stable code of this error. */
  static readonly code = 'QUOTA_EXCEEDED';
  /** Always `'quota'` (a `LimitExceededError`'s reason is one of the limiter's reasons). */
  readonly reason = 'quota' as const;
  /** The full axis (e.g. `"account"`, `"global"`), or `null` when the store failed closed. */
  readonly axis: string | null;
  /** The HTTP status the refusal means: the axis' `status`, or the quota's `unavailableStatus`. */
  readonly status: number;
  /** Milliseconds until the quota's window ends (after a store failure: the store's retry hint). */
  readonly retryAfterMs: number;

  /** @param refusal - the quota's answer. */
  constructor(refusal: QuotaRefusal) {
    super(
      QuotaExceededError.code,
      refusal.axis === null
        ? `quota unavailable: its store could not judge (status ${refusal.status}, retry in ${refusal.retryAfterMs} ms)`
        : `quota exceeded on axis "${refusal.axis}" (status ${refusal.status}, window ends in ${refusal.retryAfterMs} ms)`,
    );
    this.name = 'QuotaExceededError';
    this.axis = refusal.axis;
    this.status = refusal.status;
    this.retryAfterMs = refusal.retryAfterMs;
  }
}
