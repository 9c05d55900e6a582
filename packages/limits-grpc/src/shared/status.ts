/**
 * How a gRPC call counts, and how a refusal is answered: one set of rules for the client
 * interceptor and the server interceptor.
 */
import { Metadata, type StatusObject, status } from '@grpc/grpc-js';
import { OUTCOMES, type Outcome } from 'limits-core';

/**
 * The outcome of a call that ended with `code` (a gRPC status code), unless the caller cancelled it
 * (always `ignore`, see {@link limitGrpcClient}):
 * - `OK` → `success` (a latency sample);
 * - `RESOURCE_EXHAUSTED`, `UNAVAILABLE`, `DEADLINE_EXCEEDED` → `dropped` (congestion: the limit
 *   backs off; a failure for a breaker);
 * - `INVALID_ARGUMENT`, `NOT_FOUND`, `ALREADY_EXISTS`, `PERMISSION_DENIED`, `UNAUTHENTICATED`,
 *   `FAILED_PRECONDITION`, `ABORTED`, `OUT_OF_RANGE` → `success`: the server answered (as an HTTP
 *   4xx is an answer), so its latency is a sample;
 * - `CANCELLED` (not by the caller: the server or the connection ended it), `UNKNOWN`, `INTERNAL`,
 *   `UNIMPLEMENTED`, `DATA_LOSS`, and any code outside the table → `failure` (no sample; a failure
 *   for a breaker).
 * @param code - the status code the call ended with.
 */
export function classifyStatus(code: number): Outcome {
  switch (code) {
    case status.OK:
    case status.INVALID_ARGUMENT:
    case status.NOT_FOUND:
    case status.ALREADY_EXISTS:
    case status.PERMISSION_DENIED:
    case status.UNAUTHENTICATED:
    case status.FAILED_PRECONDITION:
    case status.ABORTED:
    case status.OUT_OF_RANGE:
      return 'success';
    case status.RESOURCE_EXHAUSTED:
    case status.UNAVAILABLE:
    case status.DEADLINE_EXCEEDED:
      return 'dropped';
    default:
      return 'failure';
  }
}

/** The metadata key of a refusal's retry estimate in ms (gRPC's retry pushback, gRFC A6). */
export const RETRY_PUSHBACK_KEY = 'grpc-retry-pushback-ms';

/** What {@link refusalStatus} reads of a refusal: the limiter's `LimitExceededError` or the guard's `CircuitOpenError`. */
interface Refusal {
  readonly code?: unknown;
  readonly reason?: unknown;
  readonly retryAfterMs?: unknown;
}

/**
 * The status that answers a call the limiter (or a guard) refused, without the call reaching its
 * handler or the network:
 * - the limiter closed (`closed`), or a guard's circuit open → `UNAVAILABLE`;
 * - the caller's own cancel while queued (`aborted`) → `CANCELLED`;
 * - the call's deadline cannot be met, or passed while queued (`deadline`, `expired`), or a guard's
 *   `attemptTimeoutMs` ran out before it started (`timeout`) → `DEADLINE_EXCEEDED`;
 * - every other reason (`at_limit`, `queue_full`, `queue_bytes`, `too_large`, `shed`) →
 *   `RESOURCE_EXHAUSTED`.
 *
 * `details` is `limits: <reason>` (`circuit_open` for a guard's open circuit), and the limiter's
 * `retryAfterMs` estimate, when it has one, goes in the metadata as `grpc-retry-pushback-ms`.
 * @param error - the refusal.
 */
export function refusalStatus(error: Refusal): StatusObject {
  const metadata = new Metadata();
  const reason =
    error.code === 'CIRCUIT_OPEN'
      ? 'circuit_open'
      : error.code === 'CALL_TIMEOUT'
        ? 'timeout'
        : typeof error.reason === 'string' && /^[a-z_]{1,20}$/.test(error.reason)
          ? error.reason
          : 'unknown';
  const retryAfterMs = error.retryAfterMs;
  if (typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) && retryAfterMs >= 0) {
    metadata.set(RETRY_PUSHBACK_KEY, String(Math.ceil(retryAfterMs)));
  }
  return { code: refusalCode(reason), details: `limits: ${reason}`, metadata };
}

function refusalCode(reason: string): status {
  switch (reason) {
    case 'closed':
    case 'circuit_open':
      return status.UNAVAILABLE;
    case 'aborted':
      return status.CANCELLED;
    case 'deadline':
    case 'expired':
    case 'timeout':
      return status.DEADLINE_EXCEEDED;
    default:
      return status.RESOURCE_EXHAUSTED;
  }
}

/**
 * A gRPC deadline (a `Date`, or ms since the epoch; `Infinity`: none) as the time left in ms from
 * now (`Infinity` without one).
 */
export function remainingMs(deadline: Date | number | undefined): number {
  if (deadline === undefined) return Number.POSITIVE_INFINITY;
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  if (!Number.isFinite(at)) return Number.POSITIVE_INFINITY;
  return Math.max(0, at - Date.now());
}

/**
 * A `classify` option's answer, when it is an outcome (a throw or anything else: `undefined`, and
 * the status code's outcome applies).
 */
export function userOutcome<S>(
  classify: (status: S, method: string) => Outcome | undefined,
  received: S,
  method: string,
): Outcome | undefined {
  try {
    const outcome = classify(received, method);
    return OUTCOMES.includes(outcome as Outcome) ? outcome : undefined;
  } catch {
    return undefined;
  }
}
