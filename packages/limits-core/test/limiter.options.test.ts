import { describe, expect, test } from 'vitest';
import { AimdLimit } from '../src/algorithms/AimdLimit.js';
import { GradientLimit } from '../src/algorithms/GradientLimit.js';
import type { LimitAlgorithm } from '../src/algorithms/LimitAlgorithm.js';
import { ProbeSchedule } from '../src/algorithms/ProbeSchedule.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';
import { WindowedLimit } from '../src/algorithms/WindowedLimit.js';
import { CostEstimator } from '../src/fairness/CostEstimator.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { LimiterOptions } from '../src/limiter/options.js';
import { FakeClock } from './support/FakeClock.js';

/** Builds a Limiter from options the type system would refuse (as a JavaScript caller may pass). */
const make = (options: unknown) => () => new Limiter(options as LimiterOptions);

describe('Limiter options are checked at construction', () => {
  test.each([
    [{ maxQeued: 5 }, /unknown option "maxQeued" for Limiter; did you mean "maxQueued"\?/],
    [{ timout: 5 }, /unknown option "timout" for Limiter/],
    [
      { fairness: { quantun: 2 } },
      /unknown option "fairness.quantun" for Limiter; did you mean "fairness.quantum"\?/,
    ],
    [
      { priority: { agingPerSec: 2 } },
      /unknown option "priority.agingPerSec" for Limiter; did you mean "priority.agingPerSecond"\?/,
    ],
    [{ codel: { target: 5 } }, /unknown option "codel.target" for Limiter/],
  ])('an unknown key is a TypeError with the nearest valid name (%#)', (options, message) => {
    expect(make(options)).toThrow(TypeError);
    expect(make(options)).toThrow(message);
  });

  test.each([['maxLimit'], ['minLimit'], ['initialLimit']])(
    '%s given to the Limiter is refused with a pointer to the algorithm',
    (key) => {
      expect(make({ [key]: -1 })).toThrow(TypeError);
      expect(make({ [key]: -1 })).toThrow(
        new RegExp(`unknown option "${key}" for Limiter.*algorithm: new`),
      );
    },
  );

  test.each([null, false, 0, '', true, 5, 'yes', [[]]])(
    'fairness: %j is a TypeError saying it must be an object',
    (value) => {
      expect(make({ fairness: value })).toThrow(TypeError);
      expect(make({ fairness: value })).toThrow(/option "fairness" must be an object/);
    },
  );

  test.each([null, false, true, -1, 0, 'on'])('priority: %j is a TypeError', (value) => {
    expect(make({ priority: value })).toThrow(TypeError);
    expect(make({ priority: value })).toThrow(/option "priority" must be an object/);
  });

  test.each([null, false, true, -1, 5, 'on'])(
    'codel: %j is a TypeError, CoDel stays off',
    (value) => {
      expect(make({ codel: value })).toThrow(TypeError);
      expect(make({ codel: value })).toThrow(/option "codel" must be an object/);
    },
  );

  test.each([
    [{ codel: { targetMs: -1 } }, RangeError, /"codel.targetMs"/],
    [{ codel: { intervalMs: '100' } }, TypeError, /"codel.intervalMs" .*got "100"/],
    [{ fairness: { quantum: 0 } }, RangeError, /"fairness.quantum"/],
    [{ fairness: { quantum: '1' } }, TypeError, /"fairness.quantum" .*got "1"/],
    [{ fairness: { maxCredit: -1 } }, RangeError, /"fairness.maxCredit"/],
    [{ fairness: { maxQueuedPerTenant: 0 } }, RangeError, /"fairness.maxQueuedPerTenant"/],
    [{ priority: { agingPerSecond: '1' } }, TypeError, /"priority.agingPerSecond"/],
    [{ priority: { maxAgedPriority: Number.NaN } }, TypeError, /"priority.maxAgedPriority"/],
    [{ priority: { minShare: 1 } }, RangeError, /"priority.minShare"/],
    [
      { queueOrder: 'LIFO' },
      RangeError,
      /option "queueOrder" must be one of "fifo", "lifo", "adaptive", got "LIFO"/,
    ],
    [{ queueOrder: 1 }, TypeError, /"queueOrder"/],
    [{ maxQueued: -1 }, RangeError, /"maxQueued"/],
    [{ maxQueued: '5' }, TypeError, /"maxQueued" .*got "5"/],
    [{ classify: 'x' }, TypeError, /option "classify" must be a function, got "x"/],
  ])(
    'a nested or top-level value out of range or of the wrong type names the option (%#)',
    (options, type, message) => {
      expect(make(options)).toThrow(type);
      expect(make(options)).toThrow(message);
    },
  );

  test.each([
    [null],
    [5],
    ['clock'],
    [{ now: (): number => 0 }],
    [{ now: 0, setTimeout() {}, clearTimeout() {} }],
    [{ now: (): number => 0, setTimeout() {} }],
  ])(
    'a clock that is not an object with now, setTimeout and clearTimeout is a TypeError (%#)',
    (clock) => {
      expect(make({ clock })).toThrow(TypeError);
      expect(make({ clock })).toThrow(
        /option "clock" must be an object \(a Clock: now, setTimeout and clearTimeout functions\)|option "clock\.(now|setTimeout|clearTimeout)" must be a function, got/,
      );
    },
  );

  test.each([
    [5],
    ['costs'],
    [{}],
    [{ estimate: (): number => 1 }],
    [{ estimate: (): number => 1, observe: () => {}, ceiling: 'x' }],
  ])('fairness.estimator that is not a CostEstimator is a TypeError (%#)', (estimator) => {
    expect(make({ fairness: { estimator } })).toThrow(TypeError);
    expect(make({ fairness: { estimator } })).toThrow(/option "fairness.estimator/);
  });

  test('a CostEstimator-like estimator and a real one are accepted', () => {
    expect(() => new Limiter({ fairness: { estimator: new CostEstimator() } })).not.toThrow();
    const custom = { estimate: (): number => 1, observe: () => {}, ceiling: 10 };
    expect(make({ fairness: { estimator: custom } })).not.toThrow();
  });

  test.each([
    [
      { limit: Number.NaN, update() {} },
      TypeError,
      /option "algorithm.limit" must be a finite number ≥ 0, got NaN/,
    ],
    [{ limit: Infinity, update() {} }, RangeError, /option "algorithm.limit"/],
    [{ limit: -1, update() {} }, RangeError, /option "algorithm.limit"/],
    [{ limit: '5', update() {} }, TypeError, /option "algorithm.limit" .*got "5"/],
    [{ limit: 5 }, TypeError, /option "algorithm.update" must be a function/],
    [{ limit: 5, update: 1 }, TypeError, /option "algorithm.update" must be a function/],
    [{ limit: 5, update() {}, maxLimit: Number.NaN }, TypeError, /option "algorithm.maxLimit"/],
    [{ limit: 5, update() {}, maxLimit: 0 }, RangeError, /option "algorithm.maxLimit"/],
    ['20', TypeError, /option "algorithm" must be a LimitAlgorithm/],
    [null, TypeError, /option "algorithm" must be a LimitAlgorithm/],
    [20, TypeError, /option "algorithm" must be a LimitAlgorithm/],
  ])(
    'a limit algorithm without a finite numeric limit and an update function is refused (%#)',
    (algorithm, type, message) => {
      expect(make({ algorithm })).toThrow(type);
      expect(make({ algorithm })).toThrow(message);
    },
  );

  test.each([
    [new VegasLimit(), TypeError, /option "limit" of Limiter is a number .*"algorithm"/],
    ['20', TypeError, /option "limit" of Limiter is a number/],
    [null, TypeError, /option "limit" of Limiter is a number/],
    [0, RangeError, /option "limit" must be an integer in \[1, Infinity\), got 0/],
    [2.5, RangeError, /option "limit" must be an integer.*got 2.5/],
  ])('limit is the number of a fixed limit: %s is refused', (limit, type, message) => {
    expect(make({ limit })).toThrow(type);
    expect(make({ limit })).toThrow(message);
  });

  test('limit and algorithm together are refused; either alone sets the limit', () => {
    expect(make({ limit: 5, algorithm: new VegasLimit() })).toThrow(
      /Limiter takes either "limit" \(a fixed number\) or "algorithm", not both/,
    );
    expect(new Limiter({ limit: 7 }).limit).toBe(7);
    expect(new Limiter({ algorithm: new VegasLimit({ initialLimit: 9 }) }).limit).toBe(9);
    expect(new Limiter().limit).toBe(20);
  });

  test('options that are not an object are a TypeError', () => {
    expect(make(null)).toThrow(/Limiter options must be an object, got null/);
    expect(make(5)).toThrow(TypeError);
  });

  test('fairness: {} and priority: {} turn the feature on with its defaults', async () => {
    const clock = new FakeClock();
    const fair = new Limiter({ limit: 1, maxQueued: 2, fairness: {}, clock });
    const held = await fair.acquire({ tenant: 'a' });
    const next = fair.acquire({ tenant: 'b' });
    expect(fair.snapshot().tenants).toBe(1);
    held.success();
    (await next).success();
    expect(() => new Limiter({ priority: {} })).not.toThrow();
  });
});

describe('algorithm and CostEstimator options are checked at construction', () => {
  test.each([
    [
      () => new VegasLimit({ maxlimit: 8 } as never),
      /unknown option "vegas.maxlimit" for VegasLimit; did you mean "vegas.maxLimit"\?/,
    ],
    [() => new GradientLimit({ tolerence: 2 } as never), /did you mean "gradient.tolerance"\?/],
    [
      () => new AimdLimit({ backoff: 0.5 } as never),
      /did you mean "aimd.backoffRatio"\?|unknown option "aimd.backoff"/,
    ],
    [
      () => new WindowedLimit(new AimdLimit(), { window: 5 } as never),
      /unknown option "windowed.window"/,
    ],
    [() => new ProbeSchedule({ probeDept: 0.5 } as never), /did you mean "probe.probeDepth"\?/],
    [() => new CostEstimator({ celing: 5 } as never), /did you mean "costs.ceiling"\?/],
    [() => new VegasLimit(null as never), /option "vegas" must be an object, got null/],
  ])('an unknown key or a non-object is a TypeError naming it (%#)', (construct, message) => {
    expect(construct).toThrow(TypeError);
    expect(construct).toThrow(message);
  });

  test.each([
    [
      () => new AimdLimit({ slowStart: 'no' as never }),
      /option "aimd.slowStart" must be true or false, got "no"/,
    ],
    [
      () => new CostEstimator({ perByte: 1 as never }),
      /option "costs.perByte" must be true or false, got 1/,
    ],
    [
      () => new WindowedLimit(new AimdLimit(), { aggregate: 'p99' as never }),
      /option "windowed.aggregate" must be "average" or a number in \(0, 1\], got "p99"/,
    ],
    [
      () => new VegasLimit({ random: 5 as never }),
      /option "vegas.random" must be a function, got 5/,
    ],
    [
      () => new WindowedLimit({ limit: Number.NaN, update: () => 1 }),
      /option "windowed.delegate.limit"/,
    ],
    [() => new WindowedLimit(undefined as unknown as LimitAlgorithm), /option "windowed.delegate"/],
  ])('a wrong type is a TypeError naming the option (%#)', (construct, message) => {
    expect(construct).toThrow(TypeError);
    expect(construct).toThrow(message);
  });

  test('a queueAllowance function returning a bad value makes update throw, naming it', () => {
    const g = new GradientLimit({ queueAllowance: () => Number.NaN, warmupSamples: 0 });
    expect(() => g.update({ startTime: 0, rtt: 5, inflight: 20, dropped: false })).toThrow(
      /"gradient.queueAllowance\(limit\)"/,
    );
  });
});
