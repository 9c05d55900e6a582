/**
 * Option checking shared by every package: one message shape,
 * `limits: option "<name>" must be <allowed>, got <value as given>`, with a TypeError for a wrong type
 * and a RangeError for a value out of range. Strings are quoted in messages so `'5'` and `5` differ.
 */

/** Renders a value as the user wrote it, for error messages: strings quoted, objects by kind. */
export function formatValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (typeof value === 'function') return 'a function';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== 'Object' ? `a ${name}` : 'an object';
  }
  if (typeof value === 'bigint') return `${value}n`;
  return String(value);
}

/** Edit distance between two short strings (option names), for "did you mean" hints. */
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  let prev = Array.from({ length: y.length + 1 }, (_, i) => i);
  for (let i = 1; i <= x.length; i++) {
    const cur = [i];
    for (let j = 1; j <= y.length; j++) {
      cur[j] = Math.min(
        (prev[j] as number) + 1,
        (cur[j - 1] as number) + 1,
        (prev[j - 1] as number) + (x[i - 1] === y[j - 1] ? 0 : 1),
      );
    }
    prev = cur;
  }
  return prev[y.length] as number;
}

/** The allowed name nearest to `key`, when it is close enough to be a likely typo. */
export function nearestName(key: string, allowed: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of allowed) {
    const d = distance(key, name);
    if (d < bestDistance) {
      bestDistance = d;
      best = name;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(best.length / 3))
    ? best
    : undefined;
}

/**
 * Checks that `options` is `undefined` or a plain object whose keys are all in `allowed`.
 * @param where - what the options configure, for the message (e.g. `"Limiter"`, `"acquire"`).
 * @param prefix - the option path prefix (e.g. `"fairness."`), empty at top level.
 * @throws TypeError when `options` is not an object, or names an unknown key (with the nearest valid name).
 */
export function checkKeys(
  where: string,
  options: unknown,
  allowed: readonly string[],
  prefix = '',
): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(
      `limits: ${prefix === '' ? `${where} options` : `option "${prefix.slice(0, -1)}"`} must be an object, got ${formatValue(options)}`,
    );
  }
  for (const key in options) {
    if (allowed.includes(key)) continue;
    const near = nearestName(key, allowed);
    throw new TypeError(
      `limits: unknown option "${prefix}${key}" for ${where}${near === undefined ? `; allowed: ${allowed.join(', ')}` : `; did you mean "${prefix}${near}"?`}`,
    );
  }
}

/** Validates an optional boolean option. @throws TypeError naming the option. */
export function checkBoolean(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new TypeError(
      `limits: option "${name}" must be true or false, got ${formatValue(value)}`,
    );
  }
  return value;
}

/** Validates an optional option that must be one of a few strings. @throws TypeError/RangeError naming the option. */
export function checkOneOf<T extends string>(
  name: string,
  value: unknown,
  fallback: T,
  allowed: readonly T[],
): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string') {
    throw new TypeError(
      `limits: option "${name}" must be one of ${allowed.map((a) => `"${a}"`).join(', ')}, got ${formatValue(value)}`,
    );
  }
  if (!allowed.includes(value as T)) {
    throw new RangeError(
      `limits: option "${name}" must be one of ${allowed.map((a) => `"${a}"`).join(', ')}, got ${formatValue(value)}`,
    );
  }
  return value as T;
}

/** Validates an optional string option. @throws TypeError naming the option. */
export function checkString(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    throw new TypeError(`limits: option "${name}" must be a string, got ${formatValue(value)}`);
  }
  return value;
}

/** Validates an optional AbortSignal. @throws TypeError naming the option. */
export function checkSignal(name: string, value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (
    value === null ||
    typeof value !== 'object' ||
    typeof (value as AbortSignal).aborted !== 'boolean' ||
    typeof (value as AbortSignal).addEventListener !== 'function' ||
    typeof (value as AbortSignal).removeEventListener !== 'function'
  ) {
    throw new TypeError(
      `limits: option "${name}" must be an AbortSignal, got ${formatValue(value)}`,
    );
  }
  return value as AbortSignal;
}

/** Validates an optional object option (not null, not an array). @throws TypeError naming the option. */
export function checkObject<T extends object>(name: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`limits: option "${name}" must be an object, got ${formatValue(value)}`);
  }
  return value as T;
}

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
      `limits: option "${name}" must be ${describe(range)}, got ${formatValue(value)}`,
    );
  }
  const infinite = !Number.isFinite(value);
  const bad =
    (infinite && !(range.allowInfinity && value === Infinity)) ||
    (range.integer && !infinite && !Number.isInteger(value)) ||
    (range.min !== undefined && (range.minExclusive ? value <= range.min : value < range.min)) ||
    (range.max !== undefined && value > range.max);
  if (bad) {
    throw new RangeError(
      `limits: option "${name}" must be ${describe(range)}, got ${formatValue(value)}`,
    );
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
 * Validates `initialLimit`, `minLimit` and `maxLimit` (each a number ≥ 1) and that
 * `min ≤ initial ≤ max`. A default never contradicts what the user gave: `minLimit` defaults to 1,
 * `maxLimit` to `max(1000, minLimit, initialLimit)`, `initialLimit` to 20 clamped into
 * `[minLimit, maxLimit]` (so `{ maxLimit: 8 }` starts at 8). Only two explicit values that
 * contradict each other are refused.
 * @throws RangeError/TypeError naming the option (prefixed by `owner`) and the range.
 */
export function checkLimits(
  owner: string,
  options: LimitBoundsOptions,
): { initial: number; min: number; max: number } {
  const range = { min: 1 };
  const given = checkNumber(`${owner}.initialLimit`, options.initialLimit, Number.NaN, range);
  const givenMin = checkNumber(`${owner}.minLimit`, options.minLimit, Number.NaN, range);
  const givenMax = checkNumber(`${owner}.maxLimit`, options.maxLimit, Number.NaN, range);
  checkLimitBounds(owner, given, givenMin, givenMax);
  const min = Number.isNaN(givenMin) ? 1 : givenMin;
  const max = Number.isNaN(givenMax)
    ? Math.max(1000, min, Number.isNaN(given) ? 0 : given)
    : givenMax;
  const initial = Number.isNaN(given) ? clamp(20, min, max) : given;
  return { initial, min, max };
}

/**
 * Validates that `min ≤ initial ≤ max` for the three limit options shared by every algorithm, among
 * the values the user gave: `NaN` stands for a value not given, which is never in conflict (its
 * default is fitted to the others).
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
    const lo = Number.isNaN(minLimit) ? 1 : minLimit;
    const hi = Number.isNaN(maxLimit) ? 'Infinity)' : `${maxLimit}]`;
    throw new RangeError(
      `limits: option "${owner}.initialLimit" must be in [${lo}, ${hi} (minLimit..maxLimit), got ${initialLimit}`,
    );
  }
}

/** Validates an optional function option. @throws TypeError naming the option. */
export function checkFunction<T>(name: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') {
    throw new TypeError(`limits: option "${name}" must be a function, got ${formatValue(value)}`);
  }
  return value as T;
}

/** Clamps `value` into `[lo, hi]`. */
export function clamp(value: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, value));
}
