import { defaultClassify } from 'limits-core';
import type { GuardOutcome } from './types.js';

/** limits-core's classification, with every error that is not congestion counted as a failure. */
export function defaultOutcome(error: unknown): GuardOutcome {
  const outcome = defaultClassify(error);
  return outcome === 'ignore' ? 'failure' : outcome;
}

/** Whether `value` is a thenable (reads `then` once; a getter that throws, throws). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
