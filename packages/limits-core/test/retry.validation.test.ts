import { describe, expect, test, vi } from 'vitest';
import { systemClock } from '../src/internal/clock.js';
import { RetryBudget } from '../src/retry/RetryBudget.js';
import { RetryPolicy } from '../src/retry/RetryPolicy.js';
import { retryClock } from '../src/retry/retryClock.js';
import { FakeClock } from './support/FakeClock.js';

describe('new RetryBudget(options) checks every option', () => {
  const rows: [string, unknown, ErrorConstructor, string][] = [
    ['options null', null, TypeError, 'limits: RetryBudget options must be an object, got null'],
    [
      'an unknown key',
      { ration: 1 },
      TypeError,
      'unknown option "ration" for RetryBudget; did you mean "ratio"?',
    ],
    [
      'ratio a string',
      { ratio: '0.1' },
      TypeError,
      'option "ratio" must be a number in [0, 1000], got "0.1"',
    ],
    [
      'ratio negative',
      { ratio: -0.1 },
      RangeError,
      'option "ratio" must be a number in [0, 1000], got -0.1',
    ],
    [
      'ratio NaN',
      { ratio: Number.NaN },
      TypeError,
      'option "ratio" must be a number in [0, 1000], got NaN',
    ],
    [
      'minPerSecond over 1e6',
      { minPerSecond: 1e6 + 1 },
      RangeError,
      'option "minPerSecond" must be a number in [0, 1000000], got 1000001',
    ],
    [
      'windowMs 0',
      { windowMs: 0 },
      RangeError,
      'option "windowMs" must be a number in (0, 3600000], got 0',
    ],
    [
      'windowMs Infinity',
      { windowMs: Infinity },
      RangeError,
      'option "windowMs" must be a number in (0, 3600000], got Infinity',
    ],
    [
      'clock without now',
      { clock: { setTimeout() {}, clearTimeout() {} } },
      TypeError,
      'option "clock.now" must be a function, got undefined',
    ],
  ];
  for (const [what, options, kind, message] of rows) {
    test(`${what} is a ${kind.name}`, () => {
      expect(() => new RetryBudget(options as never)).toThrow(kind);
      expect(() => new RetryBudget(options as never)).toThrow(message);
    });
  }

  test('the edges of each range are accepted', () => {
    const clock = new FakeClock();
    expect(
      () => new RetryBudget({ ratio: 0, minPerSecond: 0, windowMs: 0.001, clock }),
    ).not.toThrow();
    expect(
      () => new RetryBudget({ ratio: 1000, minPerSecond: 1e6, windowMs: 3_600_000, clock }),
    ).not.toThrow();
    expect(() => new RetryBudget()).not.toThrow();
  });
});

describe('new RetryPolicy(options) checks every option', () => {
  const rows: [string, unknown, ErrorConstructor, string][] = [
    [
      'options an array',
      [],
      TypeError,
      'limits: RetryPolicy options must be an object, got an array',
    ],
    [
      'an unknown key',
      { maxAttempt: 3 },
      TypeError,
      'unknown option "maxAttempt" for RetryPolicy; did you mean "maxAttempts"?',
    ],
    [
      'a key far from any',
      { retries: 3 },
      TypeError,
      'unknown option "retries" for RetryPolicy; allowed: maxAttempts, baseDelayMs, maxDelayMs, budget, clock, random',
    ],
    [
      'maxAttempts 0',
      { maxAttempts: 0 },
      RangeError,
      'option "maxAttempts" must be an integer in [1, 100], got 0',
    ],
    [
      'maxAttempts 2.5',
      { maxAttempts: 2.5 },
      RangeError,
      'option "maxAttempts" must be an integer in [1, 100], got 2.5',
    ],
    [
      'maxAttempts 101',
      { maxAttempts: 101 },
      RangeError,
      'option "maxAttempts" must be an integer in [1, 100], got 101',
    ],
    [
      'maxAttempts a string',
      { maxAttempts: '3' },
      TypeError,
      'option "maxAttempts" must be an integer in [1, 100], got "3"',
    ],
    [
      'baseDelayMs negative',
      { baseDelayMs: -1 },
      RangeError,
      'option "baseDelayMs" must be a number in [0, 3600000], got -1',
    ],
    [
      'maxDelayMs over an hour',
      { maxDelayMs: 3_600_001 },
      RangeError,
      'option "maxDelayMs" must be a number in [0, 3600000], got 3600001',
    ],
    [
      'baseDelayMs over maxDelayMs',
      { baseDelayMs: 500, maxDelayMs: 100 },
      RangeError,
      'option "baseDelayMs" (500) must be ≤ "maxDelayMs" (100)',
    ],
    [
      'budget a number',
      { budget: 5 },
      TypeError,
      'option "budget" must be a RetryBudget (an object with recordRequest and tryRetry functions), got 5',
    ],
    [
      'budget without tryRetry',
      { budget: { recordRequest() {} } },
      TypeError,
      'option "budget" must be a RetryBudget',
    ],
    ['budget null', { budget: null }, TypeError, 'option "budget" must be a RetryBudget'],
    [
      'clock a string',
      { clock: 'now' },
      TypeError,
      'option "clock" must be an object (a Clock: now, setTimeout and clearTimeout functions), got "now"',
    ],
    ['random a number', { random: 0.5 }, TypeError, 'option "random" must be a function, got 0.5'],
  ];
  for (const [what, options, kind, message] of rows) {
    test(`${what} is a ${kind.name}`, () => {
      expect(() => new RetryPolicy(options as never)).toThrow(kind);
      expect(() => new RetryPolicy(options as never)).toThrow(message);
    });
  }

  test('a default never contradicts the value given: maxDelayMs alone may be below the default base', async () => {
    const clock = new FakeClock();
    const top = () => 1 - Number.EPSILON;
    const small = new RetryPolicy({ maxDelayMs: 40, clock, random: top });
    const delays: number[] = [];
    small.on('retry', (e) => delays.push(Math.round(e.delayMs)));
    const call = small.run(async (attempt) => {
      if (attempt < 3) throw new Error('x');
      return attempt;
    });
    await clock.advance(1000);
    await expect(call).resolves.toBe(3);
    expect(delays).toEqual([40, 40]);
  });

  test('a default never contradicts the value given: baseDelayMs alone over 10 s raises the cap to it', async () => {
    const clock = new FakeClock();
    const big = new RetryPolicy({ baseDelayMs: 20_000, clock, random: () => 1 - Number.EPSILON });
    const delays: number[] = [];
    big.on('retry', (e) => delays.push(Math.round(e.delayMs)));
    const call = big.run(async (attempt) => {
      if (attempt < 3) throw new Error('x');
      return attempt;
    });
    await clock.advance(100_000);
    await expect(call).resolves.toBe(3);
    expect(delays).toEqual([20_000, 20_000]);
  });

  test('a budget may be any object with recordRequest and tryRetry (e.g. one shared across processes)', () => {
    expect(
      () => new RetryPolicy({ budget: { recordRequest() {}, tryRetry: () => true } as never }),
    ).not.toThrow();
  });
});

describe('RetryPolicy.run(task, options) checks its arguments and rejects, never throws', () => {
  const policy = new RetryPolicy({ clock: new FakeClock() });
  const task = async () => 1;
  const rows: [string, () => Promise<unknown>, ErrorConstructor, string][] = [
    [
      'a task that is not a function',
      () => policy.run('x' as never),
      TypeError,
      'limits: argument "task" of run() must be a function, got "x"',
    ],
    [
      'options null',
      () => policy.run(task, null as never),
      TypeError,
      'limits: RetryPolicy.run options must be an object, got null',
    ],
    [
      'an unknown option',
      () => policy.run(task, { singal: undefined } as never),
      TypeError,
      'unknown option "singal" for RetryPolicy.run; did you mean "signal"?',
    ],
    [
      'a signal that is not an AbortSignal',
      () => policy.run(task, { signal: {} as never }),
      TypeError,
      'option "signal" must be an AbortSignal, got an object',
    ],
    [
      'retryIf not a function',
      () => policy.run(task, { retryIf: true as never }),
      TypeError,
      'option "retryIf" must be a function, got true',
    ],
    [
      'discard not a function',
      () => policy.run(task, { discard: 'cancel' as never }),
      TypeError,
      'option "discard" must be a function, got "cancel"',
    ],
  ];
  for (const [what, call, kind, message] of rows) {
    test(`${what} is a rejected ${kind.name}, and nothing is counted`, async () => {
      let promise: Promise<unknown> | undefined;
      expect(() => {
        promise = call();
      }).not.toThrow();
      await expect(promise).rejects.toThrow(kind);
      await expect(call()).rejects.toThrow(message);
      expect(policy.stats()).toEqual({
        calls: 0,
        attempts: 0,
        retries: 0,
        refusedByBudget: 0,
        exhausted: 0,
      });
    });
  }

  test('a bad argument records no request in the budget', async () => {
    const budget = { recordRequest: vi.fn(), tryRetry: vi.fn(() => true) };
    const p = new RetryPolicy({ budget: budget as never });
    await expect(p.run(async () => 1, { retryIf: 1 as never })).rejects.toThrow(TypeError);
    expect(budget.recordRequest).not.toHaveBeenCalled();
  });
});

describe('the default clock of a RetryPolicy', () => {
  test('makes ref’d timers (a caller waits on them), unlike the unref’d systemClock', () => {
    const ours = retryClock.setTimeout(() => {}, 60_000) as NodeJS.Timeout;
    const system = systemClock.setTimeout(() => {}, 60_000) as NodeJS.Timeout;
    try {
      expect(ours.hasRef()).toBe(true);
      expect(system.hasRef()).toBe(false);
    } finally {
      retryClock.clearTimeout(ours);
      systemClock.clearTimeout(system);
    }
    expect(retryClock.now()).toBeCloseTo(performance.now(), -2);
  });
});
