import { Limiter } from 'limits-core';
import { describe, expect, test, vi } from 'vitest';
import { guard } from '../src/guard.js';
import { CallContext, CallTimeoutError } from '../src/index.js';
import { opossumVersions } from './support/opossum.js';
import { clock, deferred, useFakeTimersPerTest } from './support/timers.js';

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

describe.each(opossumVersions)(
  'the abort state of a guarded call on %s',
  (_name, CircuitBreaker) => {
    useFakeTimersPerTest();

    /** A guard whose action keeps its context and ends only when the test says so. */
    function holdingGuard() {
      const contexts: CallContext[] = [];
      const gates: Array<ReturnType<typeof deferred<string>>> = [];
      const g = guard(
        (ctx) => {
          contexts.push(ctx);
          const gate = deferred<string>();
          gates.push(gate);
          return gate.promise;
        },
        { CircuitBreaker, clock, timeoutMs: 100, limiter: { limit: 2, clock } },
      );
      return { g, contexts, gates };
    }

    test('a signal first read after the call timed out is already aborted, with the timeout as its reason', async () => {
      const { g, contexts, gates } = holdingGuard();
      const answer = g.fire().catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(100);
      expect(await answer).toBeInstanceOf(CallTimeoutError);
      const signal = (contexts[0] as CallContext).signal;
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toBeInstanceOf(CallTimeoutError);
      expect((contexts[0] as CallContext).signal).toBe(signal);
      // A later shutdown does not replace the first reason.
      await g.shutdown();
      expect((contexts[0] as CallContext).signal.reason).toBeInstanceOf(CallTimeoutError);
      gates[0]?.resolve('late');
    });

    test('a call timed out, then shut down, with its signal read only after both: the timeout is the reason', async () => {
      const { g, contexts, gates } = holdingGuard();
      const answer = g.fire().catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(100);
      expect(await answer).toBeInstanceOf(CallTimeoutError);
      await g.shutdown();
      const signal = (contexts[0] as CallContext).signal;
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toBeInstanceOf(CallTimeoutError);
      gates[0]?.resolve('late');
    });

    test('a signal read before the timeout aborts at the timeout, once, and keeps that reason through shutdown', async () => {
      const { g, contexts, gates } = holdingGuard();
      const answer = g.fire().catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(0);
      const signal = (contexts[0] as CallContext).signal;
      const aborts: unknown[] = [];
      signal.addEventListener('abort', () => aborts.push(signal.reason));
      expect(signal.aborted).toBe(false);
      await vi.advanceTimersByTimeAsync(100);
      expect(await answer).toBeInstanceOf(CallTimeoutError);
      await g.shutdown();
      expect(aborts).toHaveLength(1);
      expect(aborts[0]).toBeInstanceOf(CallTimeoutError);
      expect((contexts[0] as CallContext).signal).toBe(signal);
      gates[0]?.resolve('late');
    });

    test('shutdown aborts a running call with SHUTDOWN whether its signal was read before or only after', async () => {
      const { g, contexts, gates } = holdingGuard();
      const answers = [g.fire().catch((e: unknown) => e), g.fire().catch((e: unknown) => e)];
      await vi.advanceTimersByTimeAsync(0);
      const readBefore = (contexts[0] as CallContext).signal;
      await g.shutdown();
      for (const answer of answers) expect(await answer).toMatchObject({ code: 'SHUTDOWN' });
      const readAfter = (contexts[1] as CallContext).signal;
      for (const signal of [readBefore, readAfter]) {
        expect(signal.aborted).toBe(true);
        expect(signal.reason).toMatchObject({ code: 'SHUTDOWN' });
      }
      for (const gate of gates) gate.resolve('late');
    });

    test('a call that ends normally never aborts its signal, read during or after the action', async () => {
      const { g, contexts, gates } = holdingGuard();
      const answers = [g.fire(), g.fire()];
      await vi.advanceTimersByTimeAsync(0);
      const during = (contexts[0] as CallContext).signal;
      gates[0]?.resolve('a');
      gates[1]?.resolve('b');
      expect(await Promise.all(answers)).toEqual(['a', 'b']);
      await vi.advanceTimersByTimeAsync(1000);
      expect(during.aborted).toBe(false);
      expect((contexts[1] as CallContext).signal.aborted).toBe(false);
      await g.shutdown();
      // Shutdown after the calls ended aborts nothing of theirs.
      expect(during.aborted).toBe(false);
      expect((contexts[1] as CallContext).signal.aborted).toBe(false);
    });
  },
);
