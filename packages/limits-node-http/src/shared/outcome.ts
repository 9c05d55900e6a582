/**
 * The outcome of an HTTP call, the one set of rules every entry point uses: which statuses and errors
 * mean congestion (`dropped`: the limit backs off, and a breaker failure), which mean a broken
 * downstream (`failure`: a breaker failure only), and which say nothing (`ignore`); how a user's
 * `classify` is asked first. Each entry point classifies in
 * one function built on these (`fetchOutcome`, `requestOutcome`, `responseOutcome`). Nothing here
 * knows about fetch, undici or node:http: statuses, errors and signals only.
 */
import { OUTCOMES, type Outcome } from 'limits-core';

/** An HTTP call's outcome: limits-core's one vocabulary (`success | dropped | failure | ignore`). */
export type HttpOutcome = Outcome;

/**
 * Outcome of an HTTP response by its status:
 * - `429`, `502`, `503`, `504` → `dropped` (the downstream or a proxy in front of it is overloaded);
 * - any other `5xx` → `failure` (broken, not necessarily loaded);
 * - everything else (`1xx`–`4xx`) → `success` (the downstream answered; a 404 is a normal answer).
 *
 * @param status - the response status code.
 * @example `classifyStatus(503) // 'dropped'`
 */
export function classifyStatus(status: number): HttpOutcome {
  if (status === 429 || status === 502 || status === 503 || status === 504) return 'dropped';
  if (status >= 500 && status <= 599) return 'failure';
  return 'success';
}

/**
 * Error codes of a connection that could not be made, broke, or timed out (Node's socket errors,
 * undici's `UND_ERR_*`): the downstream is unreachable or overloaded, a congestion signal.
 */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/** How deep `cause` chains are followed (fetch wraps the socket error in `TypeError('fetch failed')`). */
const MAX_CAUSE_DEPTH = 4;

/**
 * Outcome of an HTTP call that ended in an error instead of a response:
 * - the caller's own abort (`callerSignal` is aborted) → `ignore`: the caller gave up, which says
 *   nothing about the downstream;
 * - a timeout or an abort by our own time limit (`name` `TimeoutError` or `AbortError`), or a
 *   network error (a code in the error or its `cause` chain such as `ECONNREFUSED`, `ECONNRESET`,
 *   `UND_ERR_SOCKET`, `UND_ERR_HEADERS_TIMEOUT`) → `dropped`;
 * - anything else (an invalid URL, a DNS name that does not exist, a bug) → `failure`.
 *
 * @param error - what the call threw or rejected with.
 * @param callerSignal - the caller's own signal, if any: its abort is the caller's, not congestion.
 * @example `classifyError(new DOMException('late', 'TimeoutError')) // 'dropped'`
 */
export function classifyError(error: unknown, callerSignal?: AbortSignal): HttpOutcome {
  if (callerSignal?.aborted === true) return 'ignore';
  let e = error;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH; depth++) {
    if (typeof e !== 'object' || e === null) return 'failure';
    const { name, code, cause } = e as { name?: unknown; code?: unknown; cause?: unknown };
    if (name === 'TimeoutError' || name === 'AbortError') return 'dropped';
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return 'dropped';
    e = cause;
  }
  return 'failure';
}

const VALID: ReadonlySet<unknown> = new Set<Outcome>(OUTCOMES);

/**
 * What a user's `classify` answers for `subject`: its outcome, or `undefined` (the caller's default
 * applies) when there is no `classify`, it returns `undefined` or anything that is not an outcome,
 * or it throws.
 */
export function userOutcome<T>(
  classify: ((subject: T) => Outcome | undefined) | undefined,
  subject: T,
): Outcome | undefined {
  if (classify === undefined) return undefined;
  let outcome: unknown;
  try {
    outcome = classify(subject);
  } catch {
    return undefined;
  }
  return VALID.has(outcome) ? (outcome as Outcome) : undefined;
}
