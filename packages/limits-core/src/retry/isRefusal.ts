import { LimitExceededError } from '../errors/LimitExceededError.js';

/** The `code` of limits-breaker's `CircuitOpenError` (read by code: limits-core does not import it). */
const CIRCUIT_OPEN = 'CIRCUIT_OPEN';

/**
 * Whether `error` says the call was refused by this SDK rather than failed downstream: a
 * {@link LimitExceededError} (`code` `LIMIT_EXCEEDED`, any reason, from any installed copy of
 * limits-core) or an error whose `code` is `CIRCUIT_OPEN` (limits-breaker's `CircuitOpenError`).
 * A refusal is never retried by {@link RetryPolicy}: the limiter or the breaker refused because
 * the dependency is already overloaded or failing, and a retry would add the very load it refused.
 *
 * @example
 * ```ts
 * if (isRefusal(error)) return fallback(); // do not retry, do not count as a downstream failure
 * ```
 */
export function isRefusal(error: unknown): boolean {
  if (error instanceof LimitExceededError) return true;
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { code?: unknown }).code === CIRCUIT_OPEN
  );
}
