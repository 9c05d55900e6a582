/** A source of uniform numbers in [0, 1), injectable so probe and backoff jitter are reproducible. */
export type Random = () => number;

/**
 * A small seeded generator (mulberry32) for tests and simulations.
 * @param seed - any 32-bit integer; the same seed gives the same sequence.
 */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
