import { describe, expect, it } from 'vitest';
import type { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { AcquireOptions, LimiterOptions } from '../src/limiter/options.js';
import type { Permit } from '../src/permit/Permit.js';
import { parseCriticality } from '../src/shedding/criticality.js';
import type { ShedThreshold } from '../src/shedding/options.js';
import { SyncClock } from './support/SyncClock.js';

/** One call through `acquireWith`, answered synchronously; a granted one is held `holdMs`. */
interface Outcome {
  options: AcquireOptions;
  answer: 'granted' | 'refused' | undefined;
  reason: string | undefined;
  /** It entered the queue (a refusal after that is not the door's). */
  queued: boolean;
}

class Load {
  readonly clock = new SyncClock();
  readonly limiter: Limiter;
  readonly outcomes: Outcome[] = [];

  constructor(options: LimiterOptions) {
    this.limiter = new Limiter({ clock: this.clock, trackLeaks: 'off', ...options });
  }

  send(options: AcquireOptions, holdMs: number): Outcome {
    const outcome: Outcome = { options, answer: undefined, reason: undefined, queued: false };
    this.outcomes.push(outcome);
    const clock = this.clock;
    const request = {
      granted(permit: Permit) {
        outcome.answer = 'granted';
        clock.setTimeout(() => permit.success(), holdMs);
      },
      refused(error: LimitExceededError) {
        outcome.answer = 'refused';
        outcome.reason = error.reason;
      },
      queued() {
        outcome.queued = true;
      },
    };
    const permit = this.limiter.acquireWith(request, options);
    if (permit !== undefined) request.granted(permit);
    return outcome;
  }

  /**
   * `perMs` calls of each kind every ms for `ms` ms (kinds interleaved), each held `holdMs`.
   * @returns the outcomes of these calls.
   */
  drive(kinds: (() => AcquireOptions)[], perMs: number, ms: number, holdMs: number): Outcome[] {
    // (`perMs` whole calls of each kind per ms.)
    const start = this.outcomes.length;
    for (let t = 0; t < ms; t++) {
      for (let i = 0; i < perMs; i++) for (const kind of kinds) this.send(kind(), holdMs);
      this.clock.advance(1);
    }
    return this.outcomes.slice(start);
  }

  get threshold(): ShedThreshold {
    return this.limiter.snapshot().shedding as ShedThreshold;
  }
}

function served(outcomes: Outcome[], match: (o: AcquireOptions) => boolean): number {
  const mine = outcomes.filter((o) => match(o.options));
  return mine.filter((o) => o.answer === 'granted').length / mine.length;
}

describe('shedding options', () => {
  it('is switched on by an object and checks each of its options, naming it', () => {
    expect(() => new Limiter({ shedding: true as never })).toThrow(
      /option "shedding" must be an object/,
    );
    expect(() => new Limiter({ shedding: { cohort: 4 } as never })).toThrow(
      /unknown option "shedding.cohort".*did you mean "shedding.cohorts"/,
    );
    expect(() => new Limiter({ shedding: { cohorts: 0 } })).toThrow(
      /option "shedding.cohorts" must be an integer in \[1, 1024\], got 0/,
    );
    expect(() => new Limiter({ shedding: { intervalMs: 5 } })).toThrow(/"shedding.intervalMs"/);
    expect(() => new Limiter({ shedding: { targetWaitMs: 0 } })).toThrow(/"shedding.targetWaitMs"/);
    expect(() => new Limiter({ shedding: { resaltMs: 1000 } })).toThrow(/"shedding.resaltMs"/);
    expect(() => new Limiter({ shedding: { salt: 7 as never } })).toThrow(
      /option "shedding.salt" must be a string, got 7/,
    );
    expect(() => new Limiter({ shedding: {}, priority: {} })).toThrow(
      /"shedding" cannot be combined with "priority"/,
    );
    expect(() => new Limiter({ shedding: {}, fairness: {} })).toThrow(
      /"shedding" cannot be combined with "fairness"/,
    );
    expect(new Limiter({ shedding: {} }).snapshot().shedding).toEqual({
      rank: 0,
      ranks: 1024,
      criticality: undefined,
      firstAttempts: false,
      cohort: 0,
    });
    expect(new Limiter().snapshot().shedding).toBeUndefined();
  });

  it('checks the acquire options criticality, attempt and cohort on every call', async () => {
    const limiter = new Limiter({ shedding: {} });
    await expect(limiter.acquire({ criticality: 'high' as never })).rejects.toThrow(
      /option "criticality" must be one of "critical_plus", "critical", "sheddable_plus", "sheddable", got "high"/,
    );
    await expect(limiter.acquire({ criticality: 3 as never })).rejects.toThrow(TypeError);
    await expect(limiter.acquire({ attempt: 0 })).rejects.toThrow(
      /option "attempt" must be an integer/,
    );
    await expect(limiter.acquire({ attempt: 1.5 })).rejects.toThrow(RangeError);
    expect(() => limiter.tryAcquire({ cohort: 5 as never })).toThrow(
      /option "cohort" must be a string, got 5/,
    );
    // Without shedding they are checked too, and otherwise ignored.
    await expect(new Limiter().acquire({ criticality: 'high' as never })).rejects.toThrow(
      RangeError,
    );
    expect(limiter.inflight).toBe(0);
  });

  it('reads a criticality from untrusted text, and nothing else', () => {
    expect(parseCriticality('critical_plus')).toBe('critical_plus');
    expect(parseCriticality(' SHEDDABLE_PLUS ')).toBe('sheddable_plus');
    expect(parseCriticality('critical-plus')).toBe('critical_plus');
    for (const bad of [
      '',
      'critical,sheddable',
      'urgent',
      'Critical',
      'x'.repeat(40),
      ['critical'],
    ]) {
      expect(parseCriticality(bad)).toBeUndefined();
    }
    expect(parseCriticality(undefined)).toBeUndefined();
  });
});

describe('the queue of a shedding limiter', () => {
  it('serves by rank: level, then first attempts before retries, whatever the arrival order', () => {
    const load = new Load({ limit: 1, maxQueued: 10, shedding: {} });
    const order: string[] = [];
    const names: [string, AcquireOptions][] = [
      ['sheddable', { criticality: 'sheddable' }],
      ['critical retry', { criticality: 'critical', attempt: 2 }],
      ['sheddable_plus', { criticality: 'sheddable_plus' }],
      ['critical', { criticality: 'critical' }],
      ['critical_plus', { criticality: 'critical_plus' }],
    ];
    const first = load.limiter.tryAcquire() as Permit;
    const permits: Permit[] = [];
    for (const [name, options] of names) {
      load.limiter.acquireWith(
        {
          granted: (p) => {
            order.push(name);
            permits.push(p);
          },
          refused: () => order.push(`${name} refused`),
        },
        options,
      );
    }
    first.success();
    while (permits.length > 0) (permits.shift() as Permit).success();
    expect(order).toEqual([
      'critical_plus',
      'critical',
      'critical retry',
      'sheddable_plus',
      'sheddable',
    ]);
  });

  it('makes room in a full queue for a higher-ranked newcomer, refusing its lowest waiter as shed', () => {
    const load = new Load({ limit: 1, maxQueued: 2, shedding: {} });
    load.limiter.tryAcquire();
    const low = load.send({ criticality: 'sheddable' }, 1);
    const retry = load.send({ criticality: 'critical', attempt: 3 }, 1);
    expect(load.limiter.queued).toBe(2);
    const high = load.send({ criticality: 'critical' }, 1);
    expect(low).toMatchObject({ answer: 'refused', reason: 'shed' });
    expect(high.answer).toBeUndefined(); // queued in its place
    const first = load.send({ criticality: 'critical' }, 1);
    expect(retry).toMatchObject({ answer: 'refused', reason: 'shed' });
    // Now the queue holds two first attempts of `critical`: a lower newcomer finds it full.
    const late = load.send({ criticality: 'sheddable_plus' }, 1);
    expect(late).toMatchObject({ answer: 'refused', reason: 'queue_full' });
    expect(load.limiter.queued).toBe(2);
    expect(first.answer).toBeUndefined();
  });

  it('without shedding, ignores the criticality: first come, first served', () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 1 });
    limiter.tryAcquire();
    const refused: string[] = [];
    limiter.acquireWith(
      { granted: () => {}, refused: (e) => refused.push(`sheddable ${e.reason}`) },
      { criticality: 'sheddable' },
    );
    limiter.acquireWith(
      { granted: () => {}, refused: (e) => refused.push(`critical ${e.reason}`) },
      { criticality: 'critical_plus' },
    );
    expect(refused).toEqual(['critical queue_full']);
  });
});

describe('the admission threshold', () => {
  const critical = (): AcquireOptions => ({ criticality: 'critical' });
  const sheddable = (): AcquireOptions => ({ criticality: 'sheddable' });

  it('rises under overload to refuse the lowest level at the door, and only it, then falls back', () => {
    // Capacity: 4 at a time, 10 ms each = 0.4 calls per ms. Offered: 0.2 critical + 0.8 sheddable.
    const load = new Load({ limit: 4, maxQueued: 50, shedding: {} });
    const moves: ShedThreshold[] = [];
    load.limiter.on('threshold', (t) => moves.push(t));
    // 1 critical and 4 sheddable every 5 ms, for 2 s.
    const outcomes: Outcome[] = [];
    for (let t = 0; t < 2000; t += 5) {
      outcomes.push(load.send({ criticality: 'critical', cohort: `c${t % 97}` }, 10));
      for (let i = 0; i < 4; i++) {
        outcomes.push(load.send({ criticality: 'sheddable', cohort: `s${(t + i) % 89}` }, 10));
      }
      load.clock.advance(5);
    }
    const late = outcomes.slice(outcomes.length / 2);
    expect(served(late, (o) => o.criticality === 'critical')).toBe(1);
    const shed = late.filter((o) => o.reason === 'shed');
    expect(shed.length).toBeGreaterThan(late.length / 3);
    expect(shed.every((o) => o.options.criticality === 'sheddable')).toBe(true);
    expect(load.threshold.criticality).toBe('sheddable');
    expect(load.threshold.firstAttempts).toBe(true);
    expect(moves.length).toBeGreaterThan(0);
    // The overload ends: light traffic, and the threshold is back at 0.
    for (let t = 0; t < 1000; t += 20) {
      load.send({ criticality: 'sheddable', cohort: 'late' }, 10);
      load.clock.advance(20);
    }
    expect(load.threshold.rank).toBe(0);
    expect(moves.at(-1)?.rank).toBe(0);
    expect(load.outcomes.at(-1)?.answer).toBe('granted');
  });

  it('sheds retries before first attempts of the same level', () => {
    const load = new Load({ limit: 2, maxQueued: 20, shedding: { cohorts: 4 } });
    const outcomes: Outcome[] = [];
    // Capacity 0.2 per ms; offered 0.2 first attempts + 0.2 retries, all critical.
    for (let t = 0; t < 3000; t += 10) {
      outcomes.push(load.send({ criticality: 'critical', cohort: `a${t % 13}` }, 10));
      outcomes.push(load.send({ criticality: 'critical', cohort: `a${t % 13}` }, 10));
      outcomes.push(load.send({ criticality: 'critical', attempt: 2, cohort: `r${t % 11}` }, 10));
      outcomes.push(load.send({ criticality: 'critical', attempt: 3, cohort: `r${t % 7}` }, 10));
      load.clock.advance(10);
    }
    const late = outcomes.slice(outcomes.length / 2);
    expect(served(late, (o) => (o.attempt ?? 1) === 1)).toBe(1);
    expect(served(late, (o) => (o.attempt ?? 1) > 1)).toBeLessThan(0.2);
    expect(load.threshold).toMatchObject({ criticality: 'critical', firstAttempts: false });
  });

  it('sheds the same cohorts interval after interval at a steady overload', () => {
    const load = new Load({ limit: 4, maxQueued: 40, shedding: { cohorts: 32 } });
    const users = Array.from({ length: 200 }, (_, i) => `user-${i}`);
    const windows: Set<string>[] = [];
    let n = 0;
    // Capacity 0.4 per ms; offered 1.2 per ms of sheddable calls from 200 users, in turn.
    for (let w = 0; w < 12; w++) {
      const shed = new Set<string>();
      for (let t = 0; t < 500; t++) {
        for (let i = 0; i < 6; i++) {
          const user = users[n++ % users.length] as string;
          const o = load.send({ criticality: 'sheddable', cohort: user }, 10);
          if (o.reason === 'shed') shed.add(user);
        }
        load.clock.advance(5 / 6);
      }
      windows.push(shed);
    }
    // After the first second, consecutive half-second windows shed nearly the same users.
    for (let w = 3; w < windows.length; w++) {
      const a = windows[w - 1] as Set<string>;
      const b = windows[w] as Set<string>;
      const both = [...a].filter((u) => b.has(u)).length;
      expect(both / (a.size + b.size - both)).toBeGreaterThan(0.9);
      expect(b.size).toBeGreaterThan(50);
      expect(b.size).toBeLessThan(200);
    }
  });

  it('lets a fractional share of the rank it cuts through pass', () => {
    const load = new Load({ limit: 1, maxQueued: 100, shedding: { cohorts: 1, intervalMs: 10 } });
    const outcomes = load.drive([sheddable], 1, 300, 5);
    // Capacity 0.2 per ms, offered 1 per ms of one level and one cohort: the threshold sits inside
    // that one rank and lets a share of it through.
    const late = outcomes.slice(150);
    const rate = served(late, () => true);
    expect(rate).toBeGreaterThan(0.1);
    expect(rate).toBeLessThan(0.5);
    expect(late.some((o) => o.reason === 'shed')).toBe(true);
    // Sheddable first attempts are rank 1 with one cohort: the threshold sits between 1 and 2.
    expect(load.threshold.rank).toBeGreaterThan(1);
    expect(load.threshold.rank).toBeLessThan(2);
  });

  it('refuses the queued calls a risen threshold is above, as shed', () => {
    const load = new Load({ limit: 1, maxQueued: 200, shedding: { intervalMs: 10 } });
    load.limiter.tryAcquire();
    const waiting = Array.from({ length: 20 }, (_, i) =>
      load.send({ criticality: 'sheddable', cohort: `u${i}` }, 5),
    );
    // Critical calls overload the limiter: the threshold rises above every sheddable rank.
    load.drive([critical], 1, 100, 5);
    expect(load.threshold.criticality).not.toBe(undefined);
    expect(waiting.every((o) => o.queued && o.answer === 'refused' && o.reason === 'shed')).toBe(
      true,
    );
  });

  it('never refuses first attempts of critical_plus at the door, and a closed limiter leaves nothing behind', async () => {
    const load = new Load({ limit: 1, maxQueued: 20, shedding: { intervalMs: 10 } });
    const outcomes = load.drive(
      [
        () => ({ criticality: 'critical_plus' }),
        () => ({ criticality: 'critical_plus', attempt: 2 }),
      ],
      2,
      500,
      5,
    );
    // The retries are shed at the door; first attempts only ever make room for each other.
    const atDoor = outcomes.filter((o) => o.reason === 'shed' && !o.queued);
    expect(atDoor.length).toBeGreaterThan(100);
    expect(atDoor.every((o) => o.options.attempt === 2)).toBe(true);
    expect(load.threshold.rank).toBe(7 * 128);
    const result = load.limiter.close({ timeoutMs: 100 });
    load.clock.advance(100);
    await expect(result).resolves.toMatchObject({ drained: true });
    expect(load.limiter.queued).toBe(0);
    expect(load.clock.pending).toBe(0);
    expect(load.outcomes.every((o) => o.answer !== undefined)).toBe(true);
  });

  it('tryAcquire and the no-options calls count and obey the threshold too', () => {
    const load = new Load({ limit: 2, maxQueued: 10, shedding: { intervalMs: 10 } });
    load.drive([sheddable], 2, 200, 10);
    expect(load.threshold.criticality).toBe('sheddable');
    expect(load.limiter.tryAcquire({ criticality: 'sheddable', attempt: 2 })).toBeUndefined();
    load.clock.advance(50);
    // A call without options is `critical`, a first attempt: above the threshold.
    const permit = load.limiter.tryAcquire();
    expect(permit).toBeDefined();
    permit?.success();
  });
});
