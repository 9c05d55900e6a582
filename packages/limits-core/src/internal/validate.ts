/** Range accepted by {@link checkNumber}. */
export interface NumberRange {
  /** Lowest allowed value (inclusive unless `minExclusive`). */
  min?: number;
  /** Highest allowed value (inclusive). */
  max?: number;
  /** `min` itself is not allowed. */
  minExclusive?: boolean;
  /** Only whole numbers. */
  integer?: boolean;
  /** `Infinity` is an allowed value (e.g. "no limit"). */
  allowInfinity?: boolean;
}

function describe(range: NumberRange): string {
  const lo =
    range.min === undefined ? '(-Infinity' : `${range.minExclusive ? '(' : '['}${range.min}`;
  const hi =
    range.max === undefined
      ? `${range.allowInfinity ? 'Infinity]' : 'Infinity)'}`
      : `${range.max}]`;
  return `${range.integer ? 'an integer' : 'a number'} in ${lo}, ${hi}`;
}

/**
 * Validates a numeric option and returns it, or `fallback` when it is `undefined`.
 * @throws TypeError when the value is not a number; RangeError when it is out of range.
 * The message names the option, the allowed range and the value given.
 */
export function checkNumber(
  name: string,
  value: unknown,
  fallback: number,
  range: NumberRange = {},
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw new TypeError(
      `limits: option "${name}" must be ${describe(range)}, got ${String(value)}`,
    );
  }
  const infinite = !Number.isFinite(value);
  const bad =
    (infinite && !(range.allowInfinity && value === Infinity)) ||
    (range.integer && !infinite && !Number.isInteger(value)) ||
    (range.min !== undefined && (range.minExclusive ? value <= range.min : value < range.min)) ||
    (range.max !== undefined && value > range.max);
  if (bad) {
    throw new RangeError(`limits: option "${name}" must be ${describe(range)}, got ${value}`);
  }
  return value;
}

/** The three limit options every algorithm takes. */
export interface LimitBoundsOptions {
  initialLimit?: number | undefined;
  minLimit?: number | undefined;
  maxLimit?: number | undefined;
}

/**
 * Validates `initialLimit`, `minLimit` and `maxLimit` (defaults 20, 1, 1000, each ≥ 1) and that
 * `min ≤ initial ≤ max`.
 * @throws RangeError/TypeError naming the option (prefixed by `owner`) and the range.
 */
export function checkLimits(
  owner: string,
  options: LimitBoundsOptions,
): { initial: number; min: number; max: number } {
  const initial = checkNumber(`${owner}.initialLimit`, options.initialLimit, 20, { min: 1 });
  const min = checkNumber(`${owner}.minLimit`, options.minLimit, 1, { min: 1 });
  const max = checkNumber(`${owner}.maxLimit`, options.maxLimit, 1000, { min: 1 });
  checkLimitBounds(owner, initial, min, max);
  return { initial, min, max };
}

/**
 * Validates that `min ≤ initial ≤ max` for the three limit options shared by every algorithm.
 * @throws RangeError naming the option that breaks the order.
 */
function checkLimitBounds(
  owner: string,
  initialLimit: number,
  minLimit: number,
  maxLimit: number,
): void {
  if (minLimit > maxLimit) {
    throw new RangeError(
      `limits: option "${owner}.minLimit" (${minLimit}) must be ≤ "${owner}.maxLimit" (${maxLimit})`,
    );
  }
  if (initialLimit < minLimit || initialLimit > maxLimit) {
    throw new RangeError(
      `limits: option "${owner}.initialLimit" must be in [${minLimit}, ${maxLimit}] (minLimit..maxLimit), got ${initialLimit}`,
    );
  }
}

/** Validates an optional function option. @throws TypeError naming the option. */
export function checkFunction<T>(name: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new TypeError(`limits: option "${name}" must be a function, got ${typeof value}`);
  }
  return value as T;
}

/** Clamps `value` into `[lo, hi]`. */
export function clamp(value: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, value));
}
