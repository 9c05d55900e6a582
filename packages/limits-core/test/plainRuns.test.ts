import { describe, expect, test, vi } from 'vitest';
import { Limiter } from '../src/limiter/Limiter.js';
import { deferred, flush } from './support/FakeClock.js';

/**
 * `run()` without options at a fixed limit takes the plain path — no permit object, the task's own
 * promise, one shared pair of reactions releasing the unit. It must keep every rule of `run()`:
 * release exactly once when the task really settles, `classify` honoured, a sync throw returns the
 * unit at once, queued calls answered with their task's result.
 */
describe('run() on the plain path (fixed limit, no options)', () => {
  test('the caller gets the task promise itself, and the unit is back before the caller resumes', async () => {
    const limiter = new Limiter({ limit: 2 });
    const task = deferred<string>();
    const p = limiter.run(() => task.promise);
    expect(p).toBe(task.promise);
    expect(limiter.inflight).toBe(1);
    task.resolve('v');
    expect(await p).toBe('v');
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
  });

  test('plain values, thenables, rejections (undefined too) and sync throws all release once', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    await expect(limiter.run(() => 7)).resolves.toBe(7);
    // biome-ignore lint/suspicious/noThenProperty: a task may return a thenable that is not a promise
    const thenable = { then: (ok: (v: number) => void) => ok(8) } as PromiseLike<number>;
    await expect(limiter.run(() => thenable)).resolves.toBe(8);
    await expect(limiter.run(() => Promise.reject(new Error('x')))).rejects.toThrow('x');
    await expect(limiter.run(() => Promise.reject(undefined))).rejects.toBeUndefined();
    const boom = new Error('sync');
    const thrown = limiter.run(() => {
      throw boom;
    });
    expect(limiter.inflight).toBe(0); // never started: the unit is back at once
    await expect(thrown).rejects.toBe(boom);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
  });

  test('classify sees the value or the error; one that throws is reported and the unit still goes back', async () => {
    const seen: unknown[][] = [];
    const bad = new Error('classify bug');
    const limiter = new Limiter({
      limit: 1,
      classify: (error, result) => {
        seen.push([error, result]);
        if (result === 'throw') throw bad;
        return undefined;
      },
    });
    const errors: unknown[] = [];
    limiter.on('error', (e) => errors.push(e));
    await limiter.run(() => Promise.resolve('ok'));
    const failed = new Error('f');
    await limiter.run(() => Promise.reject(failed)).catch(() => {});
    await limiter.run(() => Promise.resolve('throw'));
    expect(seen).toEqual([
      [undefined, 'ok'],
      [failed, undefined],
      [undefined, 'throw'],
    ]);
    expect(errors).toEqual([bad]);
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0 });
  });

  test('queued calls start in order as units free up, and each caller gets its own task result', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const gates = [deferred<string>(), deferred<string>(), deferred<string>()];
    const started: number[] = [];
    const results = gates.map((g, i) =>
      limiter.run(() => {
        started.push(i);
        return g.promise;
      }),
    );
    expect(limiter.queued).toBe(2);
    gates[0]?.resolve('a');
    await flush();
    expect(started).toEqual([0, 1]);
    gates[1]?.reject(new Error('b'));
    await flush();
    expect(started).toEqual([0, 1, 2]);
    gates[2]?.resolve('c');
    await expect(results[0]).resolves.toBe('a');
    await expect(results[1]).rejects.toThrow('b');
    await expect(results[2]).resolves.toBe('c');
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });

  test('a queued task that throws synchronously rejects its caller and passes the unit on', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10 });
    const hold = deferred<void>();
    const first = limiter.run(() => hold.promise);
    const boom = new Error('sync');
    const throwing = limiter.run(() => {
      throw boom;
    });
    const after = limiter.run(() => 'after');
    hold.resolve();
    await first;
    await expect(throwing).rejects.toBe(boom);
    await expect(after).resolves.toBe('after');
    expect(limiter.snapshot()).toMatchObject({ inflight: 0, permits: 0, queued: 0 });
  });

  test('close() waits for plain runs in flight', async () => {
    const limiter = new Limiter({ limit: 2 });
    const task = deferred<void>();
    void limiter.run(() => task.promise);
    const closed = vi.fn();
    const closing = limiter.close().then(closed);
    await flush();
    expect(closed).not.toHaveBeenCalled();
    task.resolve();
    await closing;
    expect(closed).toHaveBeenCalledWith({ drained: true, permits: 0, inflight: 0 });
  });
});
