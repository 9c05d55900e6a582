import type { Clock } from 'limits-core';
import { describe, expect, test, vi } from 'vitest';
import { guard } from '../src/guard.js';
import { opossumVersions } from './support/opossum.js';
import { clock, flushMicrotasks, useFakeTimersPerTest } from './support/timers.js';

/**
 * A call's `timeoutMs` is counted from its `fire()` on the guard's clock, granted at once or queued:
 * it ends exactly `timeoutMs` later, never early, whatever the clock does meanwhile.
 */
describe.each(opossumVersions)(
  'guard() timeoutMs: when it starts, on %s',
  (_name, CircuitBreaker) => {
    useFakeTimersPerTest();

    /** A clock of its own: `t` moves only when the test says, timers run in `advance` (due order). */
    function manualClock() {
      let t = 0;
      let timers: { at: number; fn: () => void; id: number }[] = [];
      let ids = 0;
      const c: Clock & { set(ms: number): void; advance(ms: number): Promise<void> } = {
        now: () => t,
        setTimeout: (fn, ms) => {
          timers.push({ at: t + Math.max(0, ms), fn, id: ++ids });
          return ids;
        },
        clearTimeout: (h) => {
          timers = timers.filter((x) => x.id !== h);
        },
        set: (ms) => {
          t = ms;
        },
        async advance(ms) {
          const end = t + ms;
          for (;;) {
            await flushMicrotasks();
            const due = timers.filter((x) => x.at <= end).sort((x, y) => x.at - y.at)[0];
            if (due === undefined) break;
            timers = timers.filter((x) => x !== due);
            t = due.at;
            due.fn();
          }
          t = end;
          await flushMicrotasks();
        },
      };
      return c;
    }

    test('queued calls time out exactly timeoutMs after their own fire(), even when the clock moves within one synchronous run', async () => {
      const mc = manualClock();
      const at = new Map<string, number>();
      const g = guard((_ctx, _name: string) => new Promise<string>(() => {}), {
        CircuitBreaker,
        clock: mc,
        timeoutMs: 100,
        volumeThreshold: 100, // (a's timeout must not open the circuit and shed b and c)
        limiter: { limit: 1, maxQueued: 10, clock: mc },
        fallback: (cause, name: string) => {
          if (cause.reason === 'timeout') at.set(name, mc.now());
          return 'fb';
        },
      });
      // One synchronous run; the clock moves inside it (a slow caller between its fires).
      const calls = [g.fire('a')]; // granted at once at 0
      mc.set(30);
      calls.push(g.fire('b')); // queued at 30
      mc.set(50);
      calls.push(g.fire('c')); // queued at 50
      await mc.advance(79); // to 129
      expect(at.get('a')).toBe(100);
      expect(at.has('b')).toBe(false);
      await mc.advance(1);
      expect(at.get('b')).toBe(130);
      expect(at.has('c')).toBe(false);
      await mc.advance(20);
      expect(at.get('c')).toBe(150);
      // A later run: its own start.
      mc.set(200);
      calls.push(g.fire('d')); // queued behind a, which still runs (it never settles)
      await mc.advance(99);
      expect(at.has('d')).toBe(false);
      await mc.advance(1);
      expect(at.get('d')).toBe(300);
      expect(await Promise.all(calls)).toEqual(['fb', 'fb', 'fb', 'fb']);
      await g.shutdown();
    });

    test('after an injected clock jumps back, a call granted at once still times out timeoutMs after its fire()', async () => {
      // The own limiter (Vegas: it stamps every permit's start) keeps its time monotonic by adding
      // the jump to its readings; the guard's time limit must count on the guard's clock.
      const mc = manualClock();
      const timedOutAt: number[] = [];
      const g = guard((_ctx) => new Promise<string>(() => {}), {
        CircuitBreaker,
        clock: mc,
        timeoutMs: 100,
        volumeThreshold: 100,
        fallback: (cause) => {
          if (cause.reason === 'timeout') timedOutAt.push(mc.now());
          return 'fb';
        },
      });
      mc.set(3_600_000);
      const first = g.fire(); // granted at once at 1 h
      await mc.advance(100);
      expect(timedOutAt).toEqual([3_600_100]);
      mc.set(1_000); // the clock jumps back by almost an hour
      const second = g.fire(); // granted at once at 1,000 on the guard's clock
      await mc.advance(100);
      expect(timedOutAt).toEqual([3_600_100, 1_100]);
      expect(await Promise.all([first, second])).toEqual(['fb', 'fb']);
      await g.shutdown();
    });

    test('a call answered before its timeoutMs (settled, or shed at shutdown) is never answered again at its timeout', async () => {
      const reasons: string[] = [];
      const g = guard(async () => 'ok', {
        CircuitBreaker,
        clock,
        timeoutMs: 100,
        limiter: { limit: 1, maxQueued: 10, clock },
        fallback: (cause) => {
          reasons.push(cause.reason);
          return 'fb';
        },
      });
      const calls = [g.fire(), g.fire(), g.fire()];
      expect(await Promise.all(calls)).toEqual(['ok', 'ok', 'ok']);
      await vi.advanceTimersByTimeAsync(500);
      const more = [g.fire(), g.fire()];
      await g.shutdown();
      await Promise.allSettled(more);
      await vi.advanceTimersByTimeAsync(500);
      expect(reasons).toEqual([]); // no timeout ever reached an answered call
    });
  },
);
