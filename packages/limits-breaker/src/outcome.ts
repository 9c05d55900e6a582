import { defaultClassify } from 'limits-core';
import type { GuardClassify, GuardOutcome } from './types.js';

/** limits-core's classification, with every error that is not congestion counted as a failure. */
export function defaultOutcome(error: unknown): GuardOutcome {
  const outcome = defaultClassify(error);
  return outcome === 'ignore' ? 'failure' : outcome;
}

/**
 * @internal How a finished call counts: `classify`'s answer, or the default when there is no
 * `classify`, it returns `undefined`, or it throws.
 */
export function classifyOutcome(
  classify: GuardClassify | undefined,
  error: unknown,
  value: unknown,
): GuardOutcome {
  let outcome: GuardOutcome | undefined;
  try {
    outcome = classify?.(error, value);
  } catch {
    outcome = undefined;
  }
  return outcome ?? defaultOutcome(error);
}

/** Whether `value` is a thenable (reads `then` once; a getter that throws, throws). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
