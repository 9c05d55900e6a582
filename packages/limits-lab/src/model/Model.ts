import { CRITICALITIES, type Criticality } from 'limits-core';
import { checkKeys, checkNumber, checkOneOf, checkString, formatValue } from 'limits-core/internal';

/** How requests arrive (see {@link Model.arrivals}). */
export type ArrivalPattern =
  /** `ratePerS` requests per second, evenly spaced. */
  | { pattern: 'constant'; ratePerS: number }
  /** `ratePerS` on average, exponential gaps (a Poisson process). */
  | { pattern: 'poisson'; ratePerS: number }
  /** `size` requests at once every `everyMs`, the first burst at 0. */
  | { pattern: 'bursts'; size: number; everyMs: number }
  /** Evenly spaced at `ratePerS` from each step's `fromMs` to the next step (the first from 0). */
  | { pattern: 'steps'; steps: Array<{ fromMs: number; ratePerS: number }> };

/** A span where the downstream is sick. */
export interface ModelSpike {
  /** Start, in ms since the run's start. */
  fromMs: number;
  /** End, in ms (> `fromMs`). */
  toMs: number;
  /** Base latency multiplied by this during the spike (give this or `latencyMs`). */
  latencyFactor?: number;
  /** Base latency replaced by this during the spike, in ms (give this or `latencyFactor`). */
  latencyMs?: number;
  /** Error rate during the spike (default: the downstream's). */
  errorRate?: number;
  /** Overload (429) rate during the spike (default: the downstream's). */
  overloadRate?: number;
}

/** The downstream's behaviour (see {@link Model.downstream}). */
export interface ModelDownstreamSpec {
  /** Latency of one call with nothing else in flight, in ms. */
  baseMs: number;
  /** Calls in flight past which latency grows (`Infinity`: never). */
  knee: number;
  /** Latency = base × max(1, inflight / knee) ^ growth. */
  growth: number;
  /** Random spread of each call's latency around its mean. */
  jitter:
    | { kind: 'none' }
    | { kind: 'uniform'; spread: number }
    | { kind: 'lognormal'; sigma: number };
  /** Share of calls answered with an error (`failure`). */
  errorRate: number;
  /** Share of calls answered as overloaded (a 429: `overload`, a dropped sample for the limiter). */
  overloadRate: number;
  /** Scheduled spikes, sorted by start. */
  spikes: ModelSpike[];
  /** Changes of the knee at a time (capacity lost or regained), sorted by time. */
  capacityChanges: Array<{ atMs: number; knee: number }>;
}

/**
 * A modelled run: how requests arrive, how long, and how the downstream answers. Read one from a
 * JSON file with {@link loadModel}, or check an object with {@link parseModel}.
 */
export interface Model {
  /** A title for reports. */
  name: string;
  /** The run's length, in ms: requests arrive from 0 until then. */
  durationMs: number;
  /** How requests arrive. */
  arrivals: ArrivalPattern;
  /** How the downstream answers. */
  downstream: ModelDownstreamSpec;
  /** Share of requests at each criticality (normalised; none: every request `critical`, the default). */
  criticality: Partial<Record<Criticality, number>> | undefined;
  /** Each request's time budget, in ms (`Infinity`: none). */
  budgetMs: number;
  /** Requests carry one of this many tenant keys (`t0`, `t1`, ...), drawn uniformly (0: none). */
  tenants: number;
}

const TOP = [
  'name',
  'description',
  'durationMs',
  'arrivals',
  'downstream',
  'criticality',
  'budgetMs',
  'tenants',
] as const;
const DOWNSTREAM = [
  'baseMs',
  'knee',
  'growth',
  'jitter',
  'errorRate',
  'overloadRate',
  'spikes',
  'capacityChanges',
] as const;
const SPIKE = [
  'fromMs',
  'toMs',
  'latencyFactor',
  'latencyMs',
  'errorRate',
  'overloadRate',
] as const;
const WHERE = 'a lab model';
const MAX_MS = 1e9;
const RATE = { min: 0, minExclusive: true, max: 1_000_000 } as const;
const SHARE = { min: 0, max: 1 } as const;
const LATENCY = { min: 0, max: 3_600_000 } as const;

function required(name: string, value: unknown, range: Parameters<typeof checkNumber>[3]): number {
  if (value === undefined) {
    throw new TypeError(`limits: model field "${name}" is required`);
  }
  return checkNumber(name, value, 0, range);
}

function object(name: string, value: unknown, keys: readonly string[]): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(
      `limits: model field "${name}" must be an object, got ${formatValue(value)}`,
    );
  }
  checkKeys(WHERE, value, keys, name === '' ? '' : `${name}.`);
  return value as Record<string, unknown>;
}

function array(name: string, value: unknown): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new TypeError(
      `limits: model field "${name}" must be an array, got ${formatValue(value)}`,
    );
  }
  return value;
}

/**
 * Checks a model (as parsed from JSON) and fills in its defaults. Every field is checked; an error
 * names the field's path (`downstream.spikes[0].toMs`), what it allows and the value given.
 * @throws TypeError for a wrong type, a missing field or an unknown one (with the nearest valid
 *   name); RangeError for a value out of range.
 */
export function parseModel(json: unknown): Model {
  const top = object('', json, TOP);
  const name = checkString('name', top.name) ?? 'model';
  checkString('description', top.description);
  const durationMs = required('durationMs', top.durationMs, {
    min: 0,
    minExclusive: true,
    max: MAX_MS,
  });
  const arrivals = parseArrivals(top.arrivals, durationMs);
  const downstream = parseDownstream(top.downstream, durationMs);
  let criticality: Model['criticality'];
  if (top.criticality !== undefined) {
    const mix = object('criticality', top.criticality, CRITICALITIES);
    criticality = {};
    let sum = 0;
    for (const level of CRITICALITIES) {
      if (mix[level] === undefined) continue;
      const share = checkNumber(`criticality.${level}`, mix[level], 0, { min: 0, max: 1_000_000 });
      criticality[level] = share;
      sum += share;
    }
    if (!(sum > 0)) {
      throw new RangeError('limits: model field "criticality" must give at least one share > 0');
    }
  }
  return {
    name,
    durationMs,
    arrivals,
    downstream,
    criticality,
    budgetMs: checkNumber('budgetMs', top.budgetMs, Number.POSITIVE_INFINITY, {
      min: 0,
      minExclusive: true,
      max: MAX_MS,
      allowInfinity: true,
    }),
    tenants: checkNumber('tenants', top.tenants, 0, { min: 1, max: 1_000_000, integer: true }),
  };
}

function parseArrivals(value: unknown, durationMs: number): ArrivalPattern {
  const a = object('arrivals', value, ['pattern', 'ratePerS', 'size', 'everyMs', 'steps']);
  const pattern = checkOneOf('arrivals.pattern', a.pattern ?? null, 'constant', [
    'constant',
    'poisson',
    'bursts',
    'steps',
  ] as const);
  const allowed: Record<typeof pattern, string[]> = {
    constant: ['pattern', 'ratePerS'],
    poisson: ['pattern', 'ratePerS'],
    bursts: ['pattern', 'size', 'everyMs'],
    steps: ['pattern', 'steps'],
  };
  checkKeys(`${WHERE} with arrivals.pattern "${pattern}"`, a, allowed[pattern], 'arrivals.');
  switch (pattern) {
    case 'constant':
    case 'poisson':
      return { pattern, ratePerS: required('arrivals.ratePerS', a.ratePerS, RATE) };
    case 'bursts':
      return {
        pattern,
        size: required('arrivals.size', a.size, { min: 1, max: 1_000_000, integer: true }),
        everyMs: required('arrivals.everyMs', a.everyMs, { min: 1, max: MAX_MS }),
      };
    case 'steps': {
      const raw = array('arrivals.steps', a.steps);
      if (raw.length === 0) {
        throw new RangeError('limits: model field "arrivals.steps" must hold at least one step');
      }
      let previous = -1;
      const steps = raw.map((s, i) => {
        const step = object(`arrivals.steps[${i}]`, s, ['fromMs', 'ratePerS']);
        const fromMs = required(`arrivals.steps[${i}].fromMs`, step.fromMs, {
          min: previous,
          minExclusive: true,
          max: durationMs,
        });
        previous = fromMs;
        return {
          fromMs,
          ratePerS: checkNumber(`arrivals.steps[${i}].ratePerS`, step.ratePerS ?? null, 0, {
            min: 0,
            max: RATE.max,
          }),
        };
      });
      return { pattern, steps };
    }
  }
}

function parseDownstream(value: unknown, durationMs: number): ModelDownstreamSpec {
  const d = object('downstream', value, DOWNSTREAM);
  const errorRate = checkNumber('downstream.errorRate', d.errorRate, 0, SHARE);
  const overloadRate = checkNumber('downstream.overloadRate', d.overloadRate, 0, SHARE);
  checkShares('downstream', errorRate, overloadRate);
  const spikes = array('downstream.spikes', d.spikes).map((s, i) => {
    const at = `downstream.spikes[${i}]`;
    const spike = object(at, s, SPIKE);
    const fromMs = required(`${at}.fromMs`, spike.fromMs, { min: 0, max: durationMs });
    const toMs = required(`${at}.toMs`, spike.toMs, {
      min: fromMs,
      minExclusive: true,
      max: MAX_MS,
    });
    const out: ModelSpike = { fromMs, toMs };
    if ((spike.latencyFactor === undefined) === (spike.latencyMs === undefined)) {
      throw new TypeError(
        `limits: model field "${at}" must give one of "latencyFactor" and "latencyMs", not ${spike.latencyMs === undefined ? 'neither' : 'both'}`,
      );
    }
    if (spike.latencyFactor !== undefined) {
      out.latencyFactor = checkNumber(`${at}.latencyFactor`, spike.latencyFactor, 1, {
        min: 0,
        minExclusive: true,
        max: 10_000,
      });
    }
    if (spike.latencyMs !== undefined) {
      out.latencyMs = checkNumber(`${at}.latencyMs`, spike.latencyMs, 0, LATENCY);
    }
    if (spike.errorRate !== undefined) {
      out.errorRate = checkNumber(`${at}.errorRate`, spike.errorRate, 0, SHARE);
    }
    if (spike.overloadRate !== undefined) {
      out.overloadRate = checkNumber(`${at}.overloadRate`, spike.overloadRate, 0, SHARE);
    }
    checkShares(at, out.errorRate ?? errorRate, out.overloadRate ?? overloadRate);
    return out;
  });
  spikes.sort((a, b) => a.fromMs - b.fromMs);
  const capacityChanges = array('downstream.capacityChanges', d.capacityChanges).map((c, i) => {
    const at = `downstream.capacityChanges[${i}]`;
    const change = object(at, c, ['atMs', 'knee']);
    return {
      atMs: required(`${at}.atMs`, change.atMs, { min: 0, max: durationMs }),
      knee: required(`${at}.knee`, change.knee, { min: 1, max: 1_000_000, allowInfinity: true }),
    };
  });
  capacityChanges.sort((a, b) => a.atMs - b.atMs);
  return {
    baseMs: required('downstream.baseMs', d.baseMs, LATENCY),
    knee: checkNumber('downstream.knee', d.knee, Number.POSITIVE_INFINITY, {
      min: 1,
      max: 1_000_000,
      allowInfinity: true,
    }),
    growth: checkNumber('downstream.growth', d.growth, 1, { min: 0, max: 10 }),
    jitter: parseJitter(d.jitter),
    errorRate,
    overloadRate,
    spikes,
    capacityChanges,
  };
}

function checkShares(at: string, errorRate: number, overloadRate: number): void {
  if (errorRate + overloadRate > 1) {
    throw new RangeError(
      `limits: model fields "${at}.errorRate" + "${at}.overloadRate" must be ≤ 1, got ${errorRate} + ${overloadRate}`,
    );
  }
}

function parseJitter(value: unknown): ModelDownstreamSpec['jitter'] {
  if (value === undefined) return { kind: 'none' };
  const j = object('downstream.jitter', value, ['kind', 'spread', 'sigma']);
  const kind = checkOneOf('downstream.jitter.kind', j.kind ?? null, 'none', [
    'none',
    'uniform',
    'lognormal',
  ] as const);
  const keys = { none: ['kind'], uniform: ['kind', 'spread'], lognormal: ['kind', 'sigma'] };
  checkKeys(`${WHERE} with downstream.jitter.kind "${kind}"`, j, keys[kind], 'downstream.jitter.');
  if (kind === 'uniform') {
    return {
      kind,
      spread: required('downstream.jitter.spread', j.spread, {
        min: 0,
        max: 1,
        minExclusive: false,
      }),
    };
  }
  if (kind === 'lognormal') {
    return { kind, sigma: required('downstream.jitter.sigma', j.sigma, { min: 0, max: 3 }) };
  }
  return { kind };
}
