import { describe, expect, it } from 'vitest';
import { parseModel } from '../src/model/Model.js';
import { ModelDownstream } from '../src/model/ModelDownstream.js';
import { modelArrivals } from '../src/model/modelArrivals.js';

const base = {
  durationMs: 1_000,
  arrivals: { pattern: 'constant', ratePerS: 10 },
  downstream: { baseMs: 50 },
};
const withDownstream = (downstream: Record<string, unknown>) => ({
  ...base,
  downstream: { baseMs: 50, ...downstream },
});

describe('parseModel', () => {
  it('fills in the defaults of a minimal model', () => {
    expect(parseModel(base)).toEqual({
      name: 'model',
      durationMs: 1_000,
      arrivals: { pattern: 'constant', ratePerS: 10 },
      downstream: {
        baseMs: 50,
        knee: Number.POSITIVE_INFINITY,
        growth: 1,
        jitter: { kind: 'none' },
        errorRate: 0,
        overloadRate: 0,
        spikes: [],
        capacityChanges: [],
      },
      criticality: undefined,
      budgetMs: Number.POSITIVE_INFINITY,
      tenants: 0,
    });
  });

  it.each([
    [
      { ...base, durationMs: -1 },
      RangeError,
      /option "durationMs" must be a number in \(0, 1000000000\], got -1/,
    ],
    [
      { ...base, durationMs: 'NaN' },
      TypeError,
      /option "durationMs" must be a number .* got "NaN"/,
    ],
    [{ ...base, durationMs: undefined }, TypeError, /model field "durationMs" is required/],
    [
      { ...base, duration: 5 },
      TypeError,
      /unknown option "duration" for a lab model; did you mean "durationMs"\?/,
    ],
    [
      { ...base, arrivals: { pattern: 'constant', ratePerS: 0 } },
      RangeError,
      /"arrivals.ratePerS" must be a number in \(0, 1000000\], got 0/,
    ],
    [
      { ...base, arrivals: { pattern: 'sine', ratePerS: 1 } },
      RangeError,
      /"arrivals.pattern" must be one of "constant", "poisson", "bursts", "steps", got "sine"/,
    ],
    [
      { ...base, arrivals: { pattern: 'bursts', ratePerS: 1 } },
      TypeError,
      /unknown option "arrivals.ratePerS" for a lab model with arrivals.pattern "bursts"/,
    ],
    [
      { ...base, arrivals: { pattern: 'bursts', size: 2.5, everyMs: 100 } },
      RangeError,
      /"arrivals.size" must be an integer/,
    ],
    [
      { ...base, arrivals: { pattern: 'steps', steps: [] } },
      RangeError,
      /"arrivals.steps" must hold at least one step/,
    ],
    [
      {
        ...base,
        arrivals: {
          pattern: 'steps',
          steps: [
            { fromMs: 0, ratePerS: 1 },
            { fromMs: 0, ratePerS: 2 },
          ],
        },
      },
      RangeError,
      /"arrivals.steps\[1\].fromMs" must be a number in \(0, 1000\], got 0/,
    ],
    [{ ...base, arrivals: null }, TypeError, /model field "arrivals" must be an object, got null/],
    [
      withDownstream({ baseMs: -5 }),
      RangeError,
      /"downstream.baseMs" must be a number in \[0, 3600000\], got -5/,
    ],
    [
      withDownstream({ knee: 0 }),
      RangeError,
      /"downstream.knee" must be a number in \[1, 1000000\]/,
    ],
    [
      withDownstream({ growth: Number.NaN }),
      TypeError,
      /"downstream.growth" must be a number in \[0, 10\], got NaN/,
    ],
    [
      withDownstream({ errorRate: 0.6, overloadRate: 0.6 }),
      RangeError,
      /"downstream.errorRate" \+ "downstream.overloadRate" must be ≤ 1, got 0.6 \+ 0.6/,
    ],
    [
      withDownstream({ errorRate: '0.1' }),
      TypeError,
      /"downstream.errorRate" must be a number in \[0, 1\], got "0.1"/,
    ],
    [
      withDownstream({ jitter: { kind: 'uniform', sigma: 1 } }),
      TypeError,
      /unknown option "downstream.jitter.sigma" .* did you mean "downstream.jitter.kind"\?|unknown option "downstream.jitter.sigma"/,
    ],
    [
      withDownstream({ jitter: { kind: 'lognormal', sigma: 4 } }),
      RangeError,
      /"downstream.jitter.sigma" must be a number in \[0, 3\], got 4/,
    ],
    [
      withDownstream({ spikes: [{ fromMs: 100, toMs: 50, latencyMs: 10 }] }),
      RangeError,
      /"downstream.spikes\[0\].toMs" must be a number in \(100, 1000000000\], got 50/,
    ],
    [
      withDownstream({ spikes: [{ fromMs: 0, toMs: 50 }] }),
      TypeError,
      /"downstream.spikes\[0\]" must give one of "latencyFactor" and "latencyMs", not neither/,
    ],
    [
      withDownstream({ spikes: [{ fromMs: 0, toMs: 50, latencyMs: 1, latencyFactor: 2 }] }),
      TypeError,
      /not both/,
    ],
    [
      withDownstream({ spikes: [{ fromMs: 0, toMs: 50, latencyFactor: -2 }] }),
      RangeError,
      /"downstream.spikes\[0\].latencyFactor" must be a number in \(0, 10000\]/,
    ],
    [
      withDownstream({ spikes: { fromMs: 0 } }),
      TypeError,
      /"downstream.spikes" must be an array, got an object/,
    ],
    [
      withDownstream({ capacityChanges: [{ atMs: 2_000, knee: 5 }] }),
      RangeError,
      /"downstream.capacityChanges\[0\].atMs" must be a number in \[0, 1000\], got 2000/,
    ],
    [
      { ...base, criticality: { critical: 1, urgent: 1 } },
      TypeError,
      /unknown option "criticality.urgent"/,
    ],
    [
      { ...base, criticality: { critical: 0 } },
      RangeError,
      /"criticality" must give at least one share > 0/,
    ],
    [
      { ...base, budgetMs: 0 },
      RangeError,
      /"budgetMs" must be a number in \(0, 1000000000\], got 0/,
    ],
    [
      { ...base, tenants: 1.5 },
      RangeError,
      /"tenants" must be an integer in \[1, 1000000\], got 1.5/,
    ],
    [[base], TypeError, /model field "" must be an object, got an array/],
  ])('refuses a hostile model (%#)', (model, Kind, message) => {
    expect(() => parseModel(model)).toThrow(Kind);
    expect(() => parseModel(model)).toThrow(message);
  });
});

describe('ModelDownstream', () => {
  const downstream = (d: Record<string, unknown>) =>
    new ModelDownstream(parseModel(withDownstream(d)).downstream);
  const never = () => 0.5;

  it('grows latency past the knee as base × (n / knee) ^ growth', () => {
    const d = downstream({ baseMs: 10, knee: 4, growth: 2 });
    expect(d.call(0, 1, never).serviceMs).toBe(10);
    expect(d.call(0, 4, never).serviceMs).toBe(10);
    expect(d.call(0, 8, never).serviceMs).toBe(40);
  });

  it('follows spikes (absolute or a factor) and capacity changes at their times', () => {
    const d = downstream({
      baseMs: 10,
      knee: 10,
      spikes: [
        { fromMs: 100, toMs: 200, latencyMs: 300 },
        { fromMs: 400, toMs: 500, latencyFactor: 3, errorRate: 1 },
      ],
      capacityChanges: [{ atMs: 600, knee: 2 }],
    });
    expect(d.call(99, 1, never)).toEqual({ serviceMs: 10, outcome: 'success' });
    expect(d.call(100, 1, never)).toEqual({ serviceMs: 300, outcome: 'success' });
    expect(d.call(200, 1, never)).toEqual({ serviceMs: 10, outcome: 'success' });
    expect(d.call(450, 1, never)).toEqual({ serviceMs: 30, outcome: 'failure' });
    expect(d.call(599, 4, never).serviceMs).toBe(10);
    expect(d.call(600, 4, never).serviceMs).toBe(20);
    expect(d.spikes).toEqual([
      { fromMs: 100, toMs: 200 },
      { fromMs: 400, toMs: 500 },
    ]);
  });

  it('answers failures and overloads at their rates, with jitter of mean 1', () => {
    let seed = 1;
    const random = () => {
      seed = (seed * 16807) % 2147483647;
      return (seed - 1) / 2147483646;
    };
    for (const jitter of [
      { kind: 'uniform', spread: 0.5 },
      { kind: 'lognormal', sigma: 0.5 },
    ]) {
      const d = downstream({ baseMs: 100, errorRate: 0.1, overloadRate: 0.2, jitter });
      const counts = { success: 0, failure: 0, overload: 0 };
      let sum = 0;
      const n = 20_000;
      for (let i = 0; i < n; i++) {
        const c = d.call(0, 1, random);
        counts[c.outcome]++;
        sum += c.serviceMs;
      }
      expect(counts.failure / n).toBeCloseTo(0.1, 1);
      expect(counts.overload / n).toBeCloseTo(0.2, 1);
      expect(sum / n / 100).toBeCloseTo(1, 1);
    }
  });
});

describe('modelArrivals', () => {
  const arrivals = (model: Record<string, unknown>, seed = 1) => [
    ...modelArrivals(parseModel({ ...base, ...model }), seed),
  ];

  it('spaces a constant rate evenly over the duration', () => {
    const a = arrivals({});
    expect(a.map((x) => x.atMs)).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900]);
  });

  it('repeats the same requests each time it is iterated, and others for another seed', () => {
    const model = {
      durationMs: 10_000,
      arrivals: { pattern: 'poisson', ratePerS: 100 },
      criticality: { critical: 1, sheddable: 1 },
      tenants: 3,
      budgetMs: 500,
    };
    const one = arrivals(model, 5);
    expect(arrivals(model, 5)).toEqual(one);
    expect(arrivals(model, 6)).not.toEqual(one);
    // A Poisson process of 100/s over 10 s: about 1,000 (±10 % is over 3 standard deviations).
    expect(one.length).toBeGreaterThan(900);
    expect(one.length).toBeLessThan(1_100);
    expect(one.every((x, i) => i === 0 || x.atMs >= (one[i - 1]?.atMs ?? 0))).toBe(true);
    expect(new Set(one.map((x) => x.criticality))).toEqual(new Set(['critical', 'sheddable']));
    expect(new Set(one.map((x) => x.key))).toEqual(new Set(['t0', 't1', 't2']));
    expect(one.every((x) => x.budgetMs === 500)).toBe(true);
  });

  it('sends bursts and steps', () => {
    expect(
      arrivals({ arrivals: { pattern: 'bursts', size: 2, everyMs: 400 } }).map((x) => x.atMs),
    ).toEqual([0, 0, 400, 400, 800, 800]);
    expect(
      arrivals({
        arrivals: {
          pattern: 'steps',
          steps: [
            { fromMs: 0, ratePerS: 5 },
            { fromMs: 500, ratePerS: 0 },
            { fromMs: 800, ratePerS: 10 },
          ],
        },
      }).map((x) => x.atMs),
    ).toEqual([0, 200, 400, 800, 900]);
  });
});
