import {
  LimitExceededError,
  Limiter,
  type ReleaseEvent,
  RetryBudget,
  type RetryEvent,
  RetryPolicy,
} from 'limits-core';
import { Request as UndiciRequest, fetch as undiciFetch } from 'undici';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { limitFetch } from '../src/fetch/limitFetch.js';
import { type FetchServer, ManualClock, reply, startServer, until } from './support/fetchServer.js';

const fetches = [
  ['global fetch', globalThis.fetch],
  ['undici fetch', undiciFetch as unknown as typeof fetch],
] as const;

function recorded(limit = 10, maxQueued = 0) {
  const limiter = new Limiter({ limit, maxQueued });
  const releases: ReleaseEvent[] = [];
  limiter.on('release', (e) => releases.push(e));
  return { limiter, outcomes: () => releases.map((e) => e.outcome) };
}

/** A request body that arrives as a stream of `chunks`. */
function streamOf(...chunks: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(c) {
      for (const chunk of chunks) c.enqueue(new TextEncoder().encode(chunk));
      c.close();
    },
  });
}

/** A policy that retries at once (no backoff), so no test waits on time. */
function immediate(options: ConstructorParameters<typeof RetryPolicy>[0] = {}) {
  return new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 0, ...options });
}

describe.each(fetches)('limitFetch retries with %s', (_name, baseFetch) => {
  const RequestCtor = (baseFetch === globalThis.fetch ? Request : UndiciRequest) as typeof Request;
  let server: FetchServer;
  beforeEach(async () => {
    server = await startServer();
  });
  afterEach(async () => {
    await server.close();
  });

  /** Answers each request once its body has arrived with `answer(n)` (n from 1); the bodies seen. */
  function bodiesAnswered(answer: (n: number) => [number, string]): string[] {
    const bodies: string[] = [];
    server.handle = (req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        bodies.push(body);
        const [status, text] = answer(bodies.length);
        reply(status, text)(req, res);
      });
    };
    return bodies;
  }

  test('retries a 503 and releases the discarded response permit as dropped', async () => {
    const { limiter, outcomes } = recorded();
    let n = 0;
    server.handle = (req, res) => (n++ === 0 ? reply(503, 'busy')(req, res) : res.end('fine'));
    const f = limitFetch(baseFetch, { limiter, retry: immediate() });
    const res = await f(server.url);
    expect(await res.text()).toBe('fine');
    expect(server.requests).toHaveLength(2);
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['dropped', 'success']);
  });

  test('retries a connection reset, an error classified dropped', async () => {
    const { limiter, outcomes } = recorded();
    let n = 0;
    server.handle = (req, res) => (n++ === 0 ? req.socket.destroy() : res.end('fine'));
    const policy = immediate();
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    expect(await (await f(server.url)).text()).toBe('fine');
    expect(policy.stats().retries).toBe(1);
    expect(outcomes()).toEqual(['dropped', 'success']);
  });

  test('honours a valid Retry-After as the minimum wait', async () => {
    const { limiter } = recorded();
    const clock = new ManualClock();
    const policy = new RetryPolicy({ maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 60_000, clock });
    const retries: RetryEvent[] = [];
    policy.on('retry', (e) => retries.push(e));
    let n = 0;
    server.handle = (req, res) =>
      n++ === 0 ? reply(429, 'slow down', { 'retry-after': '2' })(req, res) : res.end('fine');
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    const pending = f(server.url);
    await until(() => clock.pending === 1);
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(2000);
    expect(server.requests).toHaveLength(1);
    clock.advance(2000);
    expect(await (await pending).text()).toBe('fine');
    expect(server.requests).toHaveLength(2);
  });

  test('an HTTP-date Retry-After counts too, and garbage falls back to the backoff', async () => {
    const { limiter } = recorded();
    const clock = new ManualClock();
    const policy = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 60_000, clock });
    const retries: RetryEvent[] = [];
    policy.on('retry', (e) => retries.push(e));
    const date = new Date(Date.now() + 30_000).toUTCString();
    let n = 0;
    server.handle = (req, res) => {
      n++;
      if (n === 1) reply(503, '', { 'retry-after': date })(req, res);
      else if (n === 2) reply(503, '', { 'retry-after': 'soon' })(req, res);
      else res.end('fine');
    };
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    const pending = f(server.url);
    await until(() => clock.pending === 1);
    expect(retries[0]?.delayMs).toBeGreaterThan(25_000);
    clock.advance(retries[0]?.delayMs as number);
    await until(() => clock.pending === 1);
    expect(retries[1]?.delayMs).toBeLessThanOrEqual(20); // the backoff for retry 2: ≤ 10 × 2
    clock.advance(20);
    expect(await (await pending).text()).toBe('fine');
  });

  test('a Retry-After longer than maxDelayMs is not waited for: the response is returned', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = reply(503, 'later', { 'retry-after': '3600' });
    const policy = new RetryPolicy({ maxAttempts: 3, maxDelayMs: 10_000 });
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    const res = await f(server.url);
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('later');
    expect(server.requests).toHaveLength(1);
    expect(outcomes()).toEqual(['dropped']);
  });

  test('a Retry-After over one day ends the retries, as delta-seconds or as an HTTP-date', async () => {
    const { limiter, outcomes } = recorded();
    const policy = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 3_600_000 });
    const f = limitFetch(baseFetch, { limiter, retry: policy });
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

  test('does not retry a success, a 404 or a POST by default', async () => {
    const { limiter } = recorded();
    const policy = immediate();
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    server.handle = reply(404, 'no');
    expect((await f(server.url)).status).toBe(404);
    server.handle = reply(503, 'busy');
    const post = await f(server.url, { method: 'POST', body: 'x' });
    expect(post.status).toBe(503);
    await post.text();
    expect(server.requests).toHaveLength(2);
    expect(policy.stats().retries).toBe(0);
  });

  test('retries a POST that retryable allows, and never a body given as a stream', async () => {
    const { limiter } = recorded();
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
    const f = limitFetch(baseFetch, {
      limiter,
      retry: immediate({ maxAttempts: 2 }),
      retryable: (r) => r.method === 'POST',
    });
    await (await f(server.url, { method: 'POST', body: 'again' })).text();
    expect(bodies).toEqual(['again', 'again']);
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('once'));
        c.close();
      },
    });
    await (
      await f(server.url, { method: 'POST', body: stream, duplex: 'half' } as RequestInit)
    ).text();
    expect(bodies).toEqual(['again', 'again', 'once']);
    expect(limiter.inflight).toBe(0);
  });

  test('a Request whose body is a stream is sent once, never retried, and no copy of it is kept', async () => {
    const { limiter, outcomes } = recorded();
    const bodies = bodiesAnswered(() => [503, 'busy']);
    const policy = immediate();
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    const request = new RequestCtor(server.url, {
      method: 'PUT',
      body: streamOf('up', 'load'),
      duplex: 'half',
    } as RequestInit);
    const res = await f(request);
    expect(res.status).toBe(503);
    expect(await res.text()).toBe('busy');
    expect(bodies).toEqual(['upload']);
    expect(policy.stats().calls).toBe(0);
    // fetch read the request's own body: no tee keeps a copy of the upload for a retry.
    expect(request.bodyUsed).toBe(true);
    expect(outcomes()).toEqual(['dropped']);
    expect(limiter.inflight).toBe(0);
  });

  test('a Request made with a string body is sent once too; the same body in init is retried', async () => {
    const { limiter } = recorded();
    const bodies = bodiesAnswered((n) => (n <= 2 ? [503, 'busy'] : [200, 'stored']));
    const policy = immediate();
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    // fetch reads every Request body as a stream, whatever it was made from.
    const res = await f(new RequestCtor(server.url, { method: 'PUT', body: 'doc' }));
    expect(res.status).toBe(503);
    await res.text();
    expect(bodies).toEqual(['doc']);
    const again = await f(server.url, { method: 'PUT', body: 'doc' });
    expect(await again.text()).toBe('stored');
    expect(bodies).toEqual(['doc', 'doc', 'doc']);
    expect(policy.stats()).toMatchObject({ calls: 1, retries: 1 });
  });

  test('a Request without a body is retried as it is', async () => {
    const { limiter, outcomes } = recorded();
    const bodies = bodiesAnswered((n) => (n === 1 ? [503, 'busy'] : [200, 'fine']));
    const f = limitFetch(baseFetch, { limiter, retry: immediate() });
    const res = await f(new RequestCtor(server.url));
    expect(await res.text()).toBe('fine');
    expect(bodies).toEqual(['', '']);
    expect(outcomes()).toEqual(['dropped', 'success']);
  });

  test('never retries a refusal by the limiter', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const held = await limiter.acquire();
    const policy = immediate();
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    await expect(f(server.url)).rejects.toBeInstanceOf(LimitExceededError);
    expect(policy.stats()).toMatchObject({ attempts: 1, retries: 0 });
    expect(server.requests).toHaveLength(0);
    held.success();
  });

  test('the caller abort during the wait before a retry rejects with its reason and stops', async () => {
    const { limiter } = recorded();
    const clock = new ManualClock();
    const policy = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 1000, clock });
    server.handle = reply(503, 'busy');
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    const controller = new AbortController();
    const pending = f(server.url, { signal: controller.signal });
    await until(() => clock.pending === 1);
    controller.abort('enough');
    await expect(pending).rejects.toBe('enough');
    expect(clock.pending).toBe(0);
    expect(server.requests).toHaveLength(1);
    expect(limiter.inflight).toBe(0);
  });

  test('the retry budget caps retries under a 100 % 503 burst', async () => {
    const { limiter } = recorded(100);
    server.handle = reply(503, 'down');
    const budget = new RetryBudget({ ratio: 0.1, minPerSecond: 0 });
    const policy = immediate({ maxAttempts: 5, budget });
    const f = limitFetch(baseFetch, { limiter, retry: policy });
    const calls = 40;
    for (let i = 0; i < calls; i++) {
      const res = await f(server.url);
      expect(res.status).toBe(503);
      await res.body?.cancel();
    }
    const stats = policy.stats();
    // At most ratio × requests retries: 4, where maxAttempts alone would allow 160.
    expect(stats.retries).toBeLessThanOrEqual(calls * 0.1);
    expect(server.requests.length).toBeLessThanOrEqual(calls * 1.1);
    expect(stats.refusedByBudget).toBeGreaterThanOrEqual(calls - calls * 0.1);
    expect(limiter.inflight).toBe(0);
  });
});
