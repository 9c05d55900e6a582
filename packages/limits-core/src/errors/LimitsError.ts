const kBrand = Symbol.for('limits.error');

/**
 * Base of every error this SDK throws on purpose. `code` is stable across versions; check it (or
 * use `instanceof`, which works across two installed copies of the package) instead of the message.
 */
export class LimitsError extends Error {
  /** Stable machine-readable code, e.g. `LIMIT_EXCEEDED`. */
  readonly code: string;

  /**
   * @param code - stable code.
   * @param message - human-readable message with the live numbers.
   * @param options - standard `ErrorOptions` (`cause`).
   */
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LimitsError';
    this.code = code;
    Object.defineProperty(this, kBrand, { value: code });
  }

  /** Brand check, so `instanceof` works across two installed copies of the package. */
  static [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the subclass `instanceof` was asked about.
    return isBranded(value, this as unknown as { code?: string });
  }
}

/** @internal Brand check shared by the error classes: true for any LimitsError, or one with `code`. */
function isBranded(value: unknown, cls: { code?: string }): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const code = (value as Record<symbol, unknown>)[kBrand];
  if (typeof code !== 'string') return false;
  return cls.code === undefined || cls.code === code;
}

/**
 * Whether `value` is an error of this SDK (any copy of the package).
 * @example `if (isLimitsError(err)) console.log(err.code)`
 */
export function isLimitsError(value: unknown): value is LimitsError {
  return isBranded(value, {});
}
