import { type AcquireOptions, Limiter } from 'limits-core';
import { describe, expect, test } from 'vitest';
import { guard } from '../src/guard.js';
import { baseOptions } from './support/opossum.js';
import { clock, deferred, flushMicrotasks, useFakeTimersPerTest } from './support/timers.js';

useFakeTimersPerTest();

describe('acquire options per call', () => {
  test("a function of the call's arguments gives each call its criticality: a shedding limiter serves by it", async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10, shedding: {}, clock });
    const gates: Array<ReturnType<typeof deferred<string>>> = [];
    const ran: string[] = [];
    const seen: Array<AcquireOptions | undefined> = [];
    const g = guard(
      (_ctx, name: string) => {
        ran.push(name);
        const d = deferred<string>();
        gates.push(d);
        return d.promise;
      },
      {
        ...baseOptions,
        limiter,
        acquire: (name: string) => {
          const options: AcquireOptions = {
            criticality: name.startsWith('report') ? 'sheddable' : 'critical',
            cohort: name,
          };
          seen.push(options);
          return options;
        },
      },
    );
    const calls = ['first', 'report-1', 'report-2', 'checkout'].map((n) => g.fire(n));
    await flushMicrotasks(5);
    expect(ran).toEqual(['first']);
    for (let i = 0; i < 4; i++) {
      gates[i]?.resolve('ok');
      await flushMicrotasks(10);
    }
    await Promise.all(calls);
    // The critical call overtook the two reports queued before it (the reports go in their cohorts'
    // order).
    expect(ran.slice(0, 2)).toEqual(['first', 'checkout']);
    expect(ran.slice(2).sort()).toEqual(['report-1', 'report-2']);
    expect(seen).toHaveLength(4);
    await g.shutdown();
  });

  test('a function that throws or returns bad options rejects that call only, before the limiter sees it', async () => {
    const limiter = new Limiter({ limit: 2, clock });
    let acquired = 0;
    limiter.on('acquire', () => acquired++);
    const boom = new Error('no options for you');
    const g = guard(async (_ctx, n: number) => n, {
      ...baseOptions,
      limiter,
      acquire: (n: number): AcquireOptions | undefined => {
        if (n === 1) throw boom;
        if (n === 2) return { criticality: 'urgent' as never };
        if (n === 3) return 'fast' as never;
        return n === 4 ? undefined : { cost: 1 };
      },
    });
    await expect(g.fire(1)).rejects.toBe(boom);
    await expect(g.fire(2)).rejects.toThrow(
      /option "acquire.criticality" must be one of .*got "urgent"/,
    );
    await expect(g.fire(3)).rejects.toThrow(
      /"acquire" function must return acquire options or undefined, got "fast"/,
    );
    expect(acquired).toBe(0);
    expect(g.stats().breaker.fires).toBe(0);
    await expect(g.fire(4)).resolves.toBe(4);
    await expect(g.fire(5)).resolves.toBe(5);
    expect(acquired).toBe(2);
    await g.shutdown();
  });
});
