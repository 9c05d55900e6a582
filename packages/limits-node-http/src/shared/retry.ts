import { formatValue, type RetryPolicy } from 'limits-core';

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
