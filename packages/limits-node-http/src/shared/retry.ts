/**
 * The retry rules `limitFetch` and `limitInterceptor` share: which requests may be repeated by
 * default, the `retry` option's check, and what a response means for a retry.
 */
import type { Outcome, RetryPolicy } from 'limits-core';
import { formatValue } from 'limits-core/internal';
import { retryAfterVerdict } from './retryAfter.js';

/**
 * The response header by which a server says "do not retry this request" (`loadShed` sends it with
 * the 503 of work it sheds by importance and of a refused retry). `limitFetch` and `limitInterceptor`
 * never retry a response that carries it, whatever its status and `Retry-After`.
 */
export const DO_NOT_RETRY_HEADER = 'x-do-not-retry';

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

/**
 * The default `retryable` of `limitFetch` and `limitInterceptor`: idempotent methods only
 * (RFC 9110 §9.2.2).
 */
export function isIdempotent(request: { readonly method: string }): boolean {
  return IDEMPOTENT.has(request.method);
}

/** The `retry` option of `limitFetch` and `limitInterceptor`: a limits-core `RetryPolicy`, or none. */
export function checkRetryPolicy(value: unknown): RetryPolicy | undefined {
  if (value === undefined) return undefined;
  if (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as RetryPolicy).run === 'function'
  )
    return value as RetryPolicy;
  throw new TypeError(`limits: option "retry" must be a RetryPolicy, got ${formatValue(value)}`);
}

/**
 * Whether an attempt that got a response classified `outcome` is retried (the policy's `retryIf`
 * answer): never when the response carries {@link DO_NOT_RETRY_HEADER}; `dropped` and `failure`
 * (429, 5xx) are, after at least the response's valid `Retry-After` in ms, and never when that asks
 * for more than a day (`false`: the downstream said not to come back soon); without a valid one,
 * after the policy's own back-off (`true`). Any other outcome ends the call. (An attempt that ended
 * in an error is retried only when `dropped`.)
 * @param retryAfter - the response's `Retry-After` header, as read.
 * @param doNotRetry - the response's do-not-retry header, as read (any value but none or empty
 *   ends the call).
 */
export function retryResponse(
  outcome: Outcome,
  retryAfter: string | null | undefined,
  doNotRetry: unknown,
): boolean | number {
  if (outcome !== 'dropped' && outcome !== 'failure') return false;
  if (doNotRetry !== undefined && doNotRetry !== null && doNotRetry !== '') return false;
  return retryAfterVerdict(retryAfter);
}
