/** The check of an option that names an HTTP header, shared by every entry point. */
import { formatValue } from 'limits-core/internal';

/** An HTTP header name as Node stores it: a lowercase token (RFC 9110). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/**
 * Checks an option that names a header or turns it off: `undefined` gives `fallback`, `false`
 * gives `undefined` (off), anything else must be a lowercase HTTP header name.
 * @throws TypeError (not a string or `false`) or RangeError (not a lowercase token), naming the option.
 */
export function checkHeaderName(
  name: string,
  value: unknown,
  fallback: string | undefined,
): string | undefined {
  if (value === undefined) return fallback;
  if (value === false) return undefined;
  if (typeof value !== 'string') {
    throw new TypeError(
      `limits: option "${name}" must be a header name or false, got ${formatValue(value)}`,
    );
  }
  if (!HEADER_NAME.test(value)) {
    throw new RangeError(
      `limits: option "${name}" must be a lowercase HTTP header name, got ${formatValue(value)}`,
    );
  }
  return value;
}
