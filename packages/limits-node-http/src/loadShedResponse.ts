import type { ServerResponse } from 'node:http';
import type { LimitExceededError } from 'limits-core';

/** The parts of a load-shedding 503: status, headers and body. */
export interface ShedResponse {
  /** Always 503. */
  status: 503;
  /** `content-type`, `content-length`, `retry-after` (whole seconds) and `cache-control: no-store`. */
  headers: Record<string, string>;
  /** `{"error":"overloaded","reason":"<the LimitExceededError reason>"}`: no stack, no numbers. */
  body: string;
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

/**
 * The default answer to a refused request (what `loadShed` writes unless `onShed` is given): a 503
 * with `Retry-After` and a small JSON body naming only the refusal's reason code.
 * @param error - the limiter's refusal.
 * @param maxRetryAfterMs - the cap on `Retry-After`, in ms.
 */
export function shedResponse(error: LimitExceededError, maxRetryAfterMs: number): ShedResponse {
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
  return {
    status: 503,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'retry-after': String(retryAfterSeconds(error, maxRetryAfterMs)),
      'cache-control': 'no-store',
    },
    body,
  };
}

/** @internal Writes the default 503 on a raw response (node:http, Express). */
export function writeShed(
  res: ServerResponse,
  error: LimitExceededError,
  maxRetryAfterMs: number,
): void {
  if (res.headersSent) {
    // Someone answered already: nothing sensible can be added.
    res.destroy();
    return;
  }
  const shed = shedResponse(error, maxRetryAfterMs);
  res.writeHead(shed.status, shed.headers);
  res.end(shed.body);
}

const DIGITS = /^[ \t]*(\d+)[ \t]*$/;

/**
 * @internal The time budget a request header carries, in ms, or `undefined` when the value is not
 * ASCII digits (optionally surrounded by spaces): signs, decimals, units, lists, empty values and
 * values over 64 characters are ignored. Values over `maxMs` (more than 15 digits included) are
 * capped at `maxMs`.
 */
export function parseTimeoutHeader(
  value: string | string[] | undefined,
  maxMs: number,
): number | undefined {
  if (typeof value !== 'string' || value.length > 64) return undefined;
  const digits = DIGITS.exec(value)?.[1];
  if (digits === undefined) return undefined;
  return digits.length > 15 ? maxMs : Math.min(Number(digits), maxMs);
}
