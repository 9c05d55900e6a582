/** @internal What the reach computation needs of a partition. */
export interface ReachInput {
  /** Whole units, or a fraction in (0, 1) of the total. */
  reserved: number;
  maxBorrow: number;
}

/** Totals scanned for a partition's largest reach when fractional reserves make it non-monotone. */
const REACH_SCAN = 10_000;

/** @internal Units `reserved` stands for at `total` (a fraction of it is rounded down). */
export function reservedAt(reserved: number, total: number): number {
  return reserved > 0 && reserved < 1 ? Math.floor(reserved * total) : reserved;
}

/** @internal The shared pool at `total`: what the reserves leave. */
export function sharedAt(parts: readonly ReachInput[], total: number): number {
  let reserved = 0;
  for (const p of parts) reserved += reservedAt(p.reserved, total);
  return Math.max(0, total - reserved);
}

/**
 * @internal The most units each partition can ever have, at any total up to `maxTotal`: its reserve
 * plus what it may borrow (`maxBorrow`, bounded by the shared pool). Without fractional reserves that
 * grows with the total; with them, rounding makes it wobble, so the largest totals are scanned.
 */
export function maxReach(parts: readonly ReachInput[], maxTotal: number): number[] {
  let fractions = 0;
  let fractional = 0;
  let absolute = 0;
  for (const p of parts) {
    if (p.reserved > 0 && p.reserved < 1) {
      fractions += p.reserved;
      fractional++;
    } else absolute += p.reserved;
  }
  if (maxTotal === Infinity) {
    // The shared pool grows without bound unless the fractions take all of it (then the rounding
    // leftovers, fewer than one unit per fractional partition, are all that is shared).
    const sharedBound = fractions < 1 ? Infinity : Math.max(0, fractional - 1 - absolute);
    return parts.map((p) =>
      p.reserved > 0 && p.reserved < 1 ? Infinity : p.reserved + Math.min(p.maxBorrow, sharedBound),
    );
  }
  const reach = parts.map(() => 0);
  const lowest = fractional === 0 ? maxTotal : Math.max(0, maxTotal - REACH_SCAN);
  for (let total = maxTotal; total >= lowest; total--) {
    const shared = sharedAt(parts, total);
    parts.forEach((p, i) => {
      reach[i] = Math.max(
        reach[i] as number,
        reservedAt(p.reserved, total) + Math.min(p.maxBorrow, shared),
      );
    });
  }
  return reach;
}
