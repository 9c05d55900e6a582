import { formatValue } from '../internal/validate.js';
import { FixedLimit } from './FixedLimit.js';
import type { LimitAlgorithm } from './LimitAlgorithm.js';

/**
 * @internal The algorithm a limiter's options name: `algorithm` (any {@link LimitAlgorithm}) or
 * `limit` (a number: a fixed limit), at most one of them; neither gives a fixed limit of `fallback`.
 * @param where - the constructor, for the messages (e.g. `"Limiter"`).
 * @throws TypeError when both are given, when `limit` is not a number (an algorithm given as `limit`
 *   is pointed to `algorithm`), or for a malformed algorithm; RangeError for a `limit` that is not an
 *   integer ≥ 1.
 */
export function resolveAlgorithm(
  where: string,
  options: { limit?: unknown; algorithm?: unknown },
  fallback: number,
): LimitAlgorithm {
  const { limit, algorithm } = options;
  if (limit !== undefined && algorithm !== undefined) {
    throw new TypeError(
      `limits: ${where} takes either "limit" (a fixed number) or "algorithm", not both`,
    );
  }
  if (algorithm !== undefined) return checkAlgorithm('algorithm', algorithm);
  if (limit !== undefined && typeof limit !== 'number') {
    throw new TypeError(
      `limits: option "limit" of ${where} is a number (a fixed limit); an algorithm goes in "algorithm", e.g. { algorithm: new VegasLimit() }; got ${formatValue(limit)}`,
    );
  }
  // FixedLimit checks the number (an integer ≥ 1) under the same option name.
  return new FixedLimit(limit === undefined ? fallback : limit);
}

/**
 * @internal Checks that `value` is a usable {@link LimitAlgorithm}: an object with an `update`
 * function and a finite `limit` ≥ 0, and, if it has one, a `maxLimit` that is a number > 0, an
 * `onLate` that is a function and a `lateAfterMs` that is a number.
 * @param name - the option name for the message (e.g. `"algorithm"`).
 * @throws TypeError for a wrong type (not an object, no `update` function, a `limit` that is not a
 *   number or is NaN, an `onLate` that is not a function, a `lateAfterMs` that is not a number);
 *   RangeError for a `limit` that is negative or infinite, or a bad `maxLimit`.
 */
export function checkAlgorithm(name: string, value: unknown): LimitAlgorithm {
  const shape = 'a LimitAlgorithm (an object with a numeric limit and an update function)';
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`limits: option "${name}" must be ${shape}, got ${formatValue(value)}`);
  }
  const a = value as Partial<LimitAlgorithm>;
  if (typeof a.update !== 'function') {
    throw new TypeError(
      `limits: option "${name}.update" must be a function, got ${formatValue(a.update)}`,
    );
  }
  const limit = a.limit;
  if (typeof limit !== 'number' || Number.isNaN(limit)) {
    throw new TypeError(
      `limits: option "${name}.limit" must be a finite number ≥ 0, got ${formatValue(limit)}`,
    );
  }
  if (!Number.isFinite(limit) || limit < 0) {
    throw new RangeError(
      `limits: option "${name}.limit" must be a finite number ≥ 0, got ${formatValue(limit)}`,
    );
  }
  const max = a.maxLimit;
  if (max !== undefined) {
    if (typeof max !== 'number' || Number.isNaN(max)) {
      throw new TypeError(
        `limits: option "${name}.maxLimit" must be a number > 0 or undefined, got ${formatValue(max)}`,
      );
    }
    if (!(max > 0)) {
      throw new RangeError(
        `limits: option "${name}.maxLimit" must be a number > 0 or undefined, got ${formatValue(max)}`,
      );
    }
  }
  if (a.onLate !== undefined && typeof a.onLate !== 'function') {
    throw new TypeError(
      `limits: option "${name}.onLate" must be a function or undefined, got ${formatValue(a.onLate)}`,
    );
  }
  const lateAfter = a.lateAfterMs;
  if (lateAfter !== undefined && (typeof lateAfter !== 'number' || Number.isNaN(lateAfter))) {
    throw new TypeError(
      `limits: option "${name}.lateAfterMs" must be a number or undefined, got ${formatValue(lateAfter)}`,
    );
  }
  return value as LimitAlgorithm;
}
