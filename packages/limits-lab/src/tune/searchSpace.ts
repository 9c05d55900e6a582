import { seededRandom } from 'limits-core';

/** One tuned option: its values (a list, for a grid) or range (for a random search). */
type Dimension =
  | { key: string; kind: 'list'; values: string[] }
  | { key: string; kind: 'range'; lo: number; hi: number; integer: boolean };

/** A search space parsed by {@link parseSearchSpace}. */
export interface SearchSpace {
  /** The algorithm (and fixed options) every candidate shares, as a spec prefix. */
  algorithm: string;
  fixed: string[];
  dimensions: Dimension[];
  /** `grid` when every dimension is a list, else `random`. */
  mode: 'grid' | 'random';
  /** Candidates in the full grid (`Infinity` for a random search). */
  size: number;
}

/**
 * Parses a tuning spec: a configuration spec whose values may be alternatives `a|b|c` (a grid) or
 * ranges `lo..hi` (a random search: uniform, whole numbers when both ends are):
 * `vegas:maxLimit=50|100|200,smoothing=0.2..0.8,maxQueued=0|50,maxQueueWaitMs=100|500`.
 * @throws RangeError naming the part that is not understood.
 */
export function parseSearchSpace(spec: string): SearchSpace {
  const [algorithm, ...rest] = spec.split(':');
  if (algorithm === undefined || algorithm === '') {
    throw new RangeError(
      `limits-lab: tune spec "${spec}" must start with an algorithm, e.g. vegas:maxLimit=50|100`,
    );
  }
  const fixed: string[] = [];
  const dimensions: Dimension[] = [];
  const pairs = rest.join(':');
  for (const pair of pairs === '' ? [] : pairs.split(',')) {
    const eq = pair.indexOf('=');
    if (eq === -1) {
      throw new RangeError(
        `limits-lab: tune spec "${spec}": "${pair}" must be key=value, key=a|b|c or key=lo..hi`,
      );
    }
    const key = pair.slice(0, eq);
    const value = pair.slice(eq + 1);
    const range = /^(-?\d+(?:\.\d+)?)\.\.(-?\d+(?:\.\d+)?)$/.exec(value);
    if (range !== null) {
      const lo = Number(range[1]);
      const hi = Number(range[2]);
      if (!(hi > lo)) {
        throw new RangeError(
          `limits-lab: tune spec "${spec}": range of "${key}" must have lo < hi, got ${value}`,
        );
      }
      dimensions.push({
        key,
        kind: 'range',
        lo,
        hi,
        integer: Number.isInteger(lo) && Number.isInteger(hi),
      });
    } else if (value.includes('|')) {
      dimensions.push({ key, kind: 'list', values: value.split('|') });
    } else fixed.push(pair);
  }
  const mode = dimensions.every((d) => d.kind === 'list') ? 'grid' : 'random';
  const size =
    mode === 'grid'
      ? dimensions.reduce((n, d) => n * (d.kind === 'list' ? d.values.length : 1), 1)
      : Number.POSITIVE_INFINITY;
  return { algorithm, fixed, dimensions, mode, size };
}

/**
 * The candidates' specs: the whole grid when it holds at most `trials`, else `trials` distinct
 * points of it drawn with `seed`; for a random search, `trials` points drawn with `seed`. Whole
 * numbers for integer ranges, 3 significant digits otherwise (stable text).
 */
export function candidates(space: SearchSpace, trials: number, seed: number): string[] {
  const random = seededRandom(seed ^ 0x3c6ef372);
  const spec = (values: string[]) =>
    `${space.algorithm}${values.length + space.fixed.length === 0 ? '' : ':'}${[
      ...space.fixed,
      ...values.map((v, i) => `${(space.dimensions[i] as Dimension).key}=${v}`),
    ].join(',')}`;
  const dims = space.dimensions;
  if (space.mode === 'grid') {
    const all: string[] = [];
    const walk = (i: number, chosen: string[]) => {
      if (i === dims.length) {
        all.push(spec(chosen));
        return;
      }
      for (const v of (dims[i] as Extract<Dimension, { kind: 'list' }>).values)
        walk(i + 1, [...chosen, v]);
    };
    walk(0, []);
    if (all.length <= trials) return all;
    // A seeded partial shuffle: `trials` distinct grid points.
    for (let i = 0; i < trials; i++) {
      const j = i + Math.floor(random() * (all.length - i));
      [all[i], all[j]] = [all[j] as string, all[i] as string];
    }
    return all.slice(0, trials);
  }
  const out: string[] = [];
  for (let t = 0; t < trials; t++) {
    out.push(
      spec(
        dims.map((d) => {
          if (d.kind === 'list') return d.values[Math.floor(random() * d.values.length)] as string;
          const v = d.lo + random() * (d.hi - d.lo);
          return d.integer ? String(Math.round(v)) : String(Number(v.toPrecision(3)));
        }),
      ),
    );
  }
  return out;
}
