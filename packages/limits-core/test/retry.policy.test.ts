import { describe, expect, test, vi } from 'vitest';
import { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { LimitsError } from '../src/errors/LimitsError.js';
import { seededRandom } from '../src/internal/random.js';
import { Limiter } from '../src/limiter/Limiter.js';
import { fullJitterDelay } from '../src/retry/backoff.js';
import type { RetryEvent } from '../src/retry/events.js';
import { isRefusal } from '../src/retry/isRefusal.js';
import { RetryBudget } from '../src/retry/RetryBudget.js';
import { RetryPolicy } from '../src/retry/RetryPolicy.js';
import { deferred, FakeClock, flush } from './support/FakeClock.js';

/** A policy on a fake clock; `random` always gives `r` unless a generator is given. */
function setup(options: ConstructorParameters<typeof RetryPolicy>[0] = {}, r = 0.5) {
  const clock = new FakeClock();
  const policy = new RetryPolicy({ clock, random: () => r, ...options });
  const events: RetryEvent[] = [];
  policy.on('retry', (e) => events.push(e));
  return { clock, policy, events };
}

/** A task failing `failures` times, then resolving with `'ok'`; records each attempt's number. */
function flaky(failures: number) {
  const seen: number[] = [];
  const task = async (attempt: number) => {
    seen.push(attempt);
    if (attempt <= failures) throw new Error(`fail ${attempt}`);
    return 'ok';
  };
  return { task, seen };
}

/** A promise's state after the microtasks run: its value, its error, or 'pending'. */
function track<T>(promise: Promise<T>) {
  const state: { status: 'pending' | 'resolved' | 'rejected'; value?: T; error?: unknown } = {
    status: 'pending',
  };
  promise.then(
    (value) => Object.assign(state, { status: 'resolved', value }),
    (error) => Object.assign(state, { status: 'rejected', error }),
  );
  return state;
}

describe('full jitter backoff', () => {
  test('the delay before retry n is uniform in [0, min(maxDelayMs, baseDelayMs × 2^(n − 1))]', () => {
    const random = seededRandom(42);
    for (let n = 1; n <= 12; n++) {
      const cap = Math.min(5000, 100 * 2 ** (n - 1));
      let min = Infinity;
      let max = -Infinity;
      for (let i = 0; i < 2000; i++) {
        const d = fullJitterDelay(n, 100, 5000, random);
        min = Math.min(min, d);
        max = Math.max(max, d);
      }
      expect(min).toBeGreaterThanOrEqual(0);
      expect(max).toBeLessThanOrEqual(cap);
      expect(min).toBeLessThan(cap * 0.01);
      // The whole interval is used: the largest of 2,000 draws is within 1 % of the cap.
      expect(max).toBeGreaterThan(cap * 0.99);
    }
  });

  test('the cap doubles per retry until maxDelayMs', () => {
    const top = () => 1 - Number.EPSILON;
    expect(
      [1, 2, 3, 4, 5, 6, 7].map((n) => Math.round(fullJitterDelay(n, 100, 5000, top))),
    ).toEqual([100, 200, 400, 800, 1600, 3200, 5000]);
    expect(fullJitterDelay(100, 100, 5000, top)).toBeLessThanOrEqual(5000);
  });

  test('a random outside [0, 1) is clamped into [0, cap]', () => {
    expect(fullJitterDelay(1, 100, 1000, () => 7)).toBe(100);
    expect(fullJitterDelay(1, 100, 1000, () => -1)).toBe(0);
    expect(fullJitterDelay(1, 100, 1000, () => Number.NaN)).toBe(0);
  });

  test('a policy waits the jittered delay of each retry, growing per attempt', async () => {
    const { clock, policy, events } = setup({ maxAttempts: 4, baseDelayMs: 100 }, 0.5);
    const { task, seen } = flaky(3);
    const call = track(policy.run(task));
    await flush();
    expect(seen).toEqual([1]);
    await clock.advance(49);
    expect(seen).toEqual([1]);
    await clock.advance(1); // 0.5 × 100
    expect(seen).toEqual([1, 2]);
    await clock.advance(99);
    expect(seen).toEqual([1, 2]);
    await clock.advance(1); // 0.5 × 200
    expect(seen).toEqual([1, 2, 3]);
    await clock.advance(200); // 0.5 × 400
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(call).toEqual({ status: 'resolved', value: 'ok' });
    expect(events.map((e) => [e.attempt, e.delayMs])).toEqual([
      [1, 50],
      [2, 100],
      [3, 200],
    ]);
    expect(events[0]?.error).toEqual(new Error('fail 1'));
    expect(policy.stats()).toEqual({
      calls: 1,
      attempts: 4,
      retries: 3,
      refusedByBudget: 0,
      exhausted: 0,
    });
  });
});

describe('RetryPolicy attempts', () => {
  test('a first success is returned without a retry or a timer', async () => {
    const { clock, policy, events } = setup();
    await expect(policy.run(async () => 7)).resolves.toBe(7);
    expect(events).toEqual([]);
    expect(clock.pending).toBe(0);
  });

  test('maxAttempts bounds the attempts, and the last error is thrown', async () => {
    const { clock, policy } = setup({ maxAttempts: 3 });
    const { task, seen } = flaky(10);
    const call = track(policy.run(task));
    await clock.advance(10_000);
    expect(seen).toEqual([1, 2, 3]);
    expect(call.status).toBe('rejected');
    expect(call.error).toEqual(new Error('fail 3'));
    expect(policy.stats()).toMatchObject({ attempts: 3, retries: 2, exhausted: 1 });
    expect(clock.pending).toBe(0);
  });

  test('maxAttempts 1 never retries', async () => {
    const { clock, policy } = setup({ maxAttempts: 1 });
    const { task, seen } = flaky(1);
    await expect(policy.run(task)).rejects.toThrow('fail 1');
    expect(seen).toEqual([1]);
    expect(clock.pending).toBe(0);
  });

  test('a task that throws synchronously is retried like one that rejects', async () => {
    const { clock, policy } = setup({ maxAttempts: 2 });
    let n = 0;
    const task = (() => {
      n++;
      if (n === 1) throw new Error('sync');
      return Promise.resolve('ok');
    }) as () => Promise<string>;
    const call = track(policy.run(task));
    await clock.advance(1000);
    expect(call).toEqual({ status: 'resolved', value: 'ok' });
    expect(n).toBe(2);
  });

  test('the task gets the attempt number and the caller signal', async () => {
    const { clock, policy } = setup({ maxAttempts: 2 });
    const controller = new AbortController();
    const got: [number, AbortSignal | undefined][] = [];
    const call = policy.run(
      async (attempt, signal) => {
        got.push([attempt, signal]);
        if (attempt === 1) throw new Error('x');
        return attempt;
      },
      { signal: controller.signal },
    );
    await clock.advance(1000);
    await expect(call).resolves.toBe(2);
    expect(got).toEqual([
      [1, controller.signal],
      [2, controller.signal],
    ]);
  });

  test('by default a resolved value is never retried, whatever it is', async () => {
    const { policy } = setup();
    await expect(policy.run(async () => ({ status: 503 }))).resolves.toEqual({ status: 503 });
    expect(policy.stats().attempts).toBe(1);
  });
});

describe('RetryPolicy retryIf and Retry-After', () => {
  test('retryIf decides per result: false ends the call on an error', async () => {
    const { clock, policy } = setup();
    const { task, seen } = flaky(5);
    const retryIf = vi.fn(() => false);
    await expect(policy.run(task, { retryIf })).rejects.toThrow('fail 1');
    expect(retryIf).toHaveBeenCalledWith({ ok: false, error: new Error('fail 1') }, 1);
    expect(seen).toEqual([1]);
    expect(clock.pending).toBe(0);
  });

  test('retryIf may retry a value, and discard gets every value thrown away', async () => {
    const { clock, policy, events } = setup({ maxAttempts: 3 });
    const discard = vi.fn();
    const call = track(
      policy.run(async (attempt) => ({ status: attempt < 3 ? 503 : 200, attempt }), {
        retryIf: (r) => r.ok && r.value.status === 503,
        discard,
      }),
    );
    await clock.advance(10_000);
    expect(call).toEqual({ status: 'resolved', value: { status: 200, attempt: 3 } });
    expect(discard.mock.calls).toEqual([
      [{ status: 503, attempt: 1 }],
      [{ status: 503, attempt: 2 }],
    ]);
    expect(events.map((e) => e.value)).toEqual([
      { status: 503, attempt: 1 },
      { status: 503, attempt: 2 },
    ]);
  });

  test('the last value is returned, not discarded, when maxAttempts ends the call', async () => {
    const { clock, policy } = setup({ maxAttempts: 2 });
    const discard = vi.fn();
    const call = track(policy.run(async (attempt) => attempt, { retryIf: (r) => r.ok, discard }));
    await clock.advance(10_000);
    expect(call).toEqual({ status: 'resolved', value: 2 });
    expect(discard.mock.calls).toEqual([[1]]);
    expect(policy.stats().exhausted).toBe(1);
  });

  test('a Retry-After longer than the backoff is the wait', async () => {
    const { clock, policy, events } = setup({ baseDelayMs: 100, maxDelayMs: 10_000 }, 0.5);
    const { task, seen } = flaky(1);
    const call = track(policy.run(task, { retryIf: (r) => (r.ok ? false : 2500) }));
    await clock.advance(2499);
    expect(seen).toEqual([1]);
    await clock.advance(1);
    expect(seen).toEqual([1, 2]);
    expect(call.status).toBe('resolved');
    expect(events[0]?.delayMs).toBe(2500);
  });

  test('a Retry-After shorter than the jittered backoff waits the backoff (it is a minimum)', async () => {
    const { clock, policy, events } = setup({ baseDelayMs: 1000 }, 0.5);
    const { task, seen } = flaky(1);
    const call = track(policy.run(task, { retryIf: (r) => (r.ok ? false : 10) }));
    await clock.advance(499);
    expect(seen).toEqual([1]);
    await clock.advance(1);
    expect(seen).toEqual([1, 2]);
    expect(call.status).toBe('resolved');
    expect(events[0]?.delayMs).toBe(500);
  });

  test('a Retry-After over maxDelayMs ends the call with that result, with no budget spent', async () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ minPerSecond: 1, windowMs: 1000, clock });
    const { policy, events } = setup({ maxDelayMs: 5000, budget, clock });
    const { task, seen } = flaky(1);
    await expect(policy.run(task, { retryIf: () => 5001 })).rejects.toThrow('fail 1');
    expect(seen).toEqual([1]);
    expect(events).toEqual([]);
    expect(budget.available).toBe(1);
    expect(clock.pending).toBe(0);
  });

  test('a Retry-After of exactly maxDelayMs is still waited', async () => {
    const { clock, policy } = setup({ maxDelayMs: 5000 });
    const { task, seen } = flaky(1);
    const call = track(policy.run(task, { retryIf: (r) => (r.ok ? false : 5000) }));
    await clock.advance(5000);
    expect(seen).toEqual([1, 2]);
    expect(call.status).toBe('resolved');
  });

  test('retryIf returning something else rejects with a TypeError and discards the value', async () => {
    const { clock, policy } = setup();
    for (const bad of [Number.NaN, -1, 'yes', undefined, null]) {
      const discard = vi.fn();
      await expect(
        policy.run(async () => 'v', { retryIf: () => bad as never, discard }),
      ).rejects.toThrow(/retryIf must return true, false or a number of ms ≥ 0/);
      expect(discard).toHaveBeenCalledWith('v');
    }
    expect(clock.pending).toBe(0);
  });

  test('a retryIf that throws rejects the call with its error', async () => {
    const { clock, policy } = setup();
    const boom = new Error('boom');
    const discard = vi.fn();
    await expect(
      policy.run(async () => 'v', {
        retryIf: () => {
          throw boom;
        },
        discard,
      }),
    ).rejects.toBe(boom);
    expect(discard).toHaveBeenCalledWith('v');
    expect(clock.pending).toBe(0);
  });
});

describe('RetryPolicy never retries a refusal', () => {
  test('isRefusal: a LimitExceededError (any reason) and any error with code CIRCUIT_OPEN', () => {
    expect(isRefusal(new LimitExceededError('limit reached', { reason: 'at_limit' }))).toBe(true);
    expect(isRefusal(new LimitExceededError('aborted', { reason: 'aborted' }))).toBe(true);
    const open = Object.assign(new Error('circuit open'), { code: 'CIRCUIT_OPEN' });
    expect(isRefusal(open)).toBe(true);
    expect(isRefusal(new LimitsError('CIRCUIT_OPEN', 'open'))).toBe(true);
    expect(isRefusal(new LimitsError('OTHER', 'other'))).toBe(false);
    expect(isRefusal(new Error('x'))).toBe(false);
    expect(isRefusal({ code: 'ECONNRESET' })).toBe(false);
    expect(isRefusal(undefined)).toBe(false);
    expect(isRefusal('CIRCUIT_OPEN')).toBe(false);
  });

  test('a limiter refusal, an open circuit or a retryable: false error is thrown at once, even if retryIf says retry', async () => {
    const refusals = [
      new LimitExceededError('queue full', { reason: 'queue_full' }),
      new LimitExceededError('shed', { reason: 'shed' }),
      Object.assign(new Error('open'), { code: 'CIRCUIT_OPEN' }),
      Object.assign(new Error('do not retry'), { retryable: false }),
    ];
    for (const refusal of refusals) {
      const { clock, policy, events } = setup({ maxAttempts: 5 });
      const retryIf = vi.fn(() => true);
      let attempts = 0;
      const call = policy.run(
        async () => {
          attempts++;
          throw refusal;
        },
        { retryIf },
      );
      await expect(call).rejects.toBe(refusal);
      expect(attempts).toBe(1);
      expect(retryIf).not.toHaveBeenCalled();
      expect(events).toEqual([]);
      expect(clock.pending).toBe(0);
      expect(policy.stats()).toMatchObject({ retries: 0, exhausted: 0 });
    }
  });

  test('retrying outside a Limiter: a full limiter refuses the attempt and the call is not retried', async () => {
    const { clock, policy, events } = setup({ maxAttempts: 5 });
    const limiter = new Limiter({ limit: 1, clock });
    const held = limiter.tryAcquire();
    let ran = 0;
    const call = policy.run(() =>
      limiter.run(async () => {
        ran++;
      }),
    );
    await expect(call).rejects.toBeInstanceOf(LimitExceededError);
    expect(ran).toBe(0);
    expect(events).toEqual([]);
    expect(policy.stats()).toMatchObject({ calls: 1, attempts: 1, retries: 0 });
    held?.success();
  });

  test('a refusal after a retried failure ends the call with the refusal', async () => {
    const { clock, policy } = setup({ maxAttempts: 5 });
    const refusal = new LimitExceededError('limit', { reason: 'at_limit' });
    const call = track(
      policy.run(async (attempt) => {
        throw attempt === 1 ? new Error('503') : refusal;
      }),
    );
    await clock.advance(10_000);
    expect(call).toEqual({ status: 'rejected', error: refusal });
    expect(policy.stats().attempts).toBe(2);
  });
});

describe('RetryPolicy and the caller signal', () => {
  test('an abort during the wait rejects at once with signal.reason and leaves no timer', async () => {
    const { clock, policy } = setup({ baseDelayMs: 1000 });
    const controller = new AbortController();
    const { task, seen } = flaky(5);
    const call = track(policy.run(task, { signal: controller.signal }));
    await flush();
    expect(clock.pending).toBe(1);
    const reason = new Error('caller gave up');
    controller.abort(reason);
    await flush();
    expect(call).toEqual({ status: 'rejected', error: reason });
    expect(clock.pending).toBe(0);
    await clock.advance(100_000);
    expect(seen).toEqual([1]);
  });

  test('a signal aborted by a retry listener or by discard rejects before any timer is set', async () => {
    const { clock, policy } = setup();
    const controller = new AbortController();
    const reason = new Error('stop');
    policy.once('retry', () => controller.abort(reason));
    const { task, seen } = flaky(5);
    await expect(policy.run(task, { signal: controller.signal })).rejects.toBe(reason);
    expect(seen).toEqual([1]);
    expect(clock.pending).toBe(0);
  });

  test('the wait leaves no abort listener on the signal once its timer fires', async () => {
    const { clock, policy } = setup();
    const controller = new AbortController();
    const added = vi.spyOn(controller.signal, 'addEventListener');
    const removed = vi.spyOn(controller.signal, 'removeEventListener');
    const { task } = flaky(2);
    const call = policy.run(task, { signal: controller.signal });
    await clock.advance(10_000);
    await expect(call).resolves.toBe('ok');
    expect(added).toHaveBeenCalledTimes(2);
    expect(removed.mock.calls.map((c) => c[1])).toEqual(added.mock.calls.map((c) => c[1]));
  });

  test('an already-aborted signal rejects with its reason without calling the task', async () => {
    const { policy } = setup();
    const task = vi.fn(async () => 1);
    const reason = new Error('already');
    await expect(policy.run(task, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(task).not.toHaveBeenCalled();
    expect(policy.stats().calls).toBe(0);
  });

  test('a signal aborted during an attempt stops retrying: that attempt result is final', async () => {
    const { clock, policy, events } = setup();
    const controller = new AbortController();
    const gate = deferred<string>();
    const call = track(policy.run(() => gate.promise, { signal: controller.signal }));
    controller.abort(new Error('bye'));
    gate.reject(new Error('aborted by the caller'));
    await flush();
    expect(call).toEqual({ status: 'rejected', error: new Error('aborted by the caller') });
    expect(events).toEqual([]);
    expect(clock.pending).toBe(0);
  });
});

describe('RetryPolicy with a budget', () => {
  test('a retry the budget refuses ends the call with the last result and emits budget_exhausted', async () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ ratio: 0, minPerSecond: 1, windowMs: 1000, clock });
    const policy = new RetryPolicy({ maxAttempts: 5, clock, budget, random: () => 0 });
    const exhausted: unknown[] = [];
    policy.on('budget_exhausted', (e) => exhausted.push(e));
    const { task, seen } = flaky(10);
    const call = track(policy.run(task));
    await clock.advance(0);
    await clock.advance(0);
    expect(seen).toEqual([1, 2]);
    expect(call).toEqual({ status: 'rejected', error: new Error('fail 2') });
    expect(exhausted).toEqual([{ attempt: 2 }]);
    expect(policy.stats()).toEqual({
      calls: 1,
      attempts: 2,
      retries: 1,
      refusedByBudget: 1,
      exhausted: 0,
    });
  });

  test('each call records one request, however many attempts it makes', async () => {
    const budget = { recordRequest: vi.fn(), tryRetry: vi.fn(() => true) };
    const { clock, policy } = setup({ budget: budget as never, maxAttempts: 3 });
    const call = policy.run(flaky(5).task).catch(() => undefined);
    await clock.advance(10_000);
    await call;
    expect(budget.recordRequest).toHaveBeenCalledTimes(1);
    expect(budget.tryRetry).toHaveBeenCalledTimes(2);
  });

  test('a refused value is returned as is, not discarded', async () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ ratio: 0, minPerSecond: 0, clock });
    const policy = new RetryPolicy({ clock, budget });
    const discard = vi.fn();
    await expect(policy.run(async () => 'v', { retryIf: () => true, discard })).resolves.toBe('v');
    expect(discard).not.toHaveBeenCalled();
  });
});

describe('RetryPolicy listeners and discard never break a call', () => {
  test('a throwing retry listener is reported on error and the call goes on', async () => {
    const { clock, policy } = setup();
    const errors: unknown[] = [];
    policy.on('error', (e) => errors.push(e));
    const boom = new Error('listener');
    policy.on('retry', () => {
      throw boom;
    });
    const call = track(policy.run(flaky(1).task));
    await clock.advance(1000);
    expect(call).toEqual({ status: 'resolved', value: 'ok' });
    expect(errors).toEqual([boom]);
  });

  test('a throwing budget_exhausted listener is reported, and the call ends as it would', async () => {
    const clock = new FakeClock();
    const budget = new RetryBudget({ minPerSecond: 0, clock });
    const policy = new RetryPolicy({ clock, budget });
    const errors: unknown[] = [];
    policy.on('error', (e) => errors.push(e));
    policy.on('budget_exhausted', () => {
      throw new Error('listener');
    });
    await expect(policy.run(flaky(1).task)).rejects.toThrow('fail 1');
    expect(errors).toEqual([new Error('listener')]);
  });

  test('a throwing discard is reported and the retry still happens', async () => {
    const { clock, policy } = setup();
    const errors: unknown[] = [];
    policy.on('error', (e) => errors.push(e));
    const call = track(
      policy.run(async (attempt) => attempt, {
        retryIf: (r) => r.ok && r.value === 1,
        discard: () => {
          throw new Error('discard');
        },
      }),
    );
    await clock.advance(1000);
    expect(call).toEqual({ status: 'resolved', value: 2 });
    expect(errors).toEqual([new Error('discard')]);
  });

  test('without an error listener a listener error is rethrown on a microtask, not to the caller', async () => {
    const { clock, policy } = setup();
    const boom = new Error('unheard');
    policy.on('retry', () => {
      throw boom;
    });
    const seen: unknown[] = [];
    const original = globalThis.queueMicrotask;
    globalThis.queueMicrotask = (fn) =>
      original(() => {
        try {
          fn();
        } catch (e) {
          seen.push(e);
        }
      });
    try {
      const call = track(policy.run(flaky(1).task));
      await clock.advance(1000);
      expect(call).toEqual({ status: 'resolved', value: 'ok' });
    } finally {
      globalThis.queueMicrotask = original;
    }
    expect(seen).toEqual([boom]);
  });
});
