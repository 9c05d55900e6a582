/**
 * Encodes a user-supplied key part so it cannot reach another key: every character outside
 * `[A-Za-z0-9_.-]` (`{`, `}`, `:`, `%` included) becomes `%XX` per UTF-8 byte.
 */
export function encodeKeyPart(part: string): string {
  return encodeURIComponent(part).replace(
    /[!'()*~]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * @internal The budget's Redis names: all share the hash tag `{<encoded name>}`, so a script touches
 * one Cluster slot. `prefix` has no braces (checked), and the encoded name has none either.
 */
export function budgetKeys(
  prefix: string,
  name: string,
): { leases: string; used: string; channel: string } {
  const base = `${prefix}{${encodeKeyPart(name)}}`;
  return { leases: `${base}:leases`, used: `${base}:used`, channel: `${base}:released` };
}
