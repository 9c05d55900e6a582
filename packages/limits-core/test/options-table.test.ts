import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { AimdLimit } from '../src/algorithms/AimdLimit.js';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import { ProbeSchedule } from '../src/algorithms/ProbeSchedule.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';
import { WindowedLimit } from '../src/algorithms/WindowedLimit.js';
import { CostEstimator } from '../src/fairness/CostEstimator.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { AcquireOptions, LimiterOptions } from '../src/limiter/options.js';
import { RetryBudget } from '../src/retry/RetryBudget.js';
import { RetryPolicy } from '../src/retry/RetryPolicy.js';
import { FakeClock, flush } from './support/FakeClock.js';

/**
 * The README's options tables are the contract: each table sits between
 * `<!-- options-table: <name> -->` and `<!-- end options-table -->`, with the columns
 * option | type | range | default | meaning. Per row this checks that the option exists (a misspelt
 * key is refused with that option as the nearest name), that every value out of the documented range
 * and a value of the wrong type are refused with a message naming the option, that `Infinity` is
 * accepted exactly when the range says so, and that a literal default is accepted.
 */
interface Row {
  table: string;
  option: string;
  type: string;
  range: string;
  default: string;
}

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

function parseTables(text: string): Row[] {
  const rows: Row[] = [];
  const re = /<!-- options-table: (\S+) -->([\s\S]*?)<!-- end options-table -->/g;
  for (const m of text.matchAll(re)) {
    const table = m[1] as string;
    const lines = (m[2] as string).split('\n').filter((l) => l.trim().startsWith('|'));
    for (const line of lines.slice(2)) {
      const cells = line
        .trim()
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim().replace(/\\\|/g, '|'));
      const [option, type, range, def] = cells as [string, string, string, string];
      rows.push({ table, option: option.replace(/`/g, ''), type, range, default: def });
    }
  }
  return rows;
}

type Build = (options: Record<string, unknown>) => unknown;
interface Target {
  /** Prefix of the option's name in messages. */
  prefix: string;
  build: Build;
}

const limiterTarget: Target = {
  prefix: '',
  build: (o) => new Limiter(o as LimiterOptions),
};
const vegas: Target = { prefix: 'vegas.', build: (o) => new VegasLimit(o) };
const gradient: Target = { prefix: 'gradient.', build: (o) => new GradientLimit(o) };
const aimd: Target = { prefix: 'aimd.', build: (o) => new AimdLimit(o) };

const targets: Record<string, Target[]> = {
  Limiter: [limiterTarget],
  bounds: [vegas, gradient, aimd],
  VegasLimit: [vegas],
  GradientLimit: [gradient],
  NoLoadRtt: [{ prefix: 'probe.', build: (o) => new ProbeSchedule(o) }, vegas, gradient],
  AimdLimit: [aimd],
  WindowedLimit: [{ prefix: 'windowed.', build: (o) => new WindowedLimit(new AimdLimit(), o) }],
  CostEstimator: [{ prefix: 'costs.', build: (o) => new CostEstimator(o) }],
  RetryPolicy: [{ prefix: '', build: (o) => new RetryPolicy(o) }],
  RetryBudget: [{ prefix: '', build: (o) => new RetryBudget(o) }],
};

/** `{ a: { b: value } }` for the path `a.b`. */
function at(path: string, value: unknown): Record<string, unknown> {
  const parts = path.split('.');
  let o: Record<string, unknown> = { [parts.pop() as string]: value };
  while (parts.length > 0) o = { [parts.pop() as string]: o };
  return o;
}

/** The path with its last segment misspelt (last letter dropped). */
function misspelt(path: string): string {
  const parts = path.split('.');
  const last = parts.pop() as string;
  return [...parts, last.slice(0, -1)].join('.');
}

/** Values just outside the documented range. */
function outOfRange(row: Row): number[] {
  const range = row.range.replace(/`/g, '');
  const integer = /integer/.test(row.type) || /integer/.test(range);
  const values: number[] = [];
  const interval = /^([[(])\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)\s*([\])])/.exec(range);
  const bound = /^(≥|>)\s*(-?[\d.]+)/.exec(range);
  if (interval !== null) {
    const lo = Number(interval[2]);
    const hi = Number(interval[3]);
    values.push(interval[1] === '[' ? lo - 1 : lo);
    values.push(interval[4] === ']' ? hi + 0.5 : hi);
    if (integer) values.push(lo + 0.5);
  } else if (bound !== null) {
    const lo = Number(bound[2]);
    values.push(bound[1] === '≥' ? lo - 1 : lo);
    if (integer) values.push(lo + 1.5);
  }
  return values;
}

/** The documented type without function signatures (`(limit) => number` is a function, not a number). */
const plainType = (row: Row) => row.type.replace(/\([^)]*\)\s*=>\s*\w+/g, 'function');

/** Whether the option takes a number. */
const numeric = (row: Row) => /number|integer/.test(plainType(row));

/** A value of the wrong type for the documented type. */
function wrongType(row: Row): unknown {
  if (numeric(row)) return '1';
  if (/'[^']*'|string/.test(row.type)) return 5;
  return 'x';
}

/** The literal default (`20`, `'fifo'`, `true`), if the default cell is only that. */
function literalDefault(row: Row): { value: unknown } | undefined {
  const m = /^`([^`]+)`$/.exec(row.default);
  if (m === null) return undefined;
  const text = m[1] as string;
  if (/^-?[\d.]+$/.test(text) || text === 'Infinity') return { value: Number(text) };
  if (text === 'true' || text === 'false') return { value: text === 'true' };
  if (/^'[^']*'$/.test(text)) return { value: text.slice(1, -1) };
  return undefined;
}

const quote = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const rows = parseTables(readme);

describe('the README options tables', () => {
  test('list every constructor table and the acquire table', () => {
    const tables = new Set(rows.map((r) => r.table));
    for (const name of [...Object.keys(targets), 'acquire']) expect(tables).toContain(name);
    expect(rows.length).toBeGreaterThan(60);
  });

  // Bad input: a test per row of every constructor options table
  for (const row of rows.filter((r) => r.table !== 'acquire')) {
    for (const target of targets[row.table] ?? []) {
      const name = `${target.prefix}${row.option}`;
      test(`${row.table} row "${row.option}" exists and its bad values are refused naming "${name}"`, () => {
        // Exists: a misspelling is refused with this option as the nearest valid name.
        const typo = misspelt(row.option);
        expect(() => target.build(at(typo, 1))).toThrow(
          new RegExp(`did you mean "${quote(`${target.prefix}${row.option}`)}"`),
        );
        // A wrong type is a TypeError naming the option.
        const bad = wrongType(row);
        expect(() => target.build(at(row.option, bad)), `${name}: ${String(bad)}`).toThrow(
          TypeError,
        );
        expect(() => target.build(at(row.option, bad))).toThrow(`"${name}`);
        // Values out of the documented range are RangeErrors naming the option.
        for (const v of outOfRange(row)) {
          expect(() => target.build(at(row.option, v)), `${name}: ${v}`).toThrow(RangeError);
          expect(() => target.build(at(row.option, v))).toThrow(`"${name}`);
        }
        // Enumerated strings: any other string is a RangeError.
        if (/'[^']*'/.test(row.type) && !/number/.test(row.type)) {
          expect(() => target.build(at(row.option, 'nope'))).toThrow(RangeError);
        }
        // Infinity is accepted exactly when the range says so.
        if (numeric(row)) {
          const build = () => target.build(at(row.option, Infinity));
          if (/or `?Infinity/.test(row.range)) expect(build, `${name}: Infinity`).not.toThrow();
          else if (!/^any/.test(row.range)) expect(build, `${name}: Infinity`).toThrow(RangeError);
        }
        const d = literalDefault(row);
        if (d !== undefined) expect(() => target.build(at(row.option, d.value))).not.toThrow();
      });
    }
  }
});

/** What a queued `acquire(options)` does within a few microtasks: the error, or `'pending'`/`'granted'`. */
async function acquireOutcome(options: Record<string, unknown>): Promise<unknown> {
  const limiter = new Limiter({ limit: 1, maxQueued: 10, priority: {}, clock: new FakeClock() });
  limiter.tryAcquire();
  let promise: Promise<unknown>;
  try {
    promise = limiter.acquire(options as AcquireOptions);
  } catch (error) {
    return error;
  }
  let outcome: unknown = 'pending';
  promise.then(
    () => {
      outcome = 'granted';
    },
    (error) => {
      outcome = error;
    },
  );
  await flush();
  return outcome;
}

describe('the README acquire options table', () => {
  // Bad input: a test per row of the acquire options table
  for (const row of rows.filter((r) => r.table === 'acquire')) {
    test(`acquire row "${row.option}": a wrong type and values out of range are refused naming it`, async () => {
      const bad = row.option === 'signal' ? { aborted: 'no' } : wrongType(row);
      const e = await acquireOutcome(at(row.option, bad));
      expect(e, `${row.option}: ${String(bad)}`).toBeInstanceOf(TypeError);
      expect((e as Error).message).toContain(`"${row.option}"`);
      for (const v of outOfRange(row)) {
        const r = await acquireOutcome(at(row.option, v));
        expect(r, `${row.option}: ${v}`).toBeInstanceOf(RangeError);
        expect((r as Error).message).toContain(`"${row.option}"`);
      }
    });
    test(`acquire row "${row.option}" exists (a misspelling is refused with it as the nearest name)`, async () => {
      const e = await acquireOutcome(at(misspelt(row.option), 1));
      expect((e as Error).message).toMatch(new RegExp(`did you mean "${quote(row.option)}"`));
    });
  }
});
