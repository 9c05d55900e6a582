/**
 * @internal Encodes one user-supplied part of a Redis key (a quota, axis or tenant name) so that no
 * value can collide with another or reach outside its place: every byte outside `[A-Za-z0-9_.~-]` is
 * percent-encoded as UTF-8 (`:` → `%3A`, `{` → `%7B`, `%` → `%25`, newline → `%0A`, `*` → `%2A`).
 * Percent-encoding is injective, and encoded parts contain neither `:` (the separator) nor braces
 * (which would move the Redis Cluster hash tag).
 * @throws TypeError for a string with a lone surrogate (not encodable as UTF-8 without loss).
 */
export function encodeKeyPart(part: string): string {
  if (SAFE.test(part)) return part;
  let encoded: string;
  try {
    encoded = encodeURIComponent(part);
  } catch {
    throw new TypeError(
      `limits: a quota key must be a well-formed string (no lone surrogate), got ${JSON.stringify(part)}`,
    );
  }
  return encoded.replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

const SAFE = /^[A-Za-z0-9_.~-]*$/;
