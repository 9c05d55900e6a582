// runWithContext and currentContext on their own: what a context holds, how init is checked, what an
// inner context inherits, and that the context follows the work across awaits and timers only.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Context } from '../src/context/RequestContext.js';
import { currentContext, runWithContext } from '../src/index.js';

describe('runWithContext', () => {
  it('runs the work inside a context with the defaults, across awaits, and none outside', async () => {
    expect(currentContext()).toBeUndefined();
    const seen = await runWithContext({}, async () => {
      await nextTurn();
      return currentContext();
    });
    expect(seen?.deadline).toBeUndefined();
    expect(seen?.criticality).toBe('critical');
    expect(seen?.attempt).toBe(1);
    expect(seen?.cohort).toBeUndefined();
    expect(seen?.remainingMs()).toBe(Infinity);
    expect(seen?.signal.aborted).toBe(false);
    expect(currentContext()).toBeUndefined();
  });

  it('turns timeoutMs into a deadline on performance.now(), with the time left never negative', () => {
    const before = performance.now();
    const ctx = runWithContext(
      { timeoutMs: 500, criticality: 'sheddable', attempt: 2, cohort: 'u1' },
      () => currentContext(),
    );
    expect(ctx?.deadline).toBeGreaterThanOrEqual(before + 500);
    expect(ctx?.deadline).toBeLessThanOrEqual(performance.now() + 500);
    expect(ctx?.remainingMs()).toBeLessThanOrEqual(500);
    expect(ctx?.criticality).toBe('sheddable');
    expect(ctx?.attempt).toBe(2);
    expect(ctx?.cohort).toBe('u1');
    const past = runWithContext({ deadline: performance.now() - 1_000 }, () => currentContext());
    expect(past?.remainingMs()).toBe(0);
  });

  it('lets an inner context inherit what its init leaves out, and keeps the earlier deadline', () => {
    const controller = new AbortController();
    const outerDeadline = performance.now() + 1_000;
    runWithContext(
      {
        deadline: outerDeadline,
        criticality: 'sheddable_plus',
        attempt: 3,
        cohort: 'acme',
        signal: controller.signal,
      },
      () => {
        const inner = runWithContext({ timeoutMs: 60_000 }, () => currentContext());
        expect(inner?.deadline).toBe(outerDeadline);
        expect(inner?.criticality).toBe('sheddable_plus');
        expect(inner?.attempt).toBe(3);
        expect(inner?.cohort).toBe('acme');
        expect(inner?.signal).toBe(controller.signal);
        const tighter = runWithContext({ timeoutMs: 10, criticality: 'critical' }, () =>
          currentContext(),
        );
        expect(tighter?.deadline).toBeLessThan(outerDeadline);
        expect(tighter?.criticality).toBe('critical');
      },
    );
  });

  it('returns what the work returns, and lets its throw through', () => {
    expect(runWithContext({}, () => 42)).toBe(42);
    expect(() =>
      runWithContext({}, () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
  });

  it('refuses a bad init before running anything, naming the field, the range and the value', () => {
    let ran = false;
    const work = () => {
      ran = true;
    };
    const bad: Array<[unknown, RegExp]> = [
      [undefined, /needs an init object, got undefined/],
      [null, /runWithContext options must be an object, got null/],
      [{ timeoutMs: -1 }, /option "timeoutMs" must be a number in \[0, Infinity\], got -1/],
      [{ timeoutMs: '5' }, /option "timeoutMs" must be .*got "5"/],
      [{ deadline: Infinity }, /option "deadline" must be a number .*got Infinity/],
      [{ deadline: 1, timeoutMs: 1 }, /"timeoutMs" or "deadline", not both/],
      [
        { criticality: 'urgent' },
        /option "criticality" must be one of "critical_plus", .*got "urgent"/,
      ],
      [{ criticality: 3 }, /option "criticality" must be one of .*got 3/],
      [{ attempt: 0 }, /option "attempt" must be an integer in \[1, Infinity\), got 0/],
      [{ attempt: 1.5 }, /option "attempt" must be an integer .*got 1.5/],
      [{ cohort: 7 }, /option "cohort" must be a string, got 7/],
      [{ signal: {} }, /option "signal" must be an AbortSignal/],
      [{ timeout: 5 }, /unknown option "timeout" for runWithContext; did you mean "timeoutMs"\?/],
    ];
    for (const [init, message] of bad) {
      expect(() => runWithContext(init as never, work)).toThrow(message);
    }
    expect(() => runWithContext({}, 'no' as never)).toThrow(/needs a function, got "no"/);
    expect(ran).toBe(false);
  });
});

describe('Context', () => {
  it('makes its signal only when read, and aborts it with the reason given', () => {
    const read = new Context(undefined, 'critical', 1, undefined, undefined);
    const signal = read.signal;
    expect(read.signal).toBe(signal);
    read.abort('gone');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('gone');
    const late = new Context(undefined, 'critical', 1, undefined, undefined);
    late.abort('first');
    late.abort('second');
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toBe('first');
  });
});
