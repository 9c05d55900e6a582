import { type Guard, type GuardOptions, guard } from 'limits-breaker';
import { Limiter, type Outcome, RetryPolicy } from 'limits-core';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import {
  type FetchGuardOptions,
  fetchGuard,
  type LimitInterceptorOptions,
  limitFetch,
  limitInterceptor,
} from '../src/index.js';
import {
  ManualClock,
  startServer,
  type TestServer,
  type Undici,
  undici8Runs,
  undiciVersions,
  until,
} from './support/interceptorServer.js';

// Where undici 8 cannot run, say so as a skipped test (an empty test would pass and prove nothing).
if (!undici8Runs)
  test.skip(`undici 8 is tested only on Node >= 22.19 (its engines field); this is Node ${process.versions.node}`, () => {});

type AnyGuard = Guard<unknown[], unknown>;
type BreakerOptions = FetchGuardOptions<GuardOptions<unknown[], unknown>>;

/** Options that open the circuit at the first breaker failure, for a minute. */
const opensAtOnce: BreakerOptions = {
  volumeThreshold: 1,
  errorThresholdPercentage: 1,
  resetTimeout: 60_000,
};

describe.each(undiciVersions)('limitInterceptor with a fetchGuard on %s', (_name, undici) => {
  let server: TestServer;
  let agents: Array<{ close(): Promise<void> }>;
  let guards: AnyGuard[];
  let outcomes: Outcome[];

  beforeEach(async () => {
    server = await startServer();
    agents = [];
    guards = [];
    outcomes = [];
  });
  afterEach(async () => {
    vi.useRealTimers();
    for (const g of guards) await g.shutdown();
    for (const res of server.held) res.destroy();
    await Promise.all(agents.map((a) => a.close().catch(() => {})));
    await server.close();
  });

  /** A guard over a shared limiter whose releases are recorded in `outcomes`. */
  function breaker(options: BreakerOptions = {}, limit = 4) {
    const limiter = new Limiter({ limit, maxQueued: 10 });
    limiter.on('release', (e) => outcomes.push(e.outcome));
    const g = fetchGuard(guard, { limiter, ...options });
    guards.push(g);
    return { g, limiter };
  }

  function agentWith(
    options: LimitInterceptorOptions,
  ): ReturnType<Undici['Agent']['prototype']['compose']> {
    const agent = new undici.Agent();
    agents.push(agent);
    return agent.compose(limitInterceptor(options));
  }

  async function get(dispatcher: ReturnType<typeof agentWith>, path: string) {
    const res = await undici.request(`${server.origin}${path}`, { dispatcher });
    return { statusCode: res.statusCode, headers: res.headers, text: await res.body.text() };
  }

  test('503 and 500 are breaker failures classified for the limiter; 404 is a success', async () => {
    const { g } = breaker({ volumeThreshold: 10 });
    const dispatcher = agentWith({ guard: g });
    for (const status of [503, 500, 404]) {
      expect((await get(dispatcher, `/status/${status}`)).statusCode).toBe(status);
    }
    expect(outcomes).toEqual(['dropped', 'failure', 'success']);
    expect(g.stats().breaker).toMatchObject({ failures: 2, successes: 1 });
  });

  test('the circuit opens after failures and then refuses with CircuitOpenError, no request reaching the server', async () => {
    const { g, limiter } = breaker(opensAtOnce);
    const dispatcher = agentWith({ guard: g });
    await get(dispatcher, '/status/503');
    expect(g.state).toBe('OPEN');
    expect(server.count).toBe(1);
    for (let i = 0; i < 3; i++) {
      const error = await undici
        .request(`${server.origin}/status/200`, { dispatcher })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({
        name: 'CircuitOpenError',
        code: 'CIRCUIT_OPEN',
        state: 'OPEN',
      });
    }
    const viaFetch = await undici
      .fetch(`${server.origin}/status/200`, { dispatcher })
      .catch((e: unknown) => e);
    expect((viaFetch as Error).cause).toMatchObject({ code: 'CIRCUIT_OPEN' });
    expect(server.count).toBe(1);
    expect(limiter.inflight).toBe(0);
    expect(outcomes).toEqual(['dropped']);
  });

  test('a network error is a breaker failure and reaches the caller as undici reported it', async () => {
    const { g } = breaker();
    const dispatcher = agentWith({ guard: g });
    const closed = await startServer();
    await closed.close();
    const error = await undici
      .request(`${closed.origin}/status/200`, { dispatcher })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ECONNREFUSED' });
    await until(() => g.stats().breaker.failures === 1, 'the breaker counted the failure');
    expect(outcomes).toEqual(['dropped']);
  });

  test('HALF_OPEN lets probeSlots trials through and refuses the others until a trial closes the circuit', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { g } = breaker({ ...opensAtOnce, resetTimeout: 1_000, probeSlots: 1 });
    const dispatcher = agentWith({ guard: g });
    await get(dispatcher, '/status/503');
    expect(g.state).toBe('OPEN');
    vi.advanceTimersByTime(1_000);
    expect(g.state).toBe('HALF_OPEN');
    // The one trial reaches the server and waits for its headers there.
    const trial = undici.request(`${server.origin}/hang`, { dispatcher });
    await server.received(2);
    const refused = await undici
      .request(`${server.origin}/status/200`, { dispatcher })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'CIRCUIT_OPEN', state: 'HALF_OPEN' });
    expect(server.count).toBe(2);
    // The trial's headers close the circuit.
    server.held[0]?.end('back');
    const res = await trial;
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('back');
    expect(g.state).toBe('CLOSED');
    expect((await get(dispatcher, '/status/200')).text).toBe('body');
    expect(server.count).toBe(3);
  });

  test('a failed HALF_OPEN trial opens the circuit again', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { g } = breaker({ ...opensAtOnce, resetTimeout: 1_000 });
    const dispatcher = agentWith({ guard: g });
    await get(dispatcher, '/status/502');
    vi.advanceTimersByTime(1_000);
    expect(g.state).toBe('HALF_OPEN');
    expect((await get(dispatcher, '/status/504')).statusCode).toBe(504);
    expect(g.state).toBe('OPEN');
    await expect(
      undici.request(`${server.origin}/status/200`, { dispatcher }),
    ).rejects.toMatchObject({ code: 'CIRCUIT_OPEN' });
    expect(server.count).toBe(2);
  });

  test('one fetchGuard serves limitFetch and limitInterceptor: failures through fetch open the circuit for undici', async () => {
    const { g } = breaker(opensAtOnce);
    const api = limitFetch(fetch, { guard: g });
    await (await api(`${server.origin}/status/502`)).text();
    expect(g.state).toBe('OPEN');
    const dispatcher = agentWith({ guard: g });
    await expect(
      undici.request(`${server.origin}/status/200`, { dispatcher }),
    ).rejects.toMatchObject({ code: 'CIRCUIT_OPEN' });
    expect(server.count).toBe(1);
  });

  test('the breaker is judged when the headers arrive while the body holds the permit', async () => {
    const { g, limiter } = breaker({ volumeThreshold: 10 });
    const dispatcher = agentWith({ guard: g });
    const res = await undici.request(`${server.origin}/slow?status=500`, { dispatcher });
    expect(res.statusCode).toBe(500);
    await until(() => g.stats().breaker.failures === 1, 'the breaker judged the headers');
    expect(limiter.inflight).toBe(1);
    expect(outcomes).toEqual([]);
    const text = res.body.text();
    await until(() => server.held.length === 1, 'the server holds the body');
    server.held[0]?.write('more;');
    server.held[0]?.end('end');
    expect(await text).toBe('first;more;end');
    await until(() => limiter.inflight === 0, 'the permit is back');
    expect(outcomes).toEqual(['failure']);
    expect(g.stats().breaker.failures).toBe(1);
  });

  test("release: 'headers' gives the guard's permit back with the breaker's verdict", async () => {
    const { g, limiter } = breaker();
    const dispatcher = agentWith({ guard: g, release: 'headers' });
    const res = await undici.request(`${server.origin}/slow`, { dispatcher });
    await until(() => limiter.inflight === 0, 'the permit is back at the headers');
    expect(outcomes).toEqual(['success']);
    expect(g.stats().breaker.successes).toBe(1);
    res.body.destroy();
  });

  test('a fallback Response answers an open circuit through the handler, never reaching the server', async () => {
    const { g } = breaker({
      ...opensAtOnce,
      fallback: ({ reason }) =>
        new Response(`cached (${reason})`, { status: 200, headers: { 'x-from': 'cache' } }),
    });
    const dispatcher = agentWith({ guard: g });
    await get(dispatcher, '/status/503');
    const answer = await get(dispatcher, '/status/200');
    expect(answer).toMatchObject({ statusCode: 200, text: 'cached (open)' });
    expect(answer.headers['x-from']).toBe('cache');
    const viaFetch = await undici.fetch(`${server.origin}/x`, { dispatcher });
    expect(viaFetch.status).toBe(200);
    expect(await viaFetch.text()).toBe('cached (open)');
    expect(server.count).toBe(1);
    expect(outcomes).toEqual(['dropped']);
  });

  test('a fallback may answer { statusCode, headers, body } or a streamed Response; anything else is a TypeError', async () => {
    let answer: unknown = { statusCode: 203, headers: { 'X-Cache': 'hit' }, body: 'plain' };
    const { g } = breaker({ ...opensAtOnce, fallback: () => answer });
    const dispatcher = agentWith({ guard: g });
    await get(dispatcher, '/status/503');
    const plain = await get(dispatcher, '/a');
    expect(plain).toMatchObject({ statusCode: 203, text: 'plain' });
    expect(plain.headers['x-cache']).toBe('hit');
    const chunks = ['one;', 'two;', 'three'];
    answer = new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          const next = chunks.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(new TextEncoder().encode(next));
        },
      }),
      { status: 206 },
    );
    expect(await get(dispatcher, '/b')).toMatchObject({ statusCode: 206, text: 'one;two;three' });
    answer = { statusCode: 200, body: new Uint8Array([104, 105]) };
    expect(await get(dispatcher, '/bytes')).toMatchObject({ statusCode: 200, text: 'hi' });
    answer = { statusCode: 204 };
    expect(await get(dispatcher, '/empty')).toMatchObject({ statusCode: 204, text: '' });
    answer = { statusCode: 99 };
    await expect(undici.request(`${server.origin}/c`, { dispatcher })).rejects.toThrow(
      /fallback for limitInterceptor must return a Response or \{ statusCode/,
    );
    for (const bad of ['nope', { statusCode: 200, body: 42 }, { statusCode: 200, headers: 'x' }]) {
      answer = bad;
      await expect(undici.request(`${server.origin}/d`, { dispatcher })).rejects.toThrow(TypeError);
    }
    expect(server.count).toBe(1);
  });

  test("a fallback Response whose body errors fails the caller's body with that error", async () => {
    const { g } = breaker({
      ...opensAtOnce,
      fallback: () =>
        new Response(
          new ReadableStream<Uint8Array>({
            start(controller) {
              controller.enqueue(new TextEncoder().encode('part;'));
            },
            pull(controller) {
              controller.error(new Error('cache read failed'));
            },
          }),
        ),
    });
    const dispatcher = agentWith({ guard: g });
    await get(dispatcher, '/status/503');
    const res = await undici.request(`${server.origin}/x`, { dispatcher });
    await expect(res.body.text()).rejects.toThrow('cache read failed');
  });

  test('a fallback that comes after the caller gave up is dropped and its body cancelled', async () => {
    const clock = new ManualClock();
    let cancelled = false;
    const { g, limiter } = breaker(
      {
        attemptTimeoutMs: 200,
        clock,
        fallback: () =>
          new Response(
            new ReadableStream({
              cancel() {
                cancelled = true;
              },
            }),
          ),
      },
      1,
    );
    const dispatcher = agentWith({ guard: g });
    const held = await limiter.acquire();
    const controller = new AbortController();
    const pending = undici
      .request(`${server.origin}/status/200`, { dispatcher, signal: controller.signal })
      .catch((e: unknown) => e);
    await until(() => limiter.queued === 1, 'the request waits for a permit');
    controller.abort(new Error('gone'));
    expect(await pending).toMatchObject({ message: 'gone' });
    // The guard's own time limit runs out while the call still waits: its fallback finds nobody.
    clock.advance(200);
    await until(() => cancelled, "the fallback's body was cancelled");
    expect(limiter.queued).toBe(0);
    held.success();
    expect(server.count).toBe(0);
  });

  test("a fallback's streamed body follows the caller: destroying it cancels the Response body", async () => {
    let cancelled: unknown;
    let pulls = 0;
    const { g } = breaker({
      ...opensAtOnce,
      fallback: () =>
        new Response(
          new ReadableStream<Uint8Array>({
            pull(controller) {
              pulls++;
              controller.enqueue(new Uint8Array(64 * 1024));
            },
            cancel(reason) {
              cancelled = reason;
            },
          }),
        ),
    });
    const dispatcher = agentWith({ guard: g });
    await get(dispatcher, '/status/503');
    const res = await undici.request(`${server.origin}/endless`, { dispatcher });
    expect(res.statusCode).toBe(200);
    // Nobody reads: the caller's body pauses the reply, which stops pulling.
    await until(() => pulls > 0, 'the reply pulled a first chunk');
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    const paused = pulls;
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(pulls).toBe(paused);
    expect(pulls).toBeLessThan(100);
    res.body.destroy(new Error('enough'));
    await until(() => cancelled !== undefined, 'the Response body was cancelled');
    expect(server.count).toBe(1);
  });

  test('timeoutMs aborts a guarded request with a TimeoutError, a breaker failure released as dropped', async () => {
    const { g, limiter } = breaker({ volumeThreshold: 10 });
    const clock = new ManualClock();
    const dispatcher = agentWith({ guard: g, timeoutMs: 300, clock });
    const pending = undici
      .request(`${server.origin}/hang`, { dispatcher })
      .catch((e: unknown) => e);
    await server.received(1);
    clock.advance(299);
    expect(limiter.inflight).toBe(1);
    clock.advance(1);
    expect(await pending).toMatchObject({ name: 'TimeoutError' });
    await until(() => limiter.inflight === 0, 'the permit is back');
    expect(outcomes).toEqual(['dropped']);
    expect(g.stats().breaker.failures).toBe(1);
    expect(clock.pending).toBe(0);
  });

  test("timeoutMs answers a request still queued for the guard's permit at once; it is never sent", async () => {
    const { g, limiter } = breaker({}, 1);
    const clock = new ManualClock();
    const dispatcher = agentWith({ guard: g, timeoutMs: 300, clock });
    const held = await limiter.acquire();
    const pending = undici.request(`${server.origin}/status/200`, { dispatcher }).catch((e) => e);
    await until(() => limiter.queued === 1, 'the request waits for a permit');
    clock.advance(300);
    expect(await pending).toMatchObject({ name: 'TimeoutError' });
    held.success();
    await until(() => outcomes.length === 2, 'the queued call ran and let go');
    expect(outcomes).toEqual(['success', 'ignore']);
    expect(g.stats().breaker).toMatchObject({ failures: 0, successes: 0 });
    expect(server.count).toBe(0);
  });

  test("attemptTimeoutMs (the guard's own time limit) answers with its fallback and aborts the request", async () => {
    const clock = new ManualClock();
    const { g, limiter } = breaker({
      attemptTimeoutMs: 200,
      clock,
      volumeThreshold: 10,
      fallback: ({ reason }) => ({ statusCode: 200, body: `late (${reason})` }),
    });
    const dispatcher = agentWith({ guard: g });
    const pending = get(dispatcher, '/hang');
    await server.received(1);
    clock.advance(200);
    expect(await pending).toMatchObject({ statusCode: 200, text: 'late (timeout)' });
    await until(() => limiter.inflight === 0, 'the aborted request let go of its permit');
    expect(outcomes).toEqual(['dropped']);
  });

  test('attemptTimeoutMs answers a request undici still queues for a connection with the fallback; it is never sent', async () => {
    const clock = new ManualClock();
    const { g, limiter } = breaker({
      attemptTimeoutMs: 200,
      clock,
      volumeThreshold: 10,
      fallback: () => ({ statusCode: 200, body: 'fallback' }),
    });
    const agent = new undici.Agent({ connections: 1 });
    agents.push(agent);
    // The agent's one connection is busy with an unguarded request the server holds.
    const first = agent.request({ origin: server.origin, path: '/hang', method: 'GET' });
    await server.received(1);
    const dispatcher = agent.compose(limitInterceptor({ guard: g }));
    const second = get(dispatcher, '/status/200');
    await until(() => limiter.inflight === 1, 'the guarded request is dispatched');
    clock.advance(200);
    expect(await second).toMatchObject({ statusCode: 200, text: 'fallback' });
    server.held[0]?.end('done');
    expect(await (await first).body.text()).toBe('done');
    await until(() => limiter.inflight === 0, 'the queued request was aborted at its turn');
    expect(server.count).toBe(1);
    expect(outcomes).toEqual(['dropped']);
  });

  test("the caller's abort while queued for the guard's permit answers at once; the request is never sent", async () => {
    const { g, limiter } = breaker({}, 1);
    const dispatcher = agentWith({ guard: g });
    const held = await limiter.acquire();
    const controller = new AbortController();
    const pending = undici
      .request(`${server.origin}/status/200`, { dispatcher, signal: controller.signal })
      .catch((e: unknown) => e);
    await until(() => limiter.queued === 1, 'the request waits for a permit');
    controller.abort(new Error('gone'));
    expect(await pending).toMatchObject({ message: 'gone' });
    held.success();
    await until(() => outcomes.length === 2, 'the queued call ran and let go');
    expect(outcomes).toEqual(['success', 'ignore']);
    expect(server.count).toBe(0);
  });

  test('shutdown releases a permit held by a streaming body and ends the body with an error', async () => {
    const { g, limiter } = breaker();
    const dispatcher = agentWith({ guard: g });
    const res = await undici.request(`${server.origin}/slow`, { dispatcher });
    await until(() => g.stats().breaker.successes === 1, 'judged at the headers');
    expect(limiter.inflight).toBe(1);
    const text = res.body.text();
    await g.shutdown();
    expect(limiter.inflight).toBe(0);
    await expect(text).rejects.toMatchObject({ code: 'SHUTDOWN' });
    expect(outcomes).toEqual(['ignore']);
  });

  test('shutdown answers a request still waiting for its headers with the SHUTDOWN error', async () => {
    const { g, limiter } = breaker();
    const dispatcher = agentWith({ guard: g });
    const pending = undici
      .request(`${server.origin}/hang`, { dispatcher })
      .catch((e: unknown) => e);
    await server.received(1);
    expect(limiter.inflight).toBe(1);
    await g.shutdown();
    expect(await pending).toMatchObject({ code: 'SHUTDOWN' });
    expect(limiter.inflight).toBe(0);
  });

  test('a circuit refusal is never retried; a retried 503 that opens the circuit ends with CircuitOpenError', async () => {
    const { g } = breaker(opensAtOnce);
    const retry = new RetryPolicy({ baseDelayMs: 0, maxDelayMs: 0 });
    const dispatcher = agentWith({ guard: g, retry });
    const error = await undici
      .request(`${server.origin}/status/503`, { dispatcher })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'CIRCUIT_OPEN' });
    expect(server.count).toBe(1);
    expect(retry.stats()).toMatchObject({ attempts: 2, retries: 1 });
  });

  test('a Retry-After over one day ends the retries through the guard', async () => {
    const { g } = breaker({ volumeThreshold: 10 });
    const retry = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 3_600_000 });
    const dispatcher = agentWith({ guard: g, retry });
    const twoDaysAhead = new Date(Date.now() + 2 * 86_400_000).toUTCString();
    for (const retryAfter of ['172800', twoDaysAhead]) {
      const answer = await get(
        dispatcher,
        `/status/503?retry-after=${encodeURIComponent(retryAfter)}`,
      );
      expect(answer).toMatchObject({ statusCode: 503, text: 'body' });
    }
    expect(server.count).toBe(2);
    expect(retry.stats()).toMatchObject({ calls: 2, attempts: 2, retries: 0 });
    expect(outcomes).toEqual(['dropped', 'dropped']);
  });

  test("retries go through the guard, each attempt judged, and a fallback's answer is not retried", async () => {
    const { g } = breaker({
      volumeThreshold: 2,
      errorThresholdPercentage: 1,
      resetTimeout: 60_000,
      fallback: () => ({ statusCode: 503, body: 'still down (cached)' }),
    });
    const retry = new RetryPolicy({ maxAttempts: 5, baseDelayMs: 0, maxDelayMs: 0 });
    const dispatcher = agentWith({ guard: g, retry });
    // Two 503s open the circuit; the third attempt meets the open circuit: the fallback's 503 is final.
    const answer = await get(dispatcher, '/flaky/5');
    expect(answer).toMatchObject({ statusCode: 503, text: 'still down (cached)' });
    expect(server.count).toBe(2);
    expect(retry.stats()).toMatchObject({ attempts: 3, retries: 2 });
    expect(outcomes).toEqual(['dropped', 'dropped']);
  });
});

describe('limitInterceptor guard option', () => {
  test('needs exactly one of limiter and guard, a guard made by fetchGuard, and no maxOrigins with it', async () => {
    const limiter = new Limiter({ limit: 1 });
    const g = fetchGuard(guard, { limiter });
    expect(() => limitInterceptor({ guard: g, limiter })).toThrow(
      /exactly one of "limiter" \(with "maxOrigins"\) and "guard"/,
    );
    expect(() => limitInterceptor({ guard: g, maxOrigins: 5 })).toThrow(TypeError);
    const plain = guard(() => 1, { limiter });
    expect(() => limitInterceptor({ guard: plain as never })).toThrow(
      'limits: option "guard" must be a guard made by fetchGuard(guard, options), got',
    );
    expect(typeof limitInterceptor({ guard: g })).toBe('function');
    await g.shutdown();
    await plain.shutdown();
  });
});
