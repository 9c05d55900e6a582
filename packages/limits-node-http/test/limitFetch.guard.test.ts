import { type Guard, type GuardOptions, guard } from 'limits-breaker';
import { Limiter, type ReleaseEvent, RetryPolicy } from 'limits-core';
import { Request as UndiciRequest, fetch as undiciFetch } from 'undici';
import { afterEach, beforeEach, describe, expect, expectTypeOf, test } from 'vitest';
import { limitFetch } from '../src/fetch/limitFetch.js';
import { fetchGuard } from '../src/shared/httpGuard.js';
import {
  type FetchServer,
  gate,
  ManualClock,
  reply,
  startServer,
  until,
} from './support/fetchServer.js';

const fetches = [
  ['global fetch', globalThis.fetch],
  ['undici fetch', undiciFetch as unknown as typeof fetch],
] as const;

describe.each(fetches)('limitFetch with a fetchGuard and %s', (_name, baseFetch) => {
  let server: FetchServer;
  const guards: Guard<unknown[], unknown>[] = [];
  beforeEach(async () => {
    server = await startServer();
  });
  afterEach(async () => {
    for (const g of guards.splice(0)) await g.shutdown();
    await server.close();
  });

  /** A guard on a shared limiter whose releases are recorded. */
  function breaker(options: Omit<GuardOptions<unknown[], unknown>, 'classify'> = {}) {
    const limiter = new Limiter({ limit: 5, maxQueued: 5 });
    const releases: ReleaseEvent[] = [];
    limiter.on('release', (e) => releases.push(e));
    const g = fetchGuard(guard, { limiter, ...options });
    guards.push(g);
    return { g, limiter, outcomes: () => releases.map((e) => e.outcome) };
  }

  test('holds the guard permit while the body streams and judges the breaker at the headers', async () => {
    const { g, limiter, outcomes } = breaker();
    const more = gate();
    server.handle = (_req, res) => {
      res.writeHead(200);
      res.write('a');
      more.promise.then(() => res.end('b'));
    };
    const f = limitFetch(baseFetch, { guard: g });
    const res = await f(server.url);
    await until(() => g.stats().breaker.successes === 1);
    expect(limiter.inflight).toBe(1);
    const text = res.text();
    more.open();
    expect(await text).toBe('ab');
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['success']);
  });

  test('counts 503 and 500 as breaker failures and classifies them for the limiter', async () => {
    const { g, outcomes } = breaker({ volumeThreshold: 10 });
    const f = limitFetch(baseFetch, { guard: g });
    server.handle = reply(503, 'busy');
    await (await f(server.url)).text();
    server.handle = reply(500, 'bug');
    await (await f(server.url)).text();
    server.handle = reply(404, 'none');
    await (await f(server.url)).text();
    await until(() => g.stats().breaker.failures === 2);
    expect(g.stats().breaker.successes).toBe(1);
    expect(outcomes()).toEqual(['dropped', 'failure', 'success']);
  });

  test('an open circuit rejects with CircuitOpenError before any network call, never retried', async () => {
    const { g } = breaker({
      volumeThreshold: 1,
      errorThresholdPercentage: 1,
      resetTimeout: 60_000,
    });
    const policy = new RetryPolicy({ baseDelayMs: 0, maxDelayMs: 0 });
    const f = limitFetch(baseFetch, { guard: g, retry: policy });
    server.handle = reply(503, 'down');
    // The 503 opens the circuit; its retry is refused by the open circuit, and not retried again.
    await expect(f(server.url)).rejects.toMatchObject({ code: 'CIRCUIT_OPEN' });
    expect(server.requests).toHaveLength(1);
    expect(policy.stats()).toMatchObject({ attempts: 2, retries: 1 });
    await expect(f(server.url)).rejects.toMatchObject({ code: 'CIRCUIT_OPEN' });
    const withSignal = f(server.url, { signal: new AbortController().signal });
    await expect(withSignal).rejects.toMatchObject({ code: 'CIRCUIT_OPEN' });
    expect(server.requests).toHaveLength(1);
    expect(g.limiter.inflight).toBe(0);
  });

  test('a Retry-After over one day ends the retries through the guard', async () => {
    const { g, outcomes } = breaker({ volumeThreshold: 10 });
    const policy = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 3_600_000 });
    const f = limitFetch(baseFetch, { guard: g, retry: policy });
    const twoDaysAhead = new Date(Date.now() + 2 * 86_400_000).toUTCString();
    for (const retryAfter of ['172800', twoDaysAhead]) {
      server.handle = reply(503, 'come back later', { 'retry-after': retryAfter });
      const res = await f(server.url);
      expect(res.status).toBe(503);
      expect(await res.text()).toBe('come back later');
    }
    expect(server.requests).toHaveLength(2);
    expect(policy.stats()).toMatchObject({ calls: 2, attempts: 2, retries: 0 });
    expect(outcomes()).toEqual(['dropped', 'dropped']);
  });

  test('a Request whose body is a stream is sent once through the guard, never retried', async () => {
    const { g, outcomes } = breaker({ volumeThreshold: 10 });
    const bodies: string[] = [];
    server.handle = (req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        bodies.push(body);
        reply(503, 'busy')(req, res);
      });
    };
    const policy = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 0 });
    const f = limitFetch(baseFetch, { guard: g, retry: policy });
    const RequestCtor = (
      baseFetch === globalThis.fetch ? Request : UndiciRequest
    ) as typeof Request;
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('upload'));
        c.close();
      },
    });
    const request = new RequestCtor(server.url, {
      method: 'PUT',
      body,
      duplex: 'half',
    } as RequestInit);
    const res = await f(request);
    expect(res.status).toBe(503);
    await res.text();
    expect(bodies).toEqual(['upload']);
    expect(policy.stats().calls).toBe(0);
    expect(request.bodyUsed).toBe(true);
    expect(outcomes()).toEqual(['dropped']);
  });

  test('a fallback Response is returned as is; a fallback that is not a Response is a TypeError', async () => {
    const cached = new Response('cached');
    const { g } = breaker({
      volumeThreshold: 1,
      errorThresholdPercentage: 1,
      fallback: () => cached,
    });
    server.handle = reply(503, 'down');
    const f = limitFetch(baseFetch, { guard: g });
    await (await f(server.url)).text();
    await until(() => g.state === 'OPEN');
    expect(await f(server.url)).toBe(cached);
    const { g: bad } = breaker({
      volumeThreshold: 1,
      errorThresholdPercentage: 1,
      fallback: () => 'nope' as never,
    });
    const h = limitFetch(baseFetch, { guard: bad });
    await (await h(server.url)).text();
    await until(() => bad.state === 'OPEN');
    await expect(h(server.url)).rejects.toThrow(/must return a Response/);
  });

  test('a network error is a breaker failure and rejects with the error', async () => {
    const { g, outcomes } = breaker();
    server.handle = (req) => req.socket.destroy();
    const f = limitFetch(baseFetch, { guard: g });
    await expect(f(server.url)).rejects.toThrow(TypeError);
    await until(() => g.stats().breaker.failures === 1);
    expect(outcomes()).toEqual(['dropped']);
  });

  test('the time limit aborts a guarded request with a TimeoutError', async () => {
    const { g, limiter, outcomes } = breaker();
    server.handle = () => {};
    const clock = new ManualClock();
    const f = limitFetch(baseFetch, { guard: g, timeoutMs: 300, clock });
    const pending = f(server.url);
    await until(() => server.requests.length === 1);
    clock.advance(300);
    await expect(pending).rejects.toMatchObject({ name: 'TimeoutError' });
    await until(() => limiter.inflight === 0);
    expect(outcomes()).toEqual(['dropped']);
  });

  test('a caller that aborts while queued for a guard permit is answered at once and never sent', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const releases: ReleaseEvent[] = [];
    limiter.on('release', (e) => releases.push(e));
    const g = fetchGuard(guard, { limiter });
    guards.push(g);
    const held = await limiter.acquire();
    const f = limitFetch(baseFetch, { guard: g });
    const controller = new AbortController();
    const pending = f(server.url, { signal: controller.signal });
    await until(() => limiter.queued === 1);
    controller.abort('gone');
    await expect(pending).rejects.toBe('gone');
    held.success();
    await until(() => limiter.inflight === 0 && releases.length === 2);
    expect(releases.map((e) => e.outcome)).toEqual(['success', 'ignore']);
    expect(server.requests).toHaveLength(0);
  });

  test('shutdown releases a permit held by an unread body', async () => {
    const { g, limiter } = breaker();
    server.handle = (_req, res) => {
      res.writeHead(200);
      res.write('streaming');
    };
    const f = limitFetch(baseFetch, { guard: g });
    const res = await f(server.url);
    expect(limiter.inflight).toBe(1);
    await g.shutdown();
    expect(limiter.inflight).toBe(0);
    await expect(res.text()).rejects.toThrow();
  });
});

describe('fetchGuard', () => {
  test('returns the guard with limits-breaker own type and checks its options against guard()', async () => {
    const g = fetchGuard(guard, { probeSlots: 2, fallback: (cause) => new Response(cause.reason) });
    expectTypeOf(g).toEqualTypeOf<Guard<unknown[], unknown>>();
    // @ts-expect-error a wrong option type is a compile error
    expect(() => fetchGuard(guard, { probeSlots: 'two' })).toThrow(TypeError);
    // @ts-expect-error classify belongs to limitFetch
    expect(() => fetchGuard(guard, { classify: () => 'success' })).toThrow(/pass "classify"/);
    await g.shutdown();
  });

  test('refuses a guard function that is missing and a classify of its own', () => {
    expect(() => fetchGuard(undefined as never)).toThrow(/needs limits-breaker's guard/);
    expect(() => fetchGuard(guard, { classify: () => 'success' } as never)).toThrow(
      /pass "classify" to limitFetch/,
    );
  });

  test('passes bad guard options on to guard, which refuses them', () => {
    expect(() => fetchGuard(guard, { probeSlots: -1 })).toThrow(RangeError);
    expect(() => fetchGuard(guard, { attemptTimeoutMs: -1 })).toThrow(/"timeoutMs"/);
  });

  test("takes one attempt's time limit as attemptTimeoutMs and refuses timeoutMs, which is the whole call's", async () => {
    // @ts-expect-error the whole call's time limit belongs to limitFetch / limitInterceptor
    expect(() => fetchGuard(guard, { timeoutMs: 100 })).toThrow(
      /fetchGuard does not take "timeoutMs": the whole call's time limit is the "timeoutMs" of limitFetch or limitInterceptor, and one attempt's is "attemptTimeoutMs"/,
    );
    const g = fetchGuard(guard, { attemptTimeoutMs: 100 });
    await g.shutdown();
  });
});
