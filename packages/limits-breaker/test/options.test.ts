import { AimdLimit, FixedLimit, Limiter, VegasLimit } from 'limits-core';
import { describe, expect, test, vi } from 'vitest';
import { guard } from '../src/guard.js';
import type { GuardOptions } from '../src/types.js';
import { opossum9 } from './support/opossum.js';
import { clock, useFakeTimersPerTest } from './support/timers.js';

const CircuitBreaker = opossum9;

useFakeTimersPerTest();

describe('guard() options', () => {
  const action = async () => 1;
  type Case = [string, Record<string, unknown>, typeof TypeError | typeof RangeError, RegExp];
  const cases: Case[] = [
    [
      'an unknown key',
      { timoutMs: 100 },
      TypeError,
      /unknown option "timoutMs".*did you mean "timeoutMs"/,
    ],
    [
      'the renamed key timeout (now timeoutMs)',
      { timeout: 100 },
      TypeError,
      /option "timeout" of guard\(\) was renamed "timeoutMs"/,
    ],
    ['an unknown key far from any', { zzzzzz: 1 }, TypeError, /unknown option "zzzzzz".*allowed:/],
    ['opossum capacity', { capacity: 5 }, TypeError, /"capacity".*"limiter"/],
    ['opossum errorFilter', { errorFilter: () => true }, TypeError, /"errorFilter".*"classify"/],
    [
      'timeoutMs as a string',
      { timeoutMs: '100' },
      TypeError,
      /option "timeoutMs" must be .* or false, got "100"/,
    ],
    [
      'timeoutMs negative',
      { timeoutMs: -5 },
      RangeError,
      /option "timeoutMs" must be .* or false, got -5/,
    ],
    ['timeoutMs NaN', { timeoutMs: Number.NaN }, TypeError, /option "timeoutMs"/],
    ['timeoutMs true', { timeoutMs: true }, TypeError, /option "timeoutMs".*got true/],
    [
      'probeSlots as a string',
      { probeSlots: '2' },
      TypeError,
      /option "probeSlots" must be an integer in \[1, Infinity\), got "2"/,
    ],
    ['probeSlots 0', { probeSlots: 0 }, RangeError, /option "probeSlots"/],
    ['probeSlots 1.5', { probeSlots: 1.5 }, RangeError, /option "probeSlots"/],
    [
      'resetTimeout Infinity',
      { resetTimeout: Infinity },
      RangeError,
      /option "resetTimeout" must be a number in \(0, 2147483647\], got Infinity/,
    ],
    ['resetTimeout -1', { resetTimeout: -1 }, RangeError, /option "resetTimeout".*got -1/],
    ['resetTimeout NaN', { resetTimeout: Number.NaN }, TypeError, /option "resetTimeout".*got NaN/],
    ['resetTimeout a string', { resetTimeout: '1000' }, TypeError, /option "resetTimeout"/],
    [
      'errorThresholdPercentage NaN',
      { errorThresholdPercentage: Number.NaN },
      TypeError,
      /option "errorThresholdPercentage" must be a number in \[0, 100\]/,
    ],
    [
      'errorThresholdPercentage 150',
      { errorThresholdPercentage: 150 },
      RangeError,
      /option "errorThresholdPercentage".*got 150/,
    ],
    [
      'errorThresholdPercentage -1',
      { errorThresholdPercentage: -1 },
      RangeError,
      /errorThresholdPercentage/,
    ],
    [
      'volumeThreshold as a string',
      { volumeThreshold: '5' },
      TypeError,
      /option "volumeThreshold" must be an integer in \[0, Infinity\), got "5"/,
    ],
    ['volumeThreshold -1', { volumeThreshold: -1 }, RangeError, /volumeThreshold/],
    ['volumeThreshold 2.5', { volumeThreshold: 2.5 }, RangeError, /volumeThreshold/],
    [
      'rollingCountTimeout 0',
      { rollingCountTimeout: 0 },
      RangeError,
      /option "rollingCountTimeout"/,
    ],
    [
      'rollingCountTimeout Infinity',
      { rollingCountTimeout: Infinity },
      RangeError,
      /rollingCountTimeout/,
    ],
    [
      'rollingCountTimeout a string',
      { rollingCountTimeout: '10000' },
      TypeError,
      /rollingCountTimeout/,
    ],
    [
      'rollingCountBuckets -1',
      { rollingCountBuckets: -1 },
      RangeError,
      /option "rollingCountBuckets" must be an integer in \[1, /,
    ],
    [
      'rollingCountBuckets Infinity',
      { rollingCountBuckets: Infinity },
      RangeError,
      /option "rollingCountBuckets".*got Infinity/,
    ],
    ['rollingCountBuckets 1.5', { rollingCountBuckets: 1.5 }, RangeError, /rollingCountBuckets/],
    [
      'rollingCountBuckets finer than 1 ms',
      { rollingCountTimeout: 10, rollingCountBuckets: 20 },
      RangeError,
      /rollingCountBuckets.*rollingCountTimeout/,
    ],
    [
      'allowWarmUp a string',
      { allowWarmUp: 'yes' },
      TypeError,
      /option "allowWarmUp" must be true or false, got "yes"/,
    ],
    ['name a number', { name: 5 }, TypeError, /option "name" must be a string, got 5/],
    ['latencyWindowMs 0', { latencyWindowMs: 0 }, RangeError, /option "latencyWindowMs"/],
    ['latencyWindowMs a string', { latencyWindowMs: '1000' }, TypeError, /latencyWindowMs/],
    ['latencyWindowMs Infinity', { latencyWindowMs: Infinity }, RangeError, /latencyWindowMs/],
    ['latencyBuckets 0', { latencyBuckets: 0 }, RangeError, /option "latencyBuckets"/],
    ['latencyBuckets 1e9', { latencyBuckets: 1e9 }, RangeError, /option "latencyBuckets"/],
    [
      'clock not an object',
      { clock: 5 },
      TypeError,
      /option "clock" must be an object \(a Clock: now, setTimeout and clearTimeout functions\), got 5/,
    ],
    [
      'clock without now',
      { clock: { setTimeout, clearTimeout } },
      TypeError,
      /option "clock.now" must be a function/,
    ],
    [
      'clock without clearTimeout',
      { clock: { now: Date.now, setTimeout } },
      TypeError,
      /option "clock.clearTimeout" must be a function/,
    ],
    [
      'CircuitBreaker not a function',
      { CircuitBreaker: {} },
      TypeError,
      /option "CircuitBreaker" must be a function/,
    ],
    [
      'CircuitBreaker not a constructor',
      { CircuitBreaker: () => ({}) },
      TypeError,
      /option "CircuitBreaker" must be a constructor/,
    ],
    [
      'CircuitBreaker making no breaker',
      { CircuitBreaker: class {} },
      TypeError,
      /option "CircuitBreaker" must be opossum's CircuitBreaker/,
    ],
    [
      'fallback not a function',
      { fallback: 'cache' },
      TypeError,
      /option "fallback" must be a function, got "cache"/,
    ],
    [
      'classify not a function',
      { classify: {} },
      TypeError,
      /option "classify" must be a function, got an object/,
    ],
    [
      'limiter neither a Limiter nor its options',
      { limiter: { acquire: () => {} } },
      TypeError,
      /unknown option "acquire" for Limiter/,
    ],
    [
      'limiter null',
      { limiter: null },
      TypeError,
      /option "limiter" must be a Limiter \(from limits-core\) to share, or the options of the guard's own limiter, got null/,
    ],
    [
      "the old name of the own limiter's options",
      { limit: { limit: 2 } },
      TypeError,
      /option "limit" of guard\(\) was renamed "limiter" \(a Limiter to share, or the options/,
    ],
    ['limiter a number', { limiter: 5 }, TypeError, /option "limiter" must be a Limiter .*got 5/],
    [
      'own limiter options checked by the Limiter',
      { limiter: { limt: 2 } },
      TypeError,
      /unknown option "limt" for Limiter; did you mean "limit"/,
    ],
    [
      'acquire not an object',
      { acquire: 'x' },
      TypeError,
      /option "acquire" must be an object, got "x"/,
    ],
    [
      'acquire with a typo',
      { acquire: { timoutMs: 5 } },
      TypeError,
      /unknown option "acquire.timoutMs".*did you mean "acquire.timeoutMs"/,
    ],
    [
      'acquire.timeoutMs as a string',
      { acquire: { timeoutMs: '100' } },
      TypeError,
      /option "acquire.timeoutMs".*got "100"/,
    ],
    [
      'acquire.timeoutMs negative',
      { acquire: { timeoutMs: -5 } },
      RangeError,
      /option "acquire.timeoutMs"/,
    ],
    ['acquire.cost 0', { acquire: { cost: 0 } }, RangeError, /option "acquire.cost"/],
    [
      'acquire.signal not a signal',
      { acquire: { signal: {} } },
      TypeError,
      /option "acquire.signal" must be an AbortSignal/,
    ],
    [
      'acquire.priority NaN',
      { acquire: { priority: Number.NaN } },
      TypeError,
      /option "acquire.priority"/,
    ],
    [
      'acquire.tenant a number',
      { acquire: { tenant: 5 } },
      TypeError,
      /option "acquire.tenant" must be a string/,
    ],
  ];

  test.each(cases)('guard() refuses %s', (_name, options, Kind, message) => {
    let error: unknown;
    try {
      guard(action, { CircuitBreaker, ...options } as GuardOptions<[], number>);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(Kind);
    expect((error as Error).message).toMatch(/^limits: /);
    expect((error as Error).message).toMatch(message);
  });

  test('guard() refuses options that are not an object, and an action that is not a function', () => {
    expect(() => guard(action, null as never)).toThrow(
      /limits: guard options must be an object, got null/,
    );
    expect(() => guard(action, 5 as never)).toThrow(TypeError);
    expect(() => guard('x' as never)).toThrow(/limits: guard\(action\) needs a function, got "x"/);
  });

  test('a refused option changes nothing: no limiter, breaker or timer is left behind', () => {
    const before = vi.getTimerCount();
    expect(() => guard(action, { CircuitBreaker, resetTimeout: -1 })).toThrow(RangeError);
    expect(() => guard(action, { CircuitBreaker: class {} as never })).toThrow(TypeError);
    expect(vi.getTimerCount()).toBe(before);
  });

  test('guard() accepts a Limiter, and every valid option at its bounds', async () => {
    const limiter = new Limiter({ limit: 2, clock });
    const g = guard(action, {
      CircuitBreaker,
      limiter,
      clock,
      probeSlots: 1,
      timeoutMs: 1,
      errorThresholdPercentage: 0,
      resetTimeout: 2147483647,
      rollingCountTimeout: 10,
      rollingCountBuckets: 10,
      volumeThreshold: 0,
      allowWarmUp: true,
      name: 'svc',
      latencyWindowMs: 1,
      latencyBuckets: 1,
      fallback: () => 0,
      classify: () => undefined,
      acquire: { timeoutMs: 0, cost: 1, priority: -1, tenant: 't', kind: 'k', bytes: 0 },
    });
    const g2 = guard(action, { CircuitBreaker, timeoutMs: false, errorThresholdPercentage: 100 });
    await g.shutdown();
    await g2.shutdown();
  });

  test("limiter takes a Limiter to share or the options of the guard's own (Vegas unless they give a limit or an algorithm)", async () => {
    const action = async () => 'ok';
    const own = guard(action, { CircuitBreaker, timeoutMs: false });
    expect(own.limiter.algorithm).toBeInstanceOf(VegasLimit);
    const fixed = guard(action, { CircuitBreaker, timeoutMs: false, limiter: { limit: 3 } });
    expect(fixed.limiter.algorithm).toBeInstanceOf(FixedLimit);
    expect(fixed.limiter.limit).toBe(3);
    const aimd = guard(action, { CircuitBreaker, limiter: { algorithm: new AimdLimit() } });
    expect(aimd.limiter.algorithm).toBeInstanceOf(AimdLimit);
    const shared = new Limiter({ limit: 2 });
    const sharing = guard(action, { CircuitBreaker, timeoutMs: false, limiter: shared });
    expect(sharing.limiter).toBe(shared);
    await Promise.all([own.shutdown(), fixed.shutdown(), aimd.shutdown(), sharing.shutdown()]);
    expect(fixed.limiter.snapshot().closed).toBe(true);
    expect(shared.snapshot().closed).toBe(false);
  });
});
