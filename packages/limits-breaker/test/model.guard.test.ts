/**
 * Model-based suite of `guard()`: random sequences of calls that succeed,
 * fail, hang, time out, throw synchronously or return a thenable whose `then()` throws, against a
 * model of what is running, with opossum's state changes (CLOSED/OPEN/HALF_OPEN) on fake timers,
 * forced opens, and shutdown(). After every command: the limiter holds exactly the running calls,
 * its queue holds exactly the calls waiting for a permit (none while OPEN), trials of a HALF_OPEN
 * episode never exceed probeSlots and `stats().trials` is never negative. At the end every caller
 * promise has settled and, after shutdown(), no timer and no permit is left.
 *
 * Seeded, sized by run count: `LIMITS_MODEL_SEED`, `LIMITS_MODEL_RUNS`, `LIMITS_MODEL_PATH`,
 * `LIMITS_MODEL_LENGTH`.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CircuitOpenError } from '../src/errors.js';
import { guard } from '../src/guard.js';
import type { CircuitState } from '../src/types.js';
import { opossum9 } from './support/opossum.js';
import { clock, flushMicrotasks } from './support/timers.js';

const CircuitBreaker = opossum9;

const SEED = Number(process.env.LIMITS_MODEL_SEED ?? 9_0001);
const RUNS = Number(process.env.LIMITS_MODEL_RUNS ?? 1000);
const PATH = process.env.LIMITS_MODEL_PATH;
const LENGTH = Number(process.env.LIMITS_MODEL_LENGTH ?? 30);

type Behaviour = 'ok' | 'fail' | 'hang' | 'syncThrow' | 'value' | 'abortAware' | 'badThenable';

interface Config {
  probeSlots: number;
  limit: number;
  maxQueued: number;
  timeoutMs: number | false;
  volumeThreshold: number;
  resetTimeout: number;
  fallback: boolean;
}

type Op =
  | { k: 'fire'; behaviour: Behaviour }
  | { k: 'finish'; index: number; ok: boolean }
  | { k: 'advance'; ms: number }
  | { k: 'open' }
  | { k: 'shutdown' };

const configArb: fc.Arbitrary<Config> = fc.record({
  probeSlots: fc.integer({ min: 1, max: 3 }),
  limit: fc.integer({ min: 1, max: 4 }),
  maxQueued: fc.constantFrom(0, 2, 6),
  timeoutMs: fc.constantFrom<number | false>(false, 30, 60),
  volumeThreshold: fc.integer({ min: 0, max: 3 }),
  resetTimeout: fc.constantFrom(40, 100),
  fallback: fc.boolean(),
});

function opArb(withBadThenable: boolean): fc.Arbitrary<Op> {
  const behaviours: Behaviour[] = ['ok', 'fail', 'hang', 'syncThrow', 'value', 'abortAware'];
  if (withBadThenable) behaviours.push('badThenable');
  return fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        k: fc.constant('fire' as const),
        behaviour: fc.constantFrom(...behaviours),
      }),
    },
    {
      weight: 5,
      arbitrary: fc.record({
        k: fc.constant('finish' as const),
        index: fc.nat(),
        ok: fc.boolean(),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        k: fc.constant('advance' as const),
        ms: fc.integer({ min: 0, max: 60 }),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ k: 'open' as const }) },
    { weight: 1, arbitrary: fc.constant({ k: 'shutdown' as const }) },
  );
}

interface CallRec {
  id: number;
  behaviour: Behaviour;
  /** HALF_OPEN episode the call was fired in (0: fired while not HALF_OPEN). */
  episode: number;
  started: boolean;
  /** Clock ms when the action started. */
  startedAt: number;
  /** Date.now() at fire(): the call's `timeoutMs` starts here. */
  firedAt: number;
  /** The action settled (or never started anything: threw, returned a value). */
  done: boolean;
  answered: boolean;
  error?: unknown;
  resolve?: (v: unknown) => void;
  reject?: (e: unknown) => void;
  signal?: AbortSignal;
}

const flush = () => flushMicrotasks(20);

type ListenerAction = 'none' | 'fire' | 'throw';

class ListenerError extends Error {
  override name = 'ListenerError';
}

async function runModel(config: Config, ops: Op[], script: ListenerAction[] = []): Promise<void> {
  const calls: CallRec[] = [];
  const problems: string[] = [];
  let episode = 0;
  const g = guard<[number], string>(
    (ctx, id) => {
      const c = calls[id] as CallRec;
      c.started = true;
      c.startedAt = Date.now();
      if (c.behaviour === 'syncThrow') {
        c.done = true;
        throw new Error('threw before starting');
      }
      if (c.behaviour === 'value') {
        c.done = true;
        return 'value';
      }
      if (c.behaviour === 'badThenable') {
        c.done = true;
        return {
          // biome-ignore lint/suspicious/noThenProperty: a thenable whose then() throws
          then() {
            throw new Error('then() threw');
          },
        } as unknown as Promise<string>;
      }
      if (c.behaviour === 'fail') {
        c.done = true;
        return Promise.reject(new Error('failed'));
      }
      return new Promise<string>((resolve, reject) => {
        c.resolve = (v) => {
          c.done = true;
          resolve(v as string);
        };
        c.reject = (e) => {
          c.done = true;
          reject(e);
        };
        if (c.behaviour === 'abortAware') {
          c.signal = ctx.signal;
          const onAbort = () => c.reject?.(ctx.signal.reason);
          if (ctx.signal.aborted) onAbort();
          else ctx.signal.addEventListener('abort', onAbort, { once: true });
        }
      });
    },
    {
      CircuitBreaker,
      clock,
      probeSlots: config.probeSlots,
      timeoutMs: config.timeoutMs,
      volumeThreshold: config.volumeThreshold,
      errorThresholdPercentage: 50,
      resetTimeout: config.resetTimeout,
      limiter: { limit: config.limit, maxQueued: config.maxQueued, clock },
      ...(config.fallback
        ? { fallback: ({ reason }: { reason: string }) => `fallback:${reason}` }
        : {}),
    },
  );
  let shut = false;
  let draining = false;
  function fireCall(behaviour: Behaviour): void {
    const c: CallRec = {
      id: calls.length,
      behaviour,
      episode: g.state === 'HALF_OPEN' ? episode : 0,
      started: false,
      startedAt: Number.NaN,
      firedAt: Date.now(),
      done: false,
      answered: false,
    };
    calls.push(c);
    let promise: Promise<unknown> | undefined;
    try {
      promise = g.fire(c.id);
    } catch (error) {
      // fire() never throws synchronously.
      c.answered = true;
      problems.push(`fire() threw synchronously: ${String(error)}`);
    }
    promise?.then(
      () => {
        c.answered = true;
      },
      (error: unknown) => {
        c.answered = true;
        c.error = error;
      },
    );
  }
  const ctx = () => `config ${JSON.stringify(config)}`;
  g.on('state', (e: { from: CircuitState; to: CircuitState }) => {
    if (e.to === 'HALF_OPEN') episode++;
    const trials = g.stats().trials;
    if (trials < 0) problems.push(`stats().trials ${trials} at ${e.from} → ${e.to}`);
  });

  if (script.length > 0) {
    // Re-entrant and throwing listeners: a listener that fires another call, or throws.
    let step = 0;
    let depth = 0;
    let fired = 0;
    const act = () => {
      const a = script[step++ % script.length] as ListenerAction;
      // At most 20 calls fired by listeners per run: a listener firing on every release is an
      // endless stream of work, not a bug.
      if (a === 'none' || depth > 1 || shut || draining || fired >= 20) return;
      if (a === 'throw') throw new ListenerError('listener threw');
      depth++;
      fired++;
      try {
        fireCall('value');
      } finally {
        depth--;
      }
    };
    for (const event of ['state', 'fallback', 'release', 'reject'] as const) g.on(event, act);
  }
  // The limiter reports its own listeners' errors (the guard forwards release/reject through it).
  g.limiter.on('error', () => {});
  const running = () => calls.filter((c) => c.started && !c.done);
  const check = (where: string) => {
    expect(problems, `${where}, ${ctx()}`).toEqual([]);
    const stats = g.stats();
    expect(stats.trials, `stats().trials, ${where}, ${ctx()}`).toBeGreaterThanOrEqual(0);
    if (shut) return;
    // The limiter holds exactly the calls whose action is running (a timed-out call keeps its
    // permit until its action really ends).
    expect(g.limiter.inflight, `inflight, ${where}, ${ctx()}`).toBe(running().length);
    const waiting = calls.filter((c) => !c.started && !c.answered).length;
    expect(g.limiter.queued, `queued, ${where}, ${ctx()}`).toBe(waiting);
    // A call with a timeout is answered at its timeout, whether or not its action has ended: the
    // timeout counts from fire(), queued or not.
    if (config.timeoutMs !== false) {
      const now = Date.now();
      for (const c of calls) {
        if (now - c.firedAt >= config.timeoutMs) {
          expect(c.answered, `call ${c.id} answered at its timeout, ${where}, ${ctx()}`).toBe(true);
        }
      }
    }
    // Calls waiting for a permit are shed when the circuit opens.
    if (g.state === 'OPEN') {
      expect(g.limiter.queued, `calls still queued while OPEN, ${where}, ${ctx()}`).toBe(0);
    }
    // The trials of one HALF_OPEN episode never exceed probeSlots.
    if (g.state === 'HALF_OPEN') {
      const trials = running().filter((c) => c.episode === episode).length;
      expect(
        trials,
        `trials running in episode ${episode}, ${where}, ${ctx()}`,
      ).toBeLessThanOrEqual(config.probeSlots);
      expect(stats.trials).toBeLessThanOrEqual(config.probeSlots);
    }
  };

  for (const [i, op] of ops.entries()) {
    switch (op.k) {
      case 'fire':
        fireCall(op.behaviour);
        break;
      case 'finish': {
        const open = calls.filter((c) => c.started && !c.done && c.resolve !== undefined);
        if (open.length === 0) break;
        const c = open[op.index % open.length] as CallRec;
        if (op.ok) c.resolve?.('done');
        else c.reject?.(new Error('failed late'));
        break;
      }
      case 'advance':
        try {
          await vi.advanceTimersByTimeAsync(op.ms);
        } catch (error) {
          // A state listener that throws from opossum's reset timer: the error surfaces from the
          // timer (an uncaught exception in a real process), like any EventEmitter listener's.
          if (!(error instanceof ListenerError)) throw error;
        }
        break;
      case 'open':
        if (!shut) {
          try {
            g.breaker.open();
          } catch (error) {
            // A state listener that throws: it surfaces here, to whoever opened the circuit.
            if (!(error instanceof ListenerError)) throw error;
          }
        }
        break;
      case 'shutdown': {
        shut = true;
        await g.shutdown();
        break;
      }
    }
    await flush();
    check(`after op ${i} ${JSON.stringify(op)}`);
  }

  // Drain: end every action, let every timeout and the reset timeout pass.
  draining = true;
  for (let round = 0; round < 20; round++) {
    for (const c of calls) {
      if (c.started && !c.done) c.resolve?.('drained');
    }
    await flush();
    check(`drain round ${round}`);
    if (calls.every((c) => c.answered) && running().length === 0) break;
    await vi.advanceTimersByTimeAsync(200);
  }
  const unanswered = calls.filter((c) => !c.answered).map((c) => `${c.id}:${c.behaviour}`);
  expect(unanswered, `callers never answered, ${ctx()}`).toEqual([]);
  await g.shutdown();
  await flush();
  expect(g.limiter.inflight, 'permits left after shutdown').toBe(0);
  expect(g.limiter.snapshot().permits).toBe(0);
  expect(g.limiter.queued).toBe(0);
  expect(vi.getTimerCount(), 'timers left after shutdown').toBe(0);
  for (const c of calls) {
    if (!config.fallback && c.error !== undefined && g.state === 'OPEN') {
      // A refused call says why (typed errors without a fallback).
      expect(c.error).toBeInstanceOf(Error);
    }
  }
  await expect(g.fire(-1)).rejects.toMatchObject({ code: 'SHUTDOWN' });
}

describe('guard() model', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const property = (withBadThenable: boolean, listeners = false) =>
    fc.asyncProperty(
      configArb,
      fc.array(opArb(withBadThenable), { maxLength: LENGTH }),
      listeners
        ? fc.array(fc.constantFrom<ListenerAction>('none', 'fire', 'throw'), {
            minLength: 1,
            maxLength: 8,
          })
        : fc.constant([] as ListenerAction[]),
      async (config, ops, script) => {
        vi.useFakeTimers();
        try {
          await runModel(config, ops, script);
        } finally {
          vi.clearAllTimers();
          vi.useRealTimers();
        }
      },
    );
  const base: Config = {
    probeSlots: 1,
    limit: 1,
    maxQueued: 0,
    timeoutMs: false,
    volumeThreshold: 0,
    resetTimeout: 40,
    fallback: false,
  };
  /** Fixed cases run before the random ones. */
  const examples = (...list: Array<[Config, Op[]]>) => ({
    examples: list.map(([config, ops]): [Config, Op[], ListenerAction[]] => [config, ops, []]),
  });
  const params = (offset: number) => ({
    seed: SEED + offset,
    numRuns: RUNS,
    ...(PATH === undefined || PATH === '' ? {} : { path: PATH }),
  });

  it('calls that succeed, fail, hang, time out or throw; state changes, trials, shutdown', async () => {
    await fc.assert(property(false), {
      ...params(30),
      ...examples(
        // A trial of a HALF_OPEN episode that ended settles later: trials must not read -1.
        [
          base,
          [{ k: 'open' }, { k: 'advance', ms: 40 }, { k: 'fire', behaviour: 'ok' }, { k: 'open' }],
        ],
        // Calls waiting for a permit when the circuit opens must leave the queue.
        [
          { ...base, maxQueued: 2 },
          [{ k: 'fire', behaviour: 'ok' }, { k: 'fire', behaviour: 'ok' }, { k: 'open' }],
        ],
      ),
    });
  });

  it('the same with thenables whose then() throws', async () => {
    await fc.assert(property(true), {
      ...params(31),
      // fire() must neither throw synchronously nor keep the permit.
      ...examples([{ ...base, timeoutMs: 60 }, [{ k: 'fire', behaviour: 'badThenable' }]]),
    });
  });

  it('re-entrant and throwing listeners on state, fallback, release and reject', async () => {
    await fc.assert(property(false, true), params(32));
  });

  it('CircuitOpenError is what an OPEN circuit answers without a fallback', async () => {
    vi.useFakeTimers();
    const g = guard(async () => 'x', { CircuitBreaker, clock, timeoutMs: false });
    g.breaker.open();
    await expect(g.fire()).rejects.toBeInstanceOf(CircuitOpenError);
    await g.shutdown();
  });
});

describe('guard(): long queues and throwing listeners', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  // A queued call whose action returns a value (or throws) synchronously settles inside the
  // limiter's dispatch that granted it, and its release dispatches the next one from there: the
  // guard must not let the stack grow with the queue (a stack overflow would leave callers
  // unanswered, a permit held and the rest queued forever).
  it.each(['value', 'throw'] as const)(
    'a long queue of calls whose action ends synchronously (%s) drains without recursing',
    async (kind) => {
      let release!: (v: string) => void;
      let first = true;
      const g = guard(
        () => {
          if (first) {
            first = false;
            return new Promise<string>((resolve) => {
              release = resolve;
            });
          }
          if (kind === 'throw') throw new Error('threw before starting');
          return 'sync';
        },
        {
          CircuitBreaker,
          clock,
          timeoutMs: false,
          limiter: { limit: 1, maxQueued: 100_000, clock },
        },
      );
      const head = g.fire();
      const n = 5000;
      let answered = 0;
      for (let i = 0; i < n; i++) {
        g.fire().then(
          () => answered++,
          () => answered++,
        );
      }
      release('x');
      await expect(head).resolves.toBe('x');
      await flush();
      expect(answered).toBe(n);
      expect(g.limiter.snapshot()).toMatchObject({ queued: 0, inflight: 0, permits: 0 });
      await g.shutdown();
    },
  );

  // A guard listener that throws must not escape into the guard's or the limiter's internals: a
  // throwing `fallback` listener, when a queued call expires, would abort the limiter's expiry loop,
  // leaving that caller and every later one unanswered and the next waiter queued past its wait.
  it('a fallback listener that throws leaves no caller unanswered and no waiter past its wait', async () => {
    vi.useFakeTimers();
    let release!: () => void;
    const g = guard(
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
      {
        CircuitBreaker,
        clock,
        timeoutMs: false,
        limiter: { limit: 1, maxQueued: 2, maxQueueWaitMs: 10, clock },
      },
    );
    g.limiter.on('error', () => {});
    g.on('fallback', () => {
      throw new ListenerError('fallback listener threw');
    });
    const head = g.fire();
    const answers: string[] = [];
    for (let i = 0; i < 2; i++) {
      g.fire().then(
        () => answers.push('ok'),
        () => answers.push('rejected'),
      );
    }
    await flush();
    expect(g.limiter.queued).toBe(2);
    try {
      await vi.advanceTimersByTimeAsync(50);
    } catch (error) {
      // Wherever the listener's error is reported, the callers must still be answered.
      if (!(error instanceof ListenerError)) throw error;
    }
    await flush();
    expect(answers).toEqual(['rejected', 'rejected']);
    expect(g.limiter.queued).toBe(0);
    release();
    await head;
    await g.shutdown();
  });

  // The same for a `state` listener that throws when a failed trial re-opens the circuit: the
  // trial's caller must be answered and the error must not become an unhandled rejection.
  it('a state listener that throws when a failed trial re-opens the circuit leaves no caller unanswered', async () => {
    vi.useFakeTimers();
    const g = guard(
      async () => {
        throw new Error('down');
      },
      { CircuitBreaker, clock, timeoutMs: 100, resetTimeout: 40, limiter: { limit: 1, clock } },
    );
    g.breaker.open();
    await vi.advanceTimersByTimeAsync(40);
    expect(g.state).toBe('HALF_OPEN');
    g.on('state', (e) => {
      if (e.to === 'OPEN') throw new ListenerError('state listener threw');
    });
    // The listener's error is reported on the guard's `error` event (with no `error` listener on the
    // guard or the limiter it would be rethrown on a microtask: an uncaught exception).
    const reported: unknown[] = [];
    g.on('error', (error) => reported.push(error));
    let answer = 'pending';
    g.fire().then(
      () => {
        answer = 'ok';
      },
      () => {
        answer = 'rejected';
      },
    );
    await flush();
    expect(answer).toBe('rejected');
    expect(g.limiter.inflight).toBe(0);
    expect(g.stats().trials).toBe(0);
    expect(reported).toEqual([expect.any(ListenerError)]);
    await g.shutdown();
  });
});
