import { describe, expect, test } from 'vitest';
import type { LimitAlgorithm } from '../src/algorithms/LimitAlgorithm.js';
import {
  PartitionedLimiter,
  type PartitionedLimiterOptions,
} from '../src/partition/PartitionedLimiter.js';
import { prefixed } from '../src/partition/partitionOptions.js';

const algo = (limit: number, maxLimit?: number): LimitAlgorithm => ({
  limit,
  ...(maxLimit === undefined ? {} : { maxLimit }),
  update() {
    return limit;
  },
});

type Row = [
  label: string,
  options: unknown,
  error: typeof TypeError | typeof RangeError,
  message: RegExp,
];

const P = { a: {} };

/** One row per option of the constructor: what a user may get wrong, and the error it gets. */
const rows: Row[] = [
  ['no options', undefined, TypeError, /PartitionedLimiter options must be an object/],
  [
    'options that are a string',
    'x',
    TypeError,
    /PartitionedLimiter options must be an object, got "x"/,
  ],
  [
    'an unknown top-level key',
    { limit: 10, partitions: P, clok: {} },
    TypeError,
    /unknown option "clok" for PartitionedLimiter; did you mean "clock"\?/,
  ],
  [
    'limit missing',
    { partitions: P },
    TypeError,
    /PartitionedLimiter needs its total: "limit" \(an integer ≥ 1\) or "algorithm"/,
  ],
  [
    'limit as a string',
    { limit: '10', partitions: P },
    TypeError,
    /"limit" .* is a number.*got "10"/,
  ],
  [
    'limit 0',
    { limit: 0, partitions: P },
    RangeError,
    /"limit" must be an integer in \[1, Infinity\), got 0/,
  ],
  ['limit 1.5', { limit: 1.5, partitions: P }, RangeError, /"limit" must be an integer.*got 1.5/],
  ['limit NaN', { limit: Number.NaN, partitions: P }, TypeError, /"limit" must be .*got NaN/],
  [
    'limit Infinity',
    { limit: Infinity, partitions: P },
    RangeError,
    /"limit" must be .*got Infinity/,
  ],
  ['limit null', { limit: null, partitions: P }, TypeError, /"limit" .* is a number.*got null/],
  [
    'an algorithm as limit',
    { limit: algo(5), partitions: P },
    TypeError,
    /"limit" of PartitionedLimiter is a number .*"algorithm"/,
  ],
  ['algorithm {}', { algorithm: {}, partitions: P }, TypeError, /"algorithm.update" must be/],
  [
    'limit and algorithm',
    { limit: 5, algorithm: algo(5), partitions: P },
    TypeError,
    /either "limit" \(a fixed number\) or "algorithm", not both/,
  ],
  [
    'an algorithm whose limit is NaN',
    { algorithm: algo(Number.NaN), partitions: P },
    TypeError,
    /"algorithm.limit" must be .*got NaN/,
  ],
  [
    'an algorithm whose limit is negative',
    { algorithm: algo(-1), partitions: P },
    RangeError,
    /"algorithm.limit" must be .*got -1/,
  ],
  [
    'an algorithm whose maxLimit is negative',
    { algorithm: algo(5, -1), partitions: P },
    RangeError,
    /"algorithm.maxLimit" must be .*got -1/,
  ],
  [
    'partitions missing',
    { limit: 10 },
    TypeError,
    /"partitions" must be an object .*got undefined/,
  ],
  [
    'partitions as a string',
    { limit: 10, partitions: '5' },
    TypeError,
    /"partitions" must be an object, got "5"/,
  ],
  [
    'partitions as an array',
    { limit: 10, partitions: [{}] },
    TypeError,
    /"partitions" must be an object, got an array/,
  ],
  [
    'partitions null',
    { limit: 10, partitions: null },
    TypeError,
    /"partitions" must be an object, got null/,
  ],
  [
    'no partition',
    { limit: 10, partitions: {} },
    RangeError,
    /"partitions" must name at least one partition/,
  ],
  [
    'a partition that is null',
    { limit: 10, partitions: { a: null } },
    TypeError,
    /"partitions.a" must be an object, got null/,
  ],
  [
    'a partition that is a number',
    { limit: 10, partitions: { a: 3 } },
    TypeError,
    /"partitions.a" must be an object, got 3/,
  ],
  [
    'a misspelt partition key',
    { limit: 10, partitions: { a: { reserverd: 2 } } },
    TypeError,
    /unknown option "partitions.a.reserverd" for PartitionedLimiter; did you mean "partitions.a.reserved"\?/,
  ],
  [
    'a Limiter option a partition does not take',
    { limit: 10, partitions: { a: { probeSlots: 2 } } },
    TypeError,
    /unknown option "partitions.a.probeSlots"/,
  ],
  [
    'reserved -1',
    { limit: 10, partitions: { a: { reserved: -1 } } },
    RangeError,
    /"partitions.a.reserved" must be .*got -1/,
  ],
  [
    'reserved NaN',
    { limit: 10, partitions: { a: { reserved: Number.NaN } } },
    TypeError,
    /"partitions.a.reserved" must be .*got NaN/,
  ],
  [
    'reserved "2"',
    { limit: 10, partitions: { a: { reserved: '2' } } },
    TypeError,
    /"partitions.a.reserved" must be .*got "2"/,
  ],
  [
    'reserved Infinity',
    { limit: 10, partitions: { a: { reserved: Infinity } } },
    RangeError,
    /"partitions.a.reserved" must be .*got Infinity/,
  ],
  [
    'reserved 1.5',
    { limit: 10, partitions: { a: { reserved: 1.5 } } },
    RangeError,
    /"partitions.a.reserved" must be a whole number of units or a fraction in \(0, 1\), got 1.5/,
  ],
  [
    'maxBorrow -1',
    { limit: 10, partitions: { a: { maxBorrow: -1 } } },
    RangeError,
    /"partitions.a.maxBorrow" must be an integer in \[0, Infinity\], got -1/,
  ],
  [
    'maxBorrow NaN',
    { limit: 10, partitions: { a: { maxBorrow: Number.NaN } } },
    TypeError,
    /"partitions.a.maxBorrow" must be .*got NaN/,
  ],
  [
    'maxBorrow 1.5',
    { limit: 10, partitions: { a: { maxBorrow: 1.5 } } },
    RangeError,
    /"partitions.a.maxBorrow" must be an integer.*got 1.5/,
  ],
  [
    'maxBorrow "2"',
    { limit: 10, partitions: { a: { maxBorrow: '2' } } },
    TypeError,
    /"partitions.a.maxBorrow" must be .*got "2"/,
  ],
  [
    'reserves above a fixed total',
    { limit: 4, partitions: { a: { reserved: 3 }, b: { reserved: 2 } } },
    RangeError,
    /reserves of "partitions" add up to 5 units \(\+ fractions\), more than the total limit 4/,
  ],
  [
    'reserves above an adaptive total’s maxLimit',
    { algorithm: algo(4, 6), partitions: { a: { reserved: 4 }, b: { reserved: 3 } } },
    RangeError,
    /add up to 7 units \(\+ fractions\), more than the total limit 6 \(the algorithm's maxLimit\)/,
  ],
  [
    'fractions above 1',
    { limit: 10, partitions: { a: { reserved: 0.6 }, b: { reserved: 0.5 } } },
    RangeError,
    /fractional reserves of "partitions" add up to 1.1, more than 1/,
  ],
  [
    'a partition left with nothing (the others reserve the whole total)',
    { limit: 10, partitions: { a: { reserved: 10 }, b: {} } },
    RangeError,
    /partition "b" could never run a call: it has no reserve and the shared pool is empty/,
  ],
  [
    'a partition with no reserve and maxBorrow 0',
    { limit: 10, partitions: { a: { maxBorrow: 0 } } },
    RangeError,
    /partition "a" could never run a call: it has no reserve and "maxBorrow" is 0/,
  ],
  [
    'a partition’s maxQueued -1',
    { limit: 10, partitions: { a: { maxQueued: -1 } } },
    RangeError,
    /option "partitions.a.maxQueued" must be .*got -1/,
  ],
  [
    'a partition’s queueOrder "x"',
    { limit: 10, partitions: { a: { queueOrder: 'x' } } },
    RangeError,
    /option "partitions.a.queueOrder" must be one of/,
  ],
  [
    'clock 5',
    { limit: 10, partitions: P, clock: 5 },
    TypeError,
    /"clock" must be an object \(a Clock: now, setTimeout and clearTimeout functions\), got 5/,
  ],
  [
    'clock without now',
    { limit: 10, partitions: P, clock: {} },
    TypeError,
    /"clock\.now" must be a function, got undefined/,
  ],
  [
    'classify "x"',
    { limit: 10, partitions: P, classify: 'x' },
    TypeError,
    /"classify" must be a function, got "x"/,
  ],
  [
    'stallThresholdMs -1',
    { limit: 10, partitions: P, stallThresholdMs: -1 },
    RangeError,
    /"stallThresholdMs" must be .*got -1/,
  ],
  [
    'stallThresholdMs "5"',
    { limit: 10, partitions: P, stallThresholdMs: '5' },
    TypeError,
    /"stallThresholdMs" must be .*got "5"/,
  ],
];

describe('PartitionedLimiter options are checked at construction', () => {
  for (const [label, options, type, message] of rows) {
    test(`${label} is refused with a ${type.name} naming the option`, () => {
      const build = () => new PartitionedLimiter(options as PartitionedLimiterOptions);
      expect(build).toThrow(type);
      expect(build).toThrow(message);
    });
  }

  test('a partition whose options are undefined takes the defaults', () => {
    const b = new PartitionedLimiter({ limit: 4, partitions: { a: undefined as never } });
    expect(b.ledger().partitions.a).toMatchObject({ reserved: 0, running: 0 });
  });
});

describe('PartitionedLimiter methods check their arguments', () => {
  const b = new PartitionedLimiter({
    limit: 10,
    partitions: { core: { reserved: 2 }, search: {} },
  });

  test('partition() with a name that is not a string throws a TypeError', () => {
    expect(() => b.partition(5 as never)).toThrow(TypeError);
    expect(() => b.partition(5 as never)).toThrow(/a partition name must be a string, got 5/);
  });

  test('partition() with an unknown name throws a RangeError suggesting the nearest name', () => {
    expect(() => b.partition('cor')).toThrow(RangeError);
    expect(() => b.partition('cor')).toThrow(
      /unknown partition "cor"; partitions are "core", "search"; did you mean "core"\?/,
    );
  });

  test('run() in an unknown partition rejects (one channel) and never calls the task', async () => {
    let called = false;
    const result = b.run('nope', () => {
      called = true;
    });
    await expect(result).rejects.toThrow(/unknown partition "nope"/);
    await expect(b.run(undefined as never, () => 1)).rejects.toThrow(TypeError);
    expect(called).toBe(false);
    expect(b.ledger()).toMatchObject({ running: 0 });
  });
});

describe('a partition’s Limiter errors name the option by its full path', () => {
  test('the option, the hint and the owner are rewritten; the error class and cause are kept', () => {
    const original = new TypeError(
      'limits: unknown option "fairness.quantm" for Limiter; did you mean "fairness.quantum"?',
    );
    const error = prefixed(original, 'partitions.a.') as TypeError;
    expect(error).toBeInstanceOf(TypeError);
    expect(error.message).toBe(
      'limits: unknown option "partitions.a.fairness.quantm" for PartitionedLimiter; did you mean "partitions.a.fairness.quantum"?',
    );
    expect(error.cause).toBe(original);
    const other = new Error('boom');
    expect(prefixed(other, 'partitions.a.')).toBe(other);
  });
});
