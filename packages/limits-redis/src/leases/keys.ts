import { encodeKeyPart } from '../quota/encodeKeyPart.js';

/**
 * @internal The pool's Redis names, `<prefix>:{<name>}:leases`, `…:used` and the channel
 * `…:released`: all share the hash tag `{<name>}` (percent-encoded, so it has no braces and no other
 * pool's name can reach it), so a script touches one Cluster slot. `prefix` has no braces (checked).
 * @throws TypeError for a name with a lone surrogate.
 */
export function poolKeys(
  prefix: string,
  name: string,
): { leases: string; used: string; channel: string } {
  const base = `${prefix}:{${encodeKeyPart(name)}}`;
  return { leases: `${base}:leases`, used: `${base}:used`, channel: `${base}:released` };
}
