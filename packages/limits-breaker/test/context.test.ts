import { Limiter } from 'limits-core';
import { describe, expect, test } from 'vitest';
import { guard } from '../src/guard.js';
import { CallContext } from '../src/index.js';
import { opossumVersions } from './support/opossum.js';
import { clock, useFakeTimersPerTest } from './support/timers.js';

describe('CallContext made with new (outside a guard)', () => {
  test('has one signal that never aborts', () => {
    const ctx = new CallContext();
    const signal = ctx.signal;
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal.aborted).toBe(false);
    expect(ctx.signal).toBe(signal);
    expect(new CallContext().signal).not.toBe(signal);
  });
});

describe.each(opossumVersions)(
  'the context and arguments of a guarded call on %s',
  (_name, CircuitBreaker) => {
    useFakeTimersPerTest();

    test('the action gets a CallContext of its own per call, whose signal is its own', async () => {
      const seen: CallContext[] = [];
      const g = guard(
        async (ctx) => {
          seen.push(ctx);
        },
        { CircuitBreaker, clock, limiter: new Limiter({ limit: 2, clock }), timeoutMs: false },
      );
      await g.fire();
      await g.fire();
      expect(seen[0]).toBeInstanceOf(CallContext);
      expect(seen[0]).not.toBe(seen[1]);
      expect(seen[0]?.signal).not.toBe(seen[1]?.signal);
      expect(seen[0]?.signal.aborted).toBe(false);
      await g.shutdown();
    });

    test('fire() hands the action and the fallback exactly the arguments it was given', async () => {
      const received: unknown[][] = [];
      const fallbacks: unknown[][] = [];
      const g = guard(
        async (_ctx: CallContext, ...args: unknown[]) => {
          received.push(args);
          if (args[0] === 'fail') throw new Error('boom');
          return args.length;
        },
        {
          CircuitBreaker,
          clock,
          limiter: new Limiter({ limit: 1, maxQueued: 5, clock }),
          timeoutMs: 1000,
          fallback: (_cause, ...args: unknown[]) => {
            fallbacks.push(args);
            return -1;
          },
        },
      );
      // Three at once: the first runs, the other two wait in the queue (their arguments with them).
      const answers = [g.fire(), g.fire(undefined), g.fire('a', 2, undefined)];
      await expect(Promise.all(answers)).resolves.toEqual([0, 1, 3]);
      expect(received).toEqual([[], [undefined], ['a', 2, undefined]]);
      await expect(g.fire('fail', 7)).resolves.toBe(-1);
      expect(fallbacks).toEqual([['fail', 7]]);
      await g.shutdown();
    });
  },
);
