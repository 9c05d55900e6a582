/**
 * The Pareto front of points on two axes, both to maximise: the points no other point beats on one
 * axis without losing on the other. Returned sorted by the first axis, best first; ties keep input
 * order. Points with a non-number axis are left out.
 */
export function paretoFront<T>(
  points: readonly T[],
  x: (p: T) => number,
  y: (p: T) => number,
): T[] {
  const usable = points
    .map((p, i) => ({ p, i, x: x(p), y: y(p) }))
    .filter((q) => !Number.isNaN(q.x) && !Number.isNaN(q.y));
  usable.sort((a, b) => b.x - a.x || b.y - a.y || a.i - b.i);
  const front: T[] = [];
  let bestY = Number.NEGATIVE_INFINITY;
  for (const q of usable) {
    if (q.y > bestY) {
      front.push(q.p);
      bestY = q.y;
    }
  }
  return front;
}
