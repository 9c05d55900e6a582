import type { ServerResponse } from 'node:http';
import type { LimitExceededError, QuotaExceededError } from 'limits-core';

/** A refusal of {@link loadShed}: the limiter's, or the quota's (checked first). */
export type ShedError = LimitExceededError | QuotaExceededError;

/** The parts of a load-shedding answer: status, headers and body. */
export interface ShedResponse {
  /**
   * 503 for the limiter's refusal; for the quota's, the status its axis means (e.g. 429 for an
   * account's share, 503 for the global cap) or its `unavailableStatus` when its store failed closed.
   */
  status: number;
  /** `content-type`, `content-length`, `retry-after` (whole seconds) and `cache-control: no-store`. */
  headers: Record<string, string>;
  /**
   * The limiter's: `{"error":"overloaded","reason":"<the LimitExceededError reason>"}`; the quota's:
   * `{"error":"quota","axis":"<axis name>"}` (`null` when its store failed closed). No stack, no numbers.
   */
  body: string;
}

/** The longest `Retry-After` of a quota refusal, in seconds: one day (what `parseRetryAfter` accepts). */
const MAX_QUOTA_RETRY_AFTER_S = 86_400;

/**
 * The `Retry-After` of a quota refusal, in whole seconds: the time to the window's end rounded up, at
 * least 1, at most one day. Not capped by `maxRetryAfterMs`: the limiter's wait is an estimate, the
 * quota's is exact, and nothing changes for the caller before the window ends.
 */
function quotaRetryAfterSeconds(error: QuotaExceededError): number {
  const ms = error.retryAfterMs;
  if (!(ms > 0)) return 1;
  return Math.min(MAX_QUOTA_RETRY_AFTER_S, Math.max(1, Math.ceil(ms / 1000)));
}

/**
 * The `Retry-After` of a refusal, in whole seconds: the limiter's `retryAfterMs` rounded up, at
 * least 1 (also when the limiter has no estimate), at most `maxRetryAfterMs` rounded down.
 */
export function retryAfterSeconds(error: LimitExceededError, maxRetryAfterMs: number): number {
  const ms = error.retryAfterMs;
  const cap = Math.floor(maxRetryAfterMs / 1000);
  if (typeof ms !== 'number' || !(ms > 0)) return 1;
  return Math.min(cap, Math.max(1, Math.ceil(ms / 1000)));
}

const bodies = new Map<string, string>();
const quotaBodies = new Map<string | null, string>();

/** An axis name safe to echo to a client; any other name is reported as `null`. */
const AXIS_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The body of a quota refusal: `{"error":"quota","axis":"account"}`. */
function quotaBody(axis: string | null): string {
  let body = quotaBodies.get(axis);
  if (body === undefined) {
    body = JSON.stringify({
      error: 'quota',
      axis: axis !== null && AXIS_NAME.test(axis) ? axis : null,
    });
    if (quotaBodies.size < 32) quotaBodies.set(axis, body);
  }
  return body;
}

/**
 * The default answer to a refused request (what `loadShed` writes unless `onShed` is given), with
 * `Retry-After` and a small JSON body naming only the refusal's reason code or quota axis:
 * - the limiter's refusal: 503, `{"error":"overloaded","reason":"<reason>"}`, `Retry-After` the
 *   limiter's estimate rounded up to seconds, at least 1, at most `maxRetryAfterMs`;
 * - the quota's: the axis' status (429, 503, …), `{"error":"quota","axis":"<axis>"}`,
 *   `Retry-After` the time to the window's end rounded up to seconds, at least 1, at most a day.
 * @param error - the refusal.
 * @param maxRetryAfterMs - the cap on the limiter's `Retry-After`, in ms.
 */
export function shedResponse(error: ShedError, maxRetryAfterMs: number): ShedResponse {
  if (error.reason === 'quota') {
    const body = quotaBody(error.axis);
    return respond(error.status, body, quotaRetryAfterSeconds(error));
  }
  const reason = error.reason;
  let body = bodies.get(reason);
  if (body === undefined) {
    // The reasons are a closed set (RejectReason); anything else is not echoed.
    body = JSON.stringify({
      error: 'overloaded',
      reason: /^[a-z_]{1,20}$/.test(reason) ? reason : 'unknown',
    });
    if (bodies.size < 32) bodies.set(reason, body);
  }
  return respond(503, body, retryAfterSeconds(error, maxRetryAfterMs));
}

function respond(status: number, body: string, retryAfterS: number): ShedResponse {
  return {
    status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'retry-after': String(retryAfterS),
      'cache-control': 'no-store',
    },
    body,
  };
}

/** @internal Writes the default answer on a raw response (node:http, Express). */
export function writeShed(res: ServerResponse, error: ShedError, maxRetryAfterMs: number): void {
  if (res.headersSent) {
    // Someone answered already: nothing sensible can be added.
    res.destroy();
    return;
  }
  const shed = shedResponse(error, maxRetryAfterMs);
  res.writeHead(shed.status, shed.headers);
  res.end(shed.body);
}
