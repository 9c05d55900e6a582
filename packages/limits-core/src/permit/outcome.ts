/**
 * How a finished call is reported to the limit algorithm:
 * - `success`: a normal sample;
 * - `dropped`: a congestion signal (timeout, overload reply): the algorithm backs off;
 * - `ignore`: no sample (the call says nothing about the downstream's load, e.g. a validation error).
 */
export type Outcome = 'success' | 'ignore' | 'dropped';

/**
 * Decides the outcome of a `run` task: `error` is `undefined` when the task resolved (with `result`).
 * Return `undefined` to fall back to the default classification.
 */
export type Classify = (error: unknown, result?: unknown) => Outcome | undefined;

const TIMEOUT_CODES = new Set([
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

/**
 * The default classification: a resolved task is `success`; an error that looks like a timeout or an
 * abort (`name` `TimeoutError` or `AbortError`, or a timeout `code` such as `ETIMEDOUT` or undici's
 * `UND_ERR_*_TIMEOUT`) is `dropped`; any other error is `ignore`: it says nothing about load.
 */
export function defaultClassify(error: unknown): Outcome {
  if (error === undefined) return 'success';
  if (typeof error === 'object' && error !== null) {
    const { name, code } = error as { name?: unknown; code?: unknown };
    if (name === 'TimeoutError' || name === 'AbortError') return 'dropped';
    if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return 'dropped';
  }
  return 'ignore';
}
