import { describe, expect, test } from 'vitest';
import { CostEstimator, type CostEstimatorOptions } from '../src/fairness/CostEstimator.js';
import { DeficitRoundRobin, type FairnessOptions } from '../src/fairness/DeficitRoundRobin.js';
import { PriorityAging, type PriorityOptions } from '../src/queue/PriorityAging.js';

type Row = [
  label: string,
  build: () => unknown,
  error: typeof TypeError | typeof RangeError,
  message: RegExp,
];

const drr =
  (o: unknown, largest = 10) =>
  () =>
    new DeficitRoundRobin(o as FairnessOptions, largest);
const prio = (o: unknown) => () => new PriorityAging(o as PriorityOptions);
const costs = (o: unknown) => () => new CostEstimator(o as CostEstimatorOptions);

const rows: Row[] = [
  ['fairness null', drr(null), TypeError, /option "fairness" must be an object, got null/],
  [
    'fairness.quantum 0',
    drr({ quantum: 0 }),
    RangeError,
    /"fairness.quantum" must be a number in \(0, Infinity\), got 0/,
  ],
  [
    'fairness.quantum NaN',
    drr({ quantum: Number.NaN }),
    TypeError,
    /"fairness.quantum" must be .*got NaN/,
  ],
  [
    'fairness.quantum Infinity',
    drr({ quantum: Infinity }),
    RangeError,
    /"fairness.quantum" must be .*got Infinity/,
  ],
  [
    'fairness.quantum "2"',
    drr({ quantum: '2' }),
    TypeError,
    /"fairness.quantum" must be .*got "2"/,
  ],
  [
    'fairness.maxCredit below the largest charge',
    drr({ maxCredit: 3 }, 8),
    RangeError,
    /"fairness.maxCredit" must be a number in \[8, Infinity\), got 3/,
  ],
  [
    'fairness.maxCredit 0 without a largest charge',
    drr({ maxCredit: 0 }, Infinity),
    RangeError,
    /"fairness.maxCredit" must be a number in \(0, Infinity\), got 0/,
  ],
  [
    'fairness.maxCredit "5"',
    drr({ maxCredit: '5' }),
    TypeError,
    /"fairness.maxCredit" must be .*got "5"/,
  ],
  [
    'fairness.maxQueuedPerTenant 0',
    drr({ maxQueuedPerTenant: 0 }),
    RangeError,
    /"fairness.maxQueuedPerTenant" must be an integer in \[1, Infinity\], got 0/,
  ],
  [
    'fairness.maxQueuedPerTenant 1.5',
    drr({ maxQueuedPerTenant: 1.5 }),
    RangeError,
    /"fairness.maxQueuedPerTenant" must be an integer.*got 1.5/,
  ],
  ['priority null', prio(null), TypeError, /option "priority" must be an object, got null/],
  [
    'priority.agingPerSecond -1',
    prio({ agingPerSecond: -1 }),
    RangeError,
    /"priority.agingPerSecond" must be .*got -1/,
  ],
  [
    'priority.agingPerSecond Infinity',
    prio({ agingPerSecond: Infinity }),
    RangeError,
    /"priority.agingPerSecond" must be .*got Infinity/,
  ],
  [
    'priority.maxAgedPriority NaN',
    prio({ maxAgedPriority: Number.NaN }),
    TypeError,
    /"priority.maxAgedPriority" must be .*got NaN/,
  ],
  [
    'priority.maxAgedPriority -Infinity',
    prio({ maxAgedPriority: -Infinity }),
    RangeError,
    /"priority.maxAgedPriority" must be .*got -Infinity/,
  ],
  [
    'priority.minShare 1',
    prio({ minShare: 1 }),
    RangeError,
    /"priority.minShare" must be a number in \[0, 1\), got 1/,
  ],
  [
    'priority.minShare "0.5"',
    prio({ minShare: '0.5' }),
    TypeError,
    /"priority.minShare" must be .*got "0.5"/,
  ],
  [
    'CostEstimator factor 0',
    costs({ factor: 0 }),
    RangeError,
    /"costs.factor" must be a number in \(0, 1\], got 0/,
  ],
  [
    'CostEstimator maxKinds 0',
    costs({ maxKinds: 0 }),
    RangeError,
    /"costs.maxKinds" must be an integer in \[1, Infinity\), got 0/,
  ],
];

describe('fair queue, priority and cost estimator options', () => {
  for (const [label, build, type, message] of rows) {
    test(`${label} is refused with a ${type.name} naming the option`, () => {
      expect(build).toThrow(type);
      expect(build).toThrow(message);
    });
  }
});
