import { describe, expect, test, vi } from 'vitest';
import type { LimitAlgorithm, Sample } from '../src/algorithms/LimitAlgorithm.js';
import { VegasLimit } from '../src/algorithms/VegasLimit.js';
import { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { isLimitsError, LimitsError } from '../src/errors/LimitsError.js';
import { seededRandom } from '../src/internal/random.js';
import type { LimitEvent, ReleaseEvent } from '../src/limiter/events.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { Permit } from '../src/permit/Permit.js';
import { deferred, FakeClock, flush } from './support/FakeClock.js';

/** An algorithm whose limit the test sets, recording every sample. */
function scripted(limit: number) {
  const samples: Sample[] = [];
  const alg = {
    limit,
    lastDecision: undefined as LimitAlgorithm['lastDecision'],
    update(sample: Sample) {
      samples.push(sample);
      return alg.limit;
    },
  };
  return { alg, samples };
}

describe('Limiter admission', () => {
  test('tryAcquire grants up to capacity, then refuses; releasing frees a slot', () => {
    const limiter = new Limiter({ limit: 2 });
    const a = limiter.tryAcquire();
    const b = limiter.tryAcquire();
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    expect(limiter.tryAcquire()).toBeUndefined();
    expect(limiter.inflight).toBe(2);
    a?.success();
    expect(limiter.inflight).toBe(1);
    expect(limiter.tryAcquire()).toBeDefined();
    expect(limiter.inflight).toBe(2);
  });

  test('acquire without a queue rejects at once with reason "at_limit" and a retry estimate', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ limit: 1, clock });
    limiter.on('release', () => {}); // time calls so the limiter has an RTT estimate
    const p = await limiter.acquire();
    await clock.advance(40);
    p.success();
    const held = await limiter.acquire();
    const error = await limiter.acquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LimitExceededError);
    expect(error).toMatchObject({ code: 'LIMIT_EXCEEDED', reason: 'at_limit', retryAfterMs: 40 });
    expect((error as Error).message).toMatch(/1\/1 units in flight, 1 requested/);
    held.success();
  });

  test('in-flight never exceeds capacity over a random interleaving', () => {
    const { alg } = scripted(5);
    const limiter = new Limiter({ algorithm: alg, probeSlots: 0 });
    const held = [];
    const rnd = seededRandom(42);
    for (let i = 0; i < 2000; i++) {
      const r = rnd();
      if (r < 0.5) {
        const p = limiter.tryAcquire({ cost: 1 + Math.floor(rnd() * 3) });
        if (p) {
          held.push(p);
          // A grant never takes in-flight past the capacity of the moment, except for one job
          // costlier than a shrunken capacity, which runs alone.
          expect(limiter.inflight <= limiter.capacity || held.length === 1).toBe(true);
        }
      } else if (r < 0.9 && held.length > 0) {
        held.splice(Math.floor(rnd() * held.length), 1)[0]?.success();
      } else {
        alg.limit = 1 + Math.floor(rnd() * 8);
        held.pop()?.ignore(); // a release picks up the new limit
      }
      expect(limiter.inflight).toBe(held.reduce((sum, p) => sum + p.cost, 0));
    }
  });

  test('inflight stays within capacity when the limit shrinks: no new grants until below it', () => {
    const { alg } = scripted(4);
    const limiter = new Limiter({ algorithm: alg, probeSlots: 0 });
    const held = [1, 2, 3, 4].map(() => limiter.tryAcquire());
    alg.limit = 2;
    held[0]?.success(); // the release feeds a sample; the algorithm now answers 2
    expect(limiter.capacity).toBe(2);
    expect(limiter.inflight).toBe(3);
    expect(limiter.tryAcquire()).toBeUndefined();
    held[1]?.success();
    expect(limiter.tryAcquire()).toBeUndefined(); // 2 in flight = capacity
    held[2]?.success();
    expect(limiter.tryAcquire()).toBeDefined();
  });

  test('probeSlots keep capacity at the floor when the algorithm collapses', () => {
    const { alg } = scripted(10);
    const limiter = new Limiter({ algorithm: alg, probeSlots: 3 });
    alg.limit = 0.2;
    limiter.tryAcquire()?.dropped();
    expect(limiter.limit).toBe(0);
    expect(limiter.capacity).toBe(3);
    const permits = [limiter.tryAcquire(), limiter.tryAcquire(), limiter.tryAcquire()];
    expect(permits.every(Boolean)).toBe(true);
    expect(limiter.tryAcquire()).toBeUndefined();
  });

  test('weighted permits count in cost units', () => {
    const limiter = new Limiter({ limit: 10 });
    const heavy = limiter.tryAcquire({ cost: 7 });
    expect(limiter.inflight).toBe(7);
    expect(limiter.tryAcquire({ cost: 4 })).toBeUndefined();
    expect(limiter.tryAcquire({ cost: 3 })).toBeDefined();
    heavy?.success();
    expect(limiter.inflight).toBe(3);
  });

  test('bad options and costs throw errors naming the option and range', () => {
    expect(() => new Limiter({ limit: 0 })).toThrow(
      /"limit" must be an integer in \[1, Infinity\), got 0/,
    );
    expect(() => new Limiter({ algorithm: {} as LimitAlgorithm })).toThrow(TypeError);
    expect(() => new Limiter({ probeSlots: -1 })).toThrow(/"probeSlots" must be an integer in \[0/);
    expect(() => new Limiter({ stallThresholdMs: 0 })).toThrow(/"stallThresholdMs"/);
    const limiter = new Limiter();
    expect(() => limiter.tryAcquire({ cost: 0 })).toThrow(
      /"cost" must be a number in \(0, Infinity\), got 0/,
    );
    expect(() => limiter.tryAcquire({ cost: Number.NaN })).toThrow(TypeError);
  });
});

describe('Permit', () => {
  test('completion is counted once: a second success() or dropped() is ignored', () => {
    const { alg, samples } = scripted(3);
    const limiter = new Limiter({ algorithm: alg, clock: new FakeClock() });
    const p = limiter.tryAcquire();
    p?.success();
    p?.success();
    p?.dropped();
    p?.ignore();
    expect(limiter.inflight).toBe(0);
    expect(samples).toHaveLength(1);
    expect(p?.released).toBe(true);
    limiter.tryAcquire()?.success();
    expect(limiter.inflight).toBe(0);
  });

  test('Symbol.dispose releases an unreported permit with "ignore"', () => {
    const { alg, samples } = scripted(3);
    const limiter = new Limiter({ algorithm: alg, clock: new FakeClock() });
    {
      using p = limiter.tryAcquire() as NonNullable<ReturnType<Limiter['tryAcquire']>>;
      expect(p.released).toBe(false);
      expect(limiter.inflight).toBe(1);
    }
    expect(limiter.inflight).toBe(0);
    expect(samples).toHaveLength(0);
  });

  test('the sample carries start time, RTT, in-flight at admission and the drop flag', async () => {
    const clock = new FakeClock(1000);
    const { alg, samples } = scripted(5);
    const limiter = new Limiter({ algorithm: alg, clock });
    const a = limiter.tryAcquire();
    const b = limiter.tryAcquire();
    await clock.advance(30);
    b?.dropped();
    a?.success();
    expect(samples).toEqual([
      { startTime: 1000, rtt: 30, inflight: 2, dropped: true },
      { startTime: 1000, rtt: 30, inflight: 1, dropped: false },
    ]);
  });
});

describe('Limiter.run', () => {
  test('holds the permit until the task really settles and reports success with its RTT', async () => {
    const clock = new FakeClock();
    const { alg, samples } = scripted(2);
    const limiter = new Limiter({ algorithm: alg, clock });
    const d = deferred<string>();
    const result = limiter.run(() => d.promise);
    expect(limiter.inflight).toBe(1);
    await clock.advance(75);
    expect(limiter.inflight).toBe(1);
    d.resolve('ok');
    await expect(result).resolves.toBe('ok');
    expect(limiter.inflight).toBe(0);
    expect(samples).toEqual([{ startTime: 0, rtt: 75, inflight: 1, dropped: false }]);
  });

  test('permit.failure() frees the units, gives the algorithm no sample and is reported as failure', () => {
    const { alg, samples } = scripted(2);
    const clock = new FakeClock();
    const limiter = new Limiter({ algorithm: alg, clock });
    const outcomes: string[] = [];
    limiter.on('release', (e) => outcomes.push(e.outcome));
    const permit = limiter.tryAcquire() as Permit;
    permit.failure();
    permit.success(); // the first outcome wins
    expect(outcomes).toEqual(['failure']);
    expect(samples).toEqual([]);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
  });

  test('classifies a timeout as dropped, another error as failure (no sample), and honours classify', async () => {
    const { alg, samples } = scripted(2);
    const outcomes: string[] = [];
    const limiter = new Limiter({ algorithm: alg, clock: new FakeClock() });
    limiter.on('release', (e) => outcomes.push(e.outcome));
    const timeout = Object.assign(new Error('t'), { name: 'TimeoutError' });
    await expect(limiter.run(() => Promise.reject(timeout))).rejects.toBe(timeout);
    await expect(limiter.run(() => Promise.reject(new Error('bad input')))).rejects.toThrow(
      'bad input',
    );
    const und = Object.assign(new Error('h'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
    await expect(limiter.run(() => Promise.reject(und))).rejects.toBe(und);
    expect(outcomes).toEqual(['dropped', 'failure', 'dropped']);
    expect(samples.map((x) => x.dropped)).toEqual([true, true]);

    const custom = new Limiter({
      limit: 2,
      classify: (error, result) => (error ? 'dropped' : result === 'busy' ? 'dropped' : undefined),
    });
    const seen: string[] = [];
    custom.on('release', (e) => seen.push(e.outcome));
    await custom.run(() => 'busy');
    await custom.run(() => 'fine');
    await custom.run(() => Promise.reject(new Error('x'))).catch(() => {});
    expect(seen).toEqual(['dropped', 'success', 'dropped']);
  });

  test('a task that settles synchronously leaves the counters right', async () => {
    const limiter = new Limiter({ limit: 1 });
    const values = await Promise.all([limiter.run(() => 1)]);
    expect(values).toEqual([1]);
    expect(limiter.inflight).toBe(0);
    // Re-entrant: the task itself releases-and-reacquires inside the call that started it.
    const nested = await limiter.run(() => {
      expect(limiter.inflight).toBe(1);
      return 2;
    });
    expect(nested).toBe(2);
    expect(limiter.inflight).toBe(0);
    expect(limiter.tryAcquire()).toBeDefined();
  });

  test('a task that throws synchronously returns its permit at once, without a sample', async () => {
    const { alg, samples } = scripted(1);
    const limiter = new Limiter({ algorithm: alg, clock: new FakeClock() });
    const boom = new Error('boom');
    const p = limiter.run(() => {
      throw boom;
    });
    expect(limiter.inflight).toBe(0);
    await expect(p).rejects.toBe(boom);
    expect(samples).toHaveLength(0);
  });

  test("the task receives a signal of its own that follows the caller's", async () => {
    const limiter = new Limiter({ limit: 1 });
    const ac = new AbortController();
    let got: AbortSignal | undefined;
    const reason = new Error('stop');
    await limiter.run(
      (signal) => {
        got = signal;
        ac.abort(reason);
      },
      { signal: ac.signal },
    );
    expect(got).not.toBe(ac.signal);
    expect(got?.aborted).toBe(true);
    expect(got?.reason).toBe(reason);
    await limiter.run((signal) => {
      expect(signal.aborted).toBe(false);
    });
  });

  test('an aborted signal rejects at once with reason "aborted" and the abort reason as cause', async () => {
    const limiter = new Limiter({ limit: 1 });
    const ac = new AbortController();
    ac.abort(new Error('caller left'));
    const task = vi.fn();
    const error = await limiter.run(task, { signal: ac.signal }).catch((e: unknown) => e);
    expect(error).toMatchObject({ reason: 'aborted', cause: ac.signal.reason });
    expect(task).not.toHaveBeenCalled();
    expect(limiter.inflight).toBe(0);
  });
});

describe('close()', () => {
  test('stops admitting and resolves when in-flight work has ended', async () => {
    const limiter = new Limiter({ limit: 3 });
    const d = deferred();
    const running = limiter.run(() => d.promise);
    let closed = false;
    const closing = limiter.close().then(() => {
      closed = true;
    });
    expect(limiter.tryAcquire()).toBeUndefined();
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'closed' });
    await flush();
    expect(closed).toBe(false);
    d.resolve();
    await running;
    await closing;
    expect(closed).toBe(true);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, closed: true });
    await limiter.close(); // idempotent
  });
});

describe('events', () => {
  test('limit events fire only when the integer limit changes and carry the reason', async () => {
    const clock = new FakeClock();
    // Capped at 6: with 4 calls in flight a higher limit would be app-limited (over 1.5 × 4 once slow
    // start is over) and decay.
    const vegas = new VegasLimit({
      initialLimit: 4,
      maxLimit: 6,
      probeMultiplier: 1000,
      recheckMultiplier: 1000,
    });
    const limiter = new Limiter({ algorithm: vegas, clock, stallThresholdMs: Infinity });
    const events: LimitEvent[] = [];
    limiter.on('limit', (e) => events.push(e));
    for (let i = 0; i < 6; i++) {
      const permits = [0, 1, 2, 3].map(() => limiter.tryAcquire()).filter((p) => p !== undefined);
      await clock.advance(10);
      for (const p of permits) p.success();
    }
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) {
      expect(e.limit).not.toBe(e.previous);
      expect(e.decision?.reason).toBe('increase');
      expect(e.decision?.baselineRttMs).toBe(10);
    }
    expect(limiter.limit).toBe(Math.floor(vegas.limit));
  });

  test('a listener that throws does not corrupt state; the error reaches "error" listeners', () => {
    const limiter = new Limiter({ limit: 2 });
    const errors: unknown[] = [];
    limiter.on('error', (e) => errors.push(e));
    limiter.on('acquire', () => {
      throw new Error('listener bug');
    });
    limiter.on('release', () => {
      throw new Error('listener bug 2');
    });
    const p = limiter.tryAcquire();
    expect(limiter.inflight).toBe(1);
    p?.success();
    expect(limiter.inflight).toBe(0);
    expect(errors.map((e) => (e as Error).message)).toEqual(['listener bug', 'listener bug 2']);
    expect(limiter.tryAcquire()).toBeDefined();
  });

  test('without an "error" listener a throwing listener is rethrown on a microtask', async () => {
    const limiter = new Limiter({ limit: 1 });
    limiter.on('acquire', () => {
      throw new Error('late');
    });
    const seen = new Promise<unknown>((resolve) => {
      const original = globalThis.queueMicrotask;
      globalThis.queueMicrotask = (fn) => {
        globalThis.queueMicrotask = original;
        try {
          fn();
        } catch (e) {
          resolve(e);
        }
      };
    });
    limiter.tryAcquire()?.success();
    expect(((await seen) as Error).message).toBe('late');
    expect(limiter.inflight).toBe(0);
  });
});

describe('event-loop stalls', () => {
  test('a sample that overlaps a stall is not fed to the algorithm', async () => {
    const clock = new FakeClock();
    const { alg, samples } = scripted(5);
    const limiter = new Limiter({ algorithm: alg, clock, stallThresholdMs: 50 });
    const releases: ReleaseEvent[] = [];
    limiter.on('release', (e) => releases.push(e));
    const a = limiter.tryAcquire();
    await clock.advance(20);
    a?.success(); // no stall: fed
    const b = limiter.tryAcquire();
    // Simulate a 300 ms block of the event loop: time jumps without the detector's timer running.
    clock.jump(300);
    b?.success();
    expect(samples).toHaveLength(1);
    expect(releases.map((r) => r.stalled)).toEqual([false, true]);
    expect(limiter.snapshot().stalledSamples).toBe(1);
    // After the loop catches up, the detector records the span; later samples are fed again.
    await clock.advance(100);
    const c = limiter.tryAcquire();
    await clock.advance(20);
    c?.success();
    expect(samples).toHaveLength(2);
  });

  test('the detector timer runs only while work is in flight and stops on close', async () => {
    const clock = new FakeClock();
    const limiter = new Limiter({ algorithm: new VegasLimit(), clock });
    expect(clock.pending).toBe(0);
    const p = limiter.tryAcquire();
    expect(clock.pending).toBe(1);
    p?.success();
    await clock.advance(100);
    expect(clock.pending).toBe(0);
    const q = limiter.tryAcquire();
    expect(clock.pending).toBe(1);
    const closing = limiter.close();
    q?.success();
    await closing;
    expect(clock.pending).toBe(0);
  });
});

describe('errors', () => {
  test('LimitExceededError is a LimitsError with a stable code, recognised across copies', () => {
    const e = new LimitExceededError('x', { reason: 'queue_full', retryAfterMs: 5 });
    expect(e).toBeInstanceOf(LimitsError);
    expect(e).toBeInstanceOf(Error);
    expect(isLimitsError(e)).toBe(true);
    expect(e.code).toBe('LIMIT_EXCEEDED');
    // An error from another installed copy carries the same Symbol.for brand.
    const foreign = Object.defineProperty(new Error('y'), Symbol.for('limits.error'), {
      value: 'LIMIT_EXCEEDED',
    });
    expect(foreign).toBeInstanceOf(LimitExceededError);
    expect(new LimitsError('OTHER', 'z')).not.toBeInstanceOf(LimitExceededError);
  });
});

describe('sampling', () => {
  test('sampleEvery feeds one call in n to an adaptive algorithm, and every drop', async () => {
    const clock = new FakeClock();
    const { alg, samples } = scripted(10);
    const limiter = new Limiter({
      algorithm: alg,
      clock,
      sampleEvery: 4,
      stallThresholdMs: Infinity,
    });
    for (let i = 0; i < 12; i++) {
      const p = limiter.tryAcquire() as NonNullable<ReturnType<Limiter['tryAcquire']>>;
      await clock.advance(10);
      p.success();
    }
    expect(samples).toHaveLength(3);
    expect(samples.every((s) => s.rtt === 10 && !s.dropped)).toBe(true);
    // An unsampled drop is still fed, with the service-time estimate as its duration.
    const p = limiter.tryAcquire() as NonNullable<ReturnType<Limiter['tryAcquire']>>;
    expect(Number.isNaN(p.startTime)).toBe(true);
    p.dropped();
    expect(samples.at(-1)).toMatchObject({ dropped: true, rtt: 10 });
    expect(() => new Limiter({ sampleEvery: 0 })).toThrow(
      /"sampleEvery" must be an integer in \[1/,
    );
  });
});
