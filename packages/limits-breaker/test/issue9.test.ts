import { LimitExceededError, Limiter } from 'limits-core';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { CallTimeoutError, CircuitOpenError } from '../src/errors.js';
import { guard } from '../src/guard.js';
import type { FallbackCause, GuardOptions } from '../src/types.js';
import { opossum9 } from './support/opossum.js';
import { clock, deferred, flushMicrotasks } from './support/timers.js';

const CircuitBreaker = opossum9;

/** The real setImmediate (fake timers replace the global): a macrotask turn lets Node report unhandled rejections. */
const realSetImmediate = globalThis.setImmediate;

const flush = () => flushMicrotasks(20);

const base = { CircuitBreaker, clock, timeoutMs: false as const, limit: { limit: 10, clock } };

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('HALF_OPEN trials', () => {
  // issue 9, finding 7
  test('trials that time out and settle late never let more than probeSlots trials of an episode reach the dependency, and the trial count never goes negative', async () => {
    let down = true;
    let inFlight = 0;
    const g = guard(
      () => {
        if (down) return Promise.reject(new Error('down'));
        inFlight++;
        // The dependency is dead: the call hangs until the test lets it fail.
        return new Promise<string>((_resolve, reject) => {
          setTimeout(() => {
            inFlight--;
            reject(new Error('still down'));
          }, 1_500);
        });
      },
      {
        ...base,
        timeoutMs: 100,
        probeSlots: 2,
        resetTimeout: 1_000,
        limit: { limit: 100, probeSlots: 2, clock },
      },
    );
    const seen: number[] = [];
    g.on('state', () => seen.push(g.stats().trials));
    await g.fire().catch(() => {});
    expect(g.state).toBe('OPEN');
    down = false;
    for (let round = 0; round < 5; round++) {
      await vi.advanceTimersByTimeAsync(1_000);
      expect(g.state).toBe('HALF_OPEN');
      const before = inFlight;
      const calls = Array.from({ length: 6 }, () => g.fire().catch((e: unknown) => e));
      await flush();
      // At most probeSlots new trials reached the dependency in this episode.
      expect(inFlight - before).toBeLessThanOrEqual(2);
      expect(g.stats().trials).toBeGreaterThanOrEqual(0);
      expect(g.stats().trials).toBeLessThanOrEqual(2);
      await vi.advanceTimersByTimeAsync(100); // the trials time out: the circuit re-opens
      expect(g.state).toBe('OPEN');
      expect(g.stats().trials).toBeGreaterThanOrEqual(0);
      await Promise.all(calls);
    }
    for (const t of seen) expect(t).toBeGreaterThanOrEqual(0);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(g.stats().trials).toBeGreaterThanOrEqual(0);
    await g.shutdown();
  });

  // issue 9, finding 7
  test('a trial of an earlier HALF_OPEN episode that settles late neither changes the circuit nor frees a trial slot of the current episode', async () => {
    let down = true;
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const g = guard(
      () => {
        if (down) return Promise.reject(new Error('down'));
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      { ...base, probeSlots: 2, resetTimeout: 1_000, limit: { limit: 100, probeSlots: 2, clock } },
    );
    await g.fire().catch(() => {});
    down = false;
    await vi.advanceTimersByTimeAsync(1_000);
    const first = [g.fire().catch(() => 'x'), g.fire().catch(() => 'x')];
    await flush();
    expect(gates).toHaveLength(2);
    gates[0]?.reject(new Error('trial failed')); // re-opens the circuit
    await flush();
    expect(g.state).toBe('OPEN');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(g.state).toBe('HALF_OPEN');
    const second = [g.fire().catch(() => 'x'), g.fire().catch(() => 'x')];
    await flush();
    expect(gates).toHaveLength(4);
    expect(g.stats().trials).toBe(2);
    // The old episode's second trial fails now: it is not a trial of this episode.
    gates[1]?.reject(new Error('late'));
    await flush();
    expect(g.state).toBe('HALF_OPEN');
    expect(g.stats().trials).toBe(2);
    const extra = await g.fire().catch((e: unknown) => e);
    expect(extra).toBeInstanceOf(CircuitOpenError);
    expect(gates).toHaveLength(4);
    gates[2]?.resolve('ok');
    gates[3]?.resolve('ok');
    await Promise.all([...first, ...second]);
    expect(g.state).toBe('CLOSED');
    expect(g.stats().trials).toBe(0);
    await g.shutdown();
  });
});

describe('thenables', () => {
  const badThen = () =>
    ({
      // biome-ignore lint/suspicious/noThenProperty: the point of the test
      then() {
        throw new Error('then() broke');
      },
    }) as unknown as Promise<string>;

  // issue 9, finding 8
  test('an action returning a thenable whose then() throws rejects the caller, releases the permit and leaves no rejection behind', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      const g = guard(badThen, { ...base, timeoutMs: 100 });
      let p: Promise<string> | undefined;
      expect(() => {
        p = g.fire();
      }).not.toThrow();
      await expect(p).rejects.toThrow('then() broke');
      expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
      await vi.advanceTimersByTimeAsync(500);
      await new Promise((r) => realSetImmediate(r));
      expect(unhandled).toEqual([]);
      expect(g.stats().breaker.failures).toBe(1);
      await g.shutdown();
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  // issue 9, finding 8
  test('a queued call whose action returns a thenable whose then() throws answers its caller and releases the permit', async () => {
    const hold = deferred<string>();
    let n = 0;
    const g = guard(() => (n++ === 0 ? hold.promise : badThen()), {
      ...base,
      timeoutMs: 100,
      limit: { limit: 1, maxQueued: 5, clock },
      fallback: ({ reason, error }) => `${reason}: ${(error as Error).message}`,
    });
    const first = g.fire();
    const queued = g.fire();
    hold.resolve('one');
    expect(await first).toBe('one');
    expect(await queued).toBe('error: then() broke');
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
    await vi.advanceTimersByTimeAsync(500);
    await g.shutdown();
  });
});

describe('shedding the queue when the circuit opens', () => {
  // issue 9, finding 9
  test('calls waiting for a permit when the circuit opens get the open fallback at once and never run', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const causes: FallbackCause[] = [];
    const g = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      {
        ...base,
        limit: { limit: 1, maxQueued: 500, clock },
        fallback: (cause) => {
          causes.push(cause);
          return cause.reason;
        },
      },
    );
    const running = g.fire();
    const settled: string[] = [];
    const queued = Array.from({ length: 200 }, () => g.fire().then((v) => settled.push(v)));
    expect(g.limiter.snapshot().queued).toBe(200);
    gates[0]?.reject(new Error('dependency down'));
    await flush();
    expect(g.state).toBe('OPEN');
    // The one call granted by the failing call's release (before opossum opened) is running; every
    // other waiter was answered with `open` and left the limiter's queue.
    expect(gates).toHaveLength(2);
    expect(settled.filter((r) => r === 'open')).toHaveLength(199);
    expect(causes.filter((c) => c.reason === 'open')).toHaveLength(199);
    expect(causes.find((c) => c.reason === 'open')?.error).toBeInstanceOf(CircuitOpenError);
    expect(g.limiter.snapshot().queued).toBe(0);
    gates[1]?.reject(new Error('still down'));
    await Promise.all([running, ...queued]);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(gates).toHaveLength(2);
    await g.shutdown();
  });

  // issue 9, finding 9
  test('without a fallback, shed waiters reject with CircuitOpenError; a waiter with its own acquire signal still leaves on that signal', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const user = new AbortController();
    const g = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      { ...base, limit: { limit: 1, maxQueued: 10, clock }, acquire: { signal: user.signal } },
    );
    const running = g.fire();
    const a = g.fire().catch((e: unknown) => e);
    user.abort(new Error('user gave up'));
    const aborted = await a;
    expect(aborted).toBeInstanceOf(LimitExceededError);
    expect((aborted as LimitExceededError).reason).toBe('aborted');
    gates[0]?.resolve('ok');
    expect(await running).toBe('ok');
    await g.shutdown();

    const g2 = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      { ...base, limit: { limit: 1, maxQueued: 10, clock } },
    );
    gates.length = 0;
    const r2 = g2.fire().catch((e: unknown) => e);
    const waiting = [g2.fire().catch((e: unknown) => e), g2.fire().catch((e: unknown) => e)];
    g2.breaker.open();
    const answers = await Promise.all(waiting);
    for (const e of answers) expect(e).toBeInstanceOf(CircuitOpenError);
    expect(g2.limiter.snapshot().queued).toBe(0);
    gates[0]?.resolve('late');
    await r2;
    expect(gates).toHaveLength(1);
    await g2.shutdown();
  });

  // issue 9, finding 9
  test('a waiter that already left the queue (expired) is not shed again; 10,000 waiters are shed in one pass', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const reasons: string[] = [];
    const g = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      {
        ...base,
        limit: { limit: 1, maxQueued: 20_000, maxQueueWaitMs: 50, clock },
        fallback: ({ reason }) => {
          reasons.push(reason);
          return reason;
        },
      },
    );
    const running = g.fire();
    const early = [g.fire(), g.fire()];
    await vi.advanceTimersByTimeAsync(50);
    expect(await Promise.all(early)).toEqual(['limit', 'limit']);
    const late = Array.from({ length: 10_000 }, () => g.fire());
    expect(g.limiter.snapshot().queued).toBe(10_000);
    g.breaker.open();
    expect(g.limiter.snapshot().queued).toBe(0);
    const answers = await Promise.all(late);
    expect(answers.every((a) => a === 'open')).toBe(true);
    expect(reasons.filter((r) => r === 'limit')).toHaveLength(2);
    gates[0]?.resolve('ok');
    expect(await running).toBe('ok');
    expect(gates).toHaveLength(1);
    await g.shutdown();
  });

  // issue 9, finding 9
  test('calls queued after the circuit closed again are not shed by an earlier opening', async () => {
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const g = guard(
      () => {
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      { ...base, resetTimeout: 100, limit: { limit: 1, maxQueued: 10, clock } },
    );
    const r = g.fire();
    const q = g.fire().catch((e: unknown) => e);
    g.breaker.open();
    expect(await q).toBeInstanceOf(CircuitOpenError);
    gates[0]?.resolve('a');
    await r;
    g.breaker.close();
    const r2 = g.fire();
    const q2 = g.fire();
    gates[1]?.resolve('b');
    await flush();
    gates[2]?.resolve('c');
    expect(await r2).toBe('b');
    expect(await q2).toBe('c');
    await g.shutdown();
  });
});

describe('fallback', () => {
  // issue 9, finding 15
  test('the fallback receives the reason and the error that caused it, and stats().breaker.fallbacks counts fallbacks', async () => {
    let mode: 'fail' | 'hang' | 'ok' = 'fail';
    const boom = new Error('boom');
    const causes: FallbackCause[] = [];
    const events: FallbackCause[] = [];
    const g = guard(
      (_ctx, x: number) => {
        if (mode === 'fail') return Promise.reject(boom);
        if (mode === 'hang') return new Promise<number>(() => {});
        return Promise.resolve(x);
      },
      {
        ...base,
        timeoutMs: 100,
        errorThresholdPercentage: 100,
        limit: { limit: 1, maxQueued: 0, clock },
        fallback: (cause, x) => {
          causes.push(cause);
          return -x;
        },
      },
    );
    g.on('fallback', (e) => events.push(e));
    expect(await g.fire(1)).toBe(-1);
    mode = 'hang';
    const hung = g.fire(2);
    expect(await g.fire(3)).toBe(-3); // refused by the full limiter
    await vi.advanceTimersByTimeAsync(100);
    expect(await hung).toBe(-2);
    g.breaker.open();
    expect(await g.fire(4)).toBe(-4);
    expect(causes.map((c) => c.reason)).toEqual(['error', 'limit', 'timeout', 'open']);
    expect(causes[0]?.error).toBe(boom);
    expect(causes[1]?.error).toBeInstanceOf(LimitExceededError);
    expect(causes[2]?.error).toBeInstanceOf(CallTimeoutError);
    expect(causes[3]?.error).toBeInstanceOf(CircuitOpenError);
    expect(events).toEqual(causes);
    expect(g.stats().breaker.fallbacks).toBe(4);
    await g.shutdown();
  });

  // issue 9, finding 15 (complement: passes on the original code too; keeps the count honest)
  test('a fallback that throws is not counted as a fallback served', async () => {
    const g = guard(() => Promise.reject(new Error('x')), {
      ...base,
      errorThresholdPercentage: 100,
      fallback: () => {
        throw new Error('fallback broke');
      },
    });
    await expect(g.fire()).rejects.toThrow('fallback broke');
    expect(g.stats().breaker.fallbacks).toBe(0);
    await g.shutdown();
  });
});

describe('bad input', () => {
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
      'the old key timeout (issue 10: renamed timeoutMs)',
      { timeout: 100 },
      TypeError,
      /option "timeout" of guard\(\) was renamed "timeoutMs"/,
    ],
    ['an unknown key far from any', { zzzzzz: 1 }, TypeError, /unknown option "zzzzzz".*allowed:/],
    ['opossum capacity', { capacity: 5 }, TypeError, /"capacity".*"limit"/],
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
      'limiter not a Limiter',
      { limiter: {} },
      TypeError,
      /option "limiter" must be a Limiter \(from limits-core\), got an object/,
    ],
    [
      'limiter null',
      { limiter: null },
      TypeError,
      /option "limiter" must be a Limiter \(from limits-core\), got null/,
    ],
    [
      'limiter and limit together',
      { limiter: new Limiter({ limit: 1 }), limit: { limit: 2 } },
      TypeError,
      /options "limit" and "limiter"/,
    ],
    ['limit not an object', { limit: 5 }, TypeError, /option "limit" must be an object, got 5/],
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

  // bad input (rows that already threw the right error on the original code stay as the table of every option)
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

  // bad input
  test('guard() refuses options that are not an object, and an action that is not a function', () => {
    expect(() => guard(action, null as never)).toThrow(
      /limits: guard options must be an object, got null/,
    );
    expect(() => guard(action, 5 as never)).toThrow(TypeError);
    expect(() => guard('x' as never)).toThrow(/limits: guard\(action\) needs a function, got "x"/);
  });

  // bad input
  test('a refused option changes nothing: no limiter, breaker or timer is left behind', () => {
    const before = vi.getTimerCount();
    expect(() => guard(action, { CircuitBreaker, resetTimeout: -1 })).toThrow(RangeError);
    expect(() => guard(action, { CircuitBreaker: class {} as never })).toThrow(TypeError);
    expect(vi.getTimerCount()).toBe(before);
  });

  // bad input (complement: every option at its bounds is still accepted)
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
});

describe('listeners that throw', () => {
  class ListenerError extends Error {
    override name = 'ListenerError';
  }
  const thrower = (message: string) => () => {
    throw new ListenerError(message);
  };

  // issue 9, model suite N1
  test('a fallback listener that throws when queued calls expire is reported on the error event, and every queued caller is answered at its wait', async () => {
    const head = deferred();
    const g = guard(() => head.promise, {
      ...base,
      limit: { limit: 1, maxQueued: 2, maxQueueWaitMs: 10, clock },
    });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.on('fallback', thrower('fallback listener threw'));
    const running = g.fire();
    const answers: string[] = [];
    for (let i = 0; i < 2; i++) {
      g.fire().then(
        () => answers.push('ok'),
        (error: unknown) => answers.push((error as LimitExceededError).reason),
      );
    }
    expect(g.limiter.queued).toBe(2);
    await vi.advanceTimersByTimeAsync(10);
    await flush();
    expect(answers).toEqual(['expired', 'expired']);
    expect(g.limiter.queued).toBe(0);
    expect(reported).toHaveLength(2);
    expect(reported[0]).toBeInstanceOf(ListenerError);
    head.resolve();
    await running;
    expect(g.limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
    await g.shutdown();
  });

  // issue 9, model suite N1
  test('a fallback listener that throws does not make fire() throw: the caller gets its answer', async () => {
    const g = guard(() => Promise.resolve('x'), { ...base, fallback: () => 'fallback' });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.on('fallback', thrower('fallback listener threw'));
    g.breaker.open();
    let promise: Promise<string> | undefined;
    expect(() => {
      promise = g.fire();
    }).not.toThrow();
    await expect(promise).resolves.toBe('fallback');
    expect(g.stats().breaker.fallbacks).toBe(1);
    // Without a fallback, the caller gets the typed error.
    const bare = guard(() => Promise.resolve('x'), base);
    bare.on('error', (error) => reported.push(error));
    bare.on('fallback', thrower('fallback listener threw'));
    bare.breaker.open();
    await expect(bare.fire()).rejects.toBeInstanceOf(CircuitOpenError);
    expect(reported).toHaveLength(2);
    await g.shutdown();
    await bare.shutdown();
  });

  // issue 9, model suite N1
  test('a state listener that throws when a failed trial re-opens the circuit: the trial is answered, its permit released, the error reported', async () => {
    const g = guard(() => Promise.reject(new Error('down')), {
      ...base,
      timeoutMs: 100,
      resetTimeout: 40,
      limit: { limit: 1, clock },
    });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.breaker.open();
    await vi.advanceTimersByTimeAsync(40);
    expect(g.state).toBe('HALF_OPEN');
    const seen: string[] = [];
    g.on('state', ({ to }) => {
      seen.push(to);
      if (to === 'OPEN') throw new ListenerError('state listener threw');
    });
    await expect(g.fire()).rejects.toThrow('down');
    expect(g.state).toBe('OPEN');
    expect(seen).toEqual(['OPEN']);
    expect(reported).toEqual([expect.any(ListenerError)]);
    expect(g.limiter.inflight).toBe(0);
    expect(g.stats().trials).toBe(0);
    // opossum's state machine goes on: HALF_OPEN again after resetTimeout.
    await vi.advanceTimersByTimeAsync(40);
    expect(g.state).toBe('HALF_OPEN');
    await g.shutdown();
  });

  // issue 9, model suite N1
  test('a state listener that throws on a transition of opossum (open(), the reset timer) does not throw into opossum, and a trial still closes the circuit', async () => {
    const g = guard(() => Promise.resolve('x'), { ...base, resetTimeout: 40 });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.on('state', thrower('state listener threw'));
    expect(() => g.breaker.open()).not.toThrow();
    await vi.advanceTimersByTimeAsync(40); // the reset timer: HALF_OPEN
    expect(g.state).toBe('HALF_OPEN');
    await expect(g.fire()).resolves.toBe('x');
    expect(g.state).toBe('CLOSED');
    expect(g.breaker.closed).toBe(true);
    expect(reported).toHaveLength(3);
    await g.shutdown();
  });

  // issue 9, model suite N1
  test('release and reject listeners that throw are reported on the guard error event', async () => {
    const g = guard(() => Promise.resolve('x'), {
      ...base,
      limit: { limit: 1, maxQueued: 0, clock },
    });
    const reported: unknown[] = [];
    const limiterReported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.limiter.on('error', (error) => limiterReported.push(error));
    g.on('release', thrower('release listener threw'));
    g.on('reject', thrower('reject listener threw'));
    const first = g.fire();
    await expect(g.fire()).rejects.toBeInstanceOf(LimitExceededError);
    await expect(first).resolves.toBe('x');
    expect(reported.map((e) => (e as Error).message)).toEqual([
      'reject listener threw',
      'release listener threw',
    ]);
    expect(limiterReported).toEqual([]);
    await g.shutdown();
  });

  // issue 9, model suite N1
  test('without a guard error listener a listener error goes to the limiter error event, and without either it is rethrown on a microtask', async () => {
    const g = guard(() => Promise.resolve('x'), { ...base, fallback: () => 'fallback' });
    g.on('fallback', thrower('fallback listener threw'));
    const limiterReported: unknown[] = [];
    const onLimiterError = (error: unknown) => limiterReported.push(error);
    g.limiter.on('error', onLimiterError);
    g.breaker.open();
    await expect(g.fire()).resolves.toBe('fallback');
    expect(limiterReported).toEqual([expect.any(ListenerError)]);
    g.limiter.off('error', onLimiterError);
    const queued: Array<() => void> = [];
    const spy = vi.spyOn(globalThis, 'queueMicrotask').mockImplementation((fn) => {
      queued.push(fn);
    });
    try {
      await expect(g.fire()).resolves.toBe('fallback');
      // An error listener that throws is rethrown the same way.
      g.on('error', thrower('error listener threw'));
      await expect(g.fire()).resolves.toBe('fallback');
    } finally {
      spy.mockRestore();
    }
    expect(queued).toHaveLength(2);
    expect(queued[0]).toThrow('fallback listener threw');
    expect(queued[1]).toThrow('fallback listener threw');
    await g.shutdown();
  });

  // issue 9, model suite N1 (opossum's 'fallback' is emitted by the guard, 'open' by a trial's
  // settlement; a throw in opossum's own asynchronous failure path, e.g. its 'failure' event, is
  // opossum's and out of the guard's reach)
  test("a listener of opossum's own events that throws leaves no caller unanswered", async () => {
    const g = guard(() => Promise.reject(new Error('down')), {
      ...base,
      timeoutMs: 100,
      resetTimeout: 40,
      fallback: () => 'fallback',
    });
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    g.breaker.on('fallback', thrower('opossum fallback listener threw'));
    let promise: Promise<string> | undefined;
    expect(() => {
      promise = g.fire();
    }).not.toThrow();
    await expect(promise).resolves.toBe('fallback');
    g.breaker.open();
    await vi.advanceTimersByTimeAsync(40);
    g.breaker.on('open', thrower('opossum open listener threw'));
    // A failed trial re-opens the circuit through breaker.open(): a throwing 'open' listener.
    await expect(g.fire()).resolves.toBe('fallback');
    expect(g.state).toBe('OPEN');
    expect(g.limiter.inflight).toBe(0);
    expect(g.stats().trials).toBe(0);
    expect(reported.length).toBeGreaterThanOrEqual(2);
    await g.shutdown();
  });
});

describe('re-entrant listeners', () => {
  // issue 9, model suite N1 (re-entrant listeners, seed 1: a call started by a listener while calls
  // time out armed a second timer that shutdown() did not clear)
  test('a call started by a fallback listener while calls time out leaves no timer behind after shutdown', async () => {
    let sync = false;
    const g = guard(() => (sync ? 'value' : new Promise<string>(() => {})), {
      ...base,
      timeoutMs: 60,
    });
    const answers: string[] = [];
    g.on('fallback', ({ reason }) => {
      if (reason !== 'timeout') return;
      sync = true;
      g.fire().then((v) => answers.push(v));
      sync = false;
    });
    const first = g.fire().catch((e: unknown) => (e as Error).name);
    await vi.advanceTimersByTimeAsync(1);
    const second = g.fire().catch((e: unknown) => (e as Error).name);
    await vi.advanceTimersByTimeAsync(59);
    expect(await first).toBe('TimeoutError');
    await vi.advanceTimersByTimeAsync(1);
    expect(await second).toBe('TimeoutError');
    await flush();
    expect(answers).toEqual(['value', 'value']);
    await g.shutdown();
    expect(vi.getTimerCount()).toBe(0);
  });
});
