/**
 * `Retry-After` parsing (RFC 9110 §10.2.3), shared by `limitFetch` and `limitInterceptor`: a
 * downstream's hint is untrusted input, so anything that is not exactly a delta-seconds or an
 * HTTP-date, or that asks for more than {@link MAX_RETRY_AFTER_MS}, is refused (`undefined`). A
 * retry tells the two apart: a valid value that asks for more than a day means "do not retry".
 */

/** The longest wait a `Retry-After` may ask for: one day. A longer one is refused as absurd. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = '(Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** `Sun, 06 Nov 1994 08:49:37 GMT` (the preferred form). */
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
/** `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete, still accepted by recipients). */
const RFC850_DATE = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
/** `Sun Nov  6 08:49:37 1994` (C's asctime(), obsolete, still accepted by recipients). */
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

/**
 * Parses a `Retry-After` header value into the milliseconds to wait.
 *
 * Accepted: delta-seconds (ASCII digits only, e.g. `"120"`; leading zeros allowed), or an HTTP-date
 * in any of the three forms RFC 9110 requires recipients to accept (IMF-fixdate, RFC 850, asctime).
 * A date in the past gives `0`.
 *
 * Refused (`undefined`): a missing header, an empty or malformed value, a sign (`"-1"`, `"+1"`), a
 * fraction (`"1.5"`), an impossible date (`"31 Feb"`), several values joined by a comma, and any
 * wait over {@link MAX_RETRY_AFTER_MS} (one day).
 *
 * @param value - the header value as read (`response.headers.get('retry-after')`), or nothing.
 * @param nowMs - the current time in epoch ms, for an HTTP-date. @default `Date.now()`
 * @returns the wait in ms (an integer ≥ 0), or `undefined` when the value is refused.
 * @example
 * ```ts
 * parseRetryAfter('120'); // 120_000
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', Date.parse('2015-10-21T07:27:00Z')); // 60_000
 * parseRetryAfter('soon'); // undefined
 * ```
 */
export function parseRetryAfter(
  value: string | null | undefined,
  nowMs: number = Date.now(),
): number | undefined {
  const ms = askedWaitMs(value, nowMs);
  return ms === undefined || ms > MAX_RETRY_AFTER_MS ? undefined : ms;
}

/**
 * @internal What a retry makes of a response's `Retry-After` (the `retryIf` answer of `limitFetch`
 * and `limitInterceptor` for a response they would retry): the least wait in ms for a valid value
 * up to {@link MAX_RETRY_AFTER_MS}; `false` (do not retry) for a valid value that asks for longer,
 * since the downstream said not to come back soon; `true` (the policy's own back-off) for a
 * missing or malformed value.
 * @param value - the header value as read, or nothing.
 * @param nowMs - the current time in epoch ms, for an HTTP-date. @default `Date.now()`
 * @example `retryAfterVerdict('120') // 120_000`; `retryAfterVerdict('172800') // false`
 */
export function retryAfterVerdict(
  value: string | null | undefined,
  nowMs: number = Date.now(),
): boolean | number {
  const ms = askedWaitMs(value, nowMs);
  if (ms === undefined) return true;
  return ms > MAX_RETRY_AFTER_MS ? false : ms;
}

/**
 * The wait a `Retry-After` asks for in ms, however long (`Infinity` for a delta-seconds past nine
 * significant digits), or `undefined` when the value is not a delta-seconds or an HTTP-date.
 */
function askedWaitMs(value: string | null | undefined, nowMs: number): number | undefined {
  // A real value is at most 29 characters (an IMF-fixdate): a long one is refused before any work.
  if (typeof value !== 'string' || value.length > 64) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const digits = text.replace(/^0+(?=\d)/, '');
    // Past 9 significant digits the wait is years: not converted, so no precision is lost.
    return digits.length > 9 ? Infinity : Number(digits) * 1000;
  }
  const at = parseHttpDate(text, nowMs);
  if (at === undefined || !Number.isFinite(nowMs)) return undefined;
  return Math.max(0, Math.ceil(at - nowMs));
}

/** An HTTP-date (one of the three forms) as epoch ms, or `undefined` when malformed or impossible. */
function parseHttpDate(text: string, nowMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(text);
  if (m !== null) return utc(m[4], m[3], m[2], m[5], m[6], m[7]);
  m = RFC850_DATE.exec(text);
  if (m !== null) {
    return utc(fullYear(Number(m[4]), nowMs), m[3], m[2], m[5], m[6], m[7]);
  }
  m = ASCTIME_DATE.exec(text);
  if (m !== null) return utc(m[7], m[2], (m[3] as string).trim(), m[4], m[5], m[6]);
  return undefined;
}

/**
 * RFC 9110: a two-digit year that appears to be more than 50 years in the future is the most recent
 * past year with the same last two digits.
 */
function fullYear(twoDigits: number, nowMs: number): string {
  const now = Number.isFinite(nowMs) ? new Date(nowMs).getUTCFullYear() : 2000;
  let year = Math.floor(now / 100) * 100 + twoDigits;
  if (year > now + 50) year -= 100;
  return String(year);
}

/**
 * Epoch ms of the given UTC fields, or `undefined` when a field is out of range (no roll-over). The
 * weekday is redundant and not checked (browsers ignore it too).
 */
function utc(
  year: string | undefined,
  month: string | undefined,
  day: string | undefined,
  hour: string | undefined,
  minute: string | undefined,
  second: string | undefined,
): number | undefined {
  const y = Number(year);
  const mo = MONTHS.indexOf(month as string);
  const d = Number(day);
  const h = Number(hour);
  const mi = Number(minute);
  const s = Number(second);
  // 60 is a leap second (RFC 5322 allows it): Date.UTC rolls it into the next minute.
  if (d < 1 || h > 23 || mi > 59 || s > 60) return undefined;
  // A day past the month's end rolls over in Date.UTC: 31 Feb is refused, not read as 3 Mar.
  if (new Date(Date.UTC(y, mo, d)).getUTCDate() !== d) return undefined;
  return Date.UTC(y, mo, d, h, mi, s);
}
