/**
 * How a finished call counts, with one meaning in every limits package:
 * - `success`: a normal latency sample (and a success for a circuit breaker);
 * - `dropped`: a congestion signal (timeout, overload reply): the algorithm backs off (and a breaker
 *   failure);
 * - `failure`: the call failed in a way that says nothing about load (e.g. a 500): no sample for the
 *   algorithm, a failure for a circuit breaker;
 * - `ignore`: neither (e.g. a 404, a validation error, or a call that never started).
 */
export type Outcome = (typeof OUTCOMES)[number];

/** Every {@link Outcome}, in a stable order (e.g. to pre-create one metric series per outcome). */
export const OUTCOMES = ['success', 'dropped', 'failure', 'ignore'] as const;

/**
 * Decides the outcome of a `run` task (or a guarded call): `error` is `undefined` when the task resolved (with `result`).
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
 * `UND_ERR_*_TIMEOUT`) is `dropped`; any other error is `failure`: it says nothing about load, but
 * the call failed.
 */
export function defaultClassify(error: unknown): Outcome {
  if (error === undefined) return 'success';
  if (typeof error === 'object' && error !== null) {
    const { name, code } = error as { name?: unknown; code?: unknown };
    if (name === 'TimeoutError' || name === 'AbortError') return 'dropped';
    if (typeof code === 'string' && TIMEOUT_CODES.has(code)) return 'dropped';
  }
  return 'failure';
}
