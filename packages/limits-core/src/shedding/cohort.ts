/**
 * @internal Cohorts: a caller's key (a user or account id) hashed into one of N buckets, so that the
 * admission threshold sheds whole cohorts (the same users) rather than a random share of every
 * user's calls. The hash is FNV-1a (32 bits) over the key's UTF-16 code units, seeded by the salt
 * and the current period, then finished with a multiply-xorshift so that keys differing only in
 * their last characters still spread over every bucket. Not cryptographic: a client that picks its
 * own key can pick its cohort, as it could pick its criticality.
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a of `text`, continuing from `seed`. */
function fnv1a(seed: number, text: string): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

/** The seed of one period: the salt and the period's index hashed together. */
export function periodSeed(salt: string, period: number): number {
  return fnv1a(FNV_OFFSET, `${salt}\u0000${period}`);
}

/** The cohort of `key` in `[0, cohorts)` for the period whose seed is `seed`. */
export function cohortOf(seed: number, key: string, cohorts: number): number {
  let h = fnv1a(seed, key);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  return (h >>> 0) % cohorts;
}
