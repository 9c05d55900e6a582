import type { Outcome } from 'limits-core';
import { classifyError, classifyStatus } from '../shared/outcome.js';
import { parseRetryAfter } from '../shared/retryAfter.js';
import type { InterceptorHeaders } from './dispatcher.js';
import type { InterceptedCall, InterceptorConfig } from './options.js';

const OUTCOMES: ReadonlySet<unknown> = new Set<Outcome>([
  'success',
  'dropped',
  'failure',
  'ignore',
]);

/**
 * The outcome of a request that ended with the response `statusCode` (`error` undefined) or with
 * `error`: the `classify` option's answer when it gives one, else `classifyStatus` /
 * `classifyError`. A `classify` that throws or answers something else gets the default.
 */
export function decideOutcome(
  config: InterceptorConfig,
  origin: string,
  method: string,
  statusCode: number,
  headers: InterceptorHeaders | undefined,
  error: unknown,
): Outcome {
  const classify = config.classify;
  if (classify !== undefined) {
    const call: InterceptedCall = {
      origin,
      method,
      statusCode: statusCode === 0 ? undefined : statusCode,
      headers,
      error,
    };
    let outcome: unknown;
    try {
      outcome = classify(call);
    } catch {
      outcome = undefined;
    }
    if (OUTCOMES.has(outcome)) return outcome as Outcome;
  }
  return error === undefined ? classifyStatus(statusCode) : classifyError(error);
}

/** Reports a response's valid `Retry-After` to the `onRetryAfter` hook, if any. */
export function reportRetryAfter(
  config: InterceptorConfig,
  origin: string,
  method: string,
  statusCode: number,
  headers: InterceptorHeaders,
): void {
  const onRetryAfter = config.onRetryAfter;
  if (onRetryAfter === undefined) return;
  const value = headers['retry-after'];
  // Several Retry-After headers are refused, as a comma-joined value is.
  const retryAfterMs = parseRetryAfter(typeof value === 'string' ? value : undefined);
  if (retryAfterMs === undefined) return;
  onRetryAfter({ origin, method, statusCode, retryAfterMs });
}
