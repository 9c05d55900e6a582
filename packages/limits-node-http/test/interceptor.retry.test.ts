import { Readable } from 'node:stream';
import {
  LimitExceededError,
  Limiter,
  type Outcome,
  type Permit,
  RetryBudget,
  RetryPolicy,
} from 'limits-core';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { type LimitInterceptorOptions, limitInterceptor } from '../src/index.js';
import {
  ManualClock,
  startServer,
  type TestServer,
  type Undici,
  undiciVersions,
  until,
} from './support/interceptorServer.js';

describe.each(undiciVersions)('limitInterceptor retries on %s', (_name, undici) => {
  let server: TestServer;
  let agents: Array<{ close(): Promise<void> }>;
  let outcomes: Outcome[];

  beforeEach(async () => {
    server = await startServer();
    agents = [];
    outcomes = [];
  });
  afterEach(async () => {
    for (const res of server.held) res.destroy();
    await Promise.all(agents.map((a) => a.close().catch(() => {})));
    await server.close();
  });

  function limiterOf(options: ConstructorParameters<typeof Limiter>[0] = {}): Limiter {
    const limiter = new Limiter({ limit: 4, ...options });
    limiter.on('release', (e) => outcomes.push(e.outcome));
    return limiter;
  }

  /** A policy without back-off delays (the jitter draws 0), unless a clock is given. */
  function policyOf(options: ConstructorParameters<typeof RetryPolicy>[0] = {}): RetryPolicy {
    return new RetryPolicy({ random: () => 0, ...options });
  }

  function agentWith(
    options: LimitInterceptorOptions,
  ): ReturnType<Undici['Agent']['prototype']['compose']> {
    const agent = new undici.Agent();
    agents.push(agent);
    return agent.compose(limitInterceptor(options));
  }

  test('a 503 is retried and the caller sees only the final response; each attempt had its own permit', async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const dispatcher = agentWith({ limiter, retry });
    const res = await undici.request(`${server.origin}/flaky/2`, { dispatcher });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('ok after 2');
    expect(server.count).toBe(3);
    expect(outcomes).toEqual(['dropped', 'dropped', 'success']);
    expect(limiter.inflight).toBe(0);
    expect(retry.stats()).toMatchObject({ calls: 1, attempts: 3, retries: 2 });
  });

  test('fetch is retried the same way', async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const dispatcher = agentWith({ limiter, retry });
    const res = await undici.fetch(`${server.origin}/flaky/1?status=429`, { dispatcher });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('ok after 1');
    expect(outcomes).toEqual(['dropped', 'success']);
  });

  test('after maxAttempts the last response is passed on as it is', async () => {
    const limiter = limiterOf();
    const retry = policyOf({ maxAttempts: 2 });
    const dispatcher = agentWith({ limiter, retry });
    const res = await undici.request(`${server.origin}/flaky/5?status=502`, { dispatcher });
    expect(res.statusCode).toBe(502);
    expect(await res.body.text()).toBe('failed 2');
    expect(server.count).toBe(2);
    expect(limiter.inflight).toBe(0);
    expect(retry.stats().exhausted).toBe(1);
  });

  test('a 500 is retried (failure), a 404 is not (success)', async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const dispatcher = agentWith({ limiter, retry });
    const broken = await undici.request(`${server.origin}/flaky/1?status=500`, { dispatcher });
    expect(broken.statusCode).toBe(200);
    await broken.body.text();
    const missing = await undici.request(`${server.origin}/status/404`, { dispatcher });
    expect(missing.statusCode).toBe(404);
    await missing.body.text();
    expect(server.count).toBe(3);
    expect(outcomes).toEqual(['failure', 'success', 'success']);
    expect(retry.stats().retries).toBe(1);
  });

  test('classify decides what is retried: a status it calls success is not', async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const dispatcher = agentWith({
      limiter,
      retry,
      classify: (call) => (call.statusCode === 503 ? 'success' : undefined),
    });
    const res = await undici.request(`${server.origin}/flaky/1`, { dispatcher });
    expect(res.statusCode).toBe(503);
    await res.body.text();
    expect(server.count).toBe(1);
  });

  test('a POST is not retried by default; retryable can allow it', async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const plain = agentWith({ limiter, retry });
    const res = await undici.request(`${server.origin}/flaky/1?k=a`, {
      dispatcher: plain,
      method: 'POST',
      body: 'payload',
    });
    expect(res.statusCode).toBe(503);
    await res.body.text();
    expect(retry.stats().calls).toBe(0);
    const asked: unknown[] = [];
    const allowing = agentWith({
      limiter,
      retry,
      retryable: (request) => {
        asked.push(request);
        return true;
      },
    });
    const retried = await undici.request(`${server.origin}/flaky/1?k=b`, {
      dispatcher: allowing,
      method: 'POST',
      body: 'payload',
    });
    expect(retried.statusCode).toBe(200);
    await retried.body.text();
    expect(asked).toEqual([{ method: 'POST', url: `${server.origin}/flaky/1?k=b` }]);
    expect(retry.stats()).toMatchObject({ calls: 1, retries: 1 });
  });

  test('a request with a stream body is never retried (it cannot be sent again)', async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const dispatcher = agentWith({ limiter, retry, retryable: () => true });
    const res = await undici.request(`${server.origin}/flaky/1`, {
      dispatcher,
      method: 'PUT',
      body: Readable.from(['a', 'b']),
    });
    expect(res.statusCode).toBe(503);
    await res.body.text();
    expect(server.count).toBe(1);
    expect(retry.stats().calls).toBe(0);
  });

  test("undici's fetch hands every body over as a stream: a fetch with a body is sent once", async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const dispatcher = agentWith({ limiter, retry, retryable: () => true });
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('upload'));
        c.close();
      },
    });
    const streamed = await undici.fetch(`${server.origin}/flaky/1?k=a`, {
      dispatcher,
      method: 'PUT',
      body: stream,
      duplex: 'half',
    });
    expect(streamed.status).toBe(503);
    await streamed.text();
    const request = new undici.Request(`${server.origin}/flaky/1?k=b`, {
      method: 'PUT',
      body: 'doc',
    });
    const fromRequest = await undici.fetch(request, { dispatcher });
    expect(fromRequest.status).toBe(503);
    await fromRequest.text();
    expect(server.count).toBe(2);
    expect(retry.stats().calls).toBe(0);
    expect(limiter.inflight).toBe(0);
  });

  test('a network error is retried, and after maxAttempts the caller gets it', async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const dispatcher = agentWith({ limiter, retry });
    const closed = await startServer();
    await closed.close();
    const error = await undici
      .request(`${closed.origin}/status/200`, { dispatcher })
      .catch((e) => e);
    expect(error.code).toBe('ECONNREFUSED');
    expect(retry.stats()).toMatchObject({ attempts: 3, retries: 2 });
    expect(outcomes).toEqual(['dropped', 'dropped', 'dropped']);
  });

  test('a refusal by the limiter is never retried and never reaches the server', async () => {
    const limiter = limiterOf({ limit: 1, maxQueued: 0 });
    const retry = policyOf();
    const dispatcher = agentWith({ limiter, retry });
    const held = limiter.tryAcquire() as Permit;
    const error = await undici
      .request(`${server.origin}/status/200`, { dispatcher })
      .catch((e) => e);
    expect(error).toBeInstanceOf(LimitExceededError);
    expect(retry.stats()).toMatchObject({ attempts: 1, retries: 0 });
    expect(server.count).toBe(0);
    held.ignore();
  });

  test("the caller's abort while an attempt waits for a permit takes it out of the queue, unsent", async () => {
    const limiter = limiterOf({ limit: 1, maxQueued: 10 });
    const retry = policyOf();
    const dispatcher = agentWith({ limiter, retry });
    const held = limiter.tryAcquire() as Permit;
    const ac = new AbortController();
    const pending = undici
      .request(`${server.origin}/status/200`, { dispatcher, signal: ac.signal })
      .catch((e) => e);
    await until(() => limiter.queued === 1, 'the attempt waits');
    ac.abort(new Error('caller gave up'));
    expect(limiter.queued).toBe(0);
    expect((await pending).message).toBe('caller gave up');
    expect(retry.stats()).toMatchObject({ attempts: 1, retries: 0 });
    held.ignore();
    expect(server.count).toBe(0);
  });

  test('a Retry-After is the least wait before the retry', async () => {
    const clock = new ManualClock();
    const limiter = limiterOf();
    const retry = policyOf({ clock, random: () => 0.5, baseDelayMs: 100 });
    const dispatcher = agentWith({ limiter, retry });
    const pending = undici.request(`${server.origin}/flaky/1?retry-after=3`, { dispatcher });
    await until(() => clock.pending === 1, 'the policy waits');
    expect(clock.delays).toEqual([3000]);
    expect(server.count).toBe(1);
    clock.advance(3000);
    const res = await pending;
    expect(res.statusCode).toBe(200);
    await res.body.text();
    expect(server.count).toBe(2);
  });

  test("a Retry-After longer than the policy's maxDelayMs ends the retries", async () => {
    const limiter = limiterOf();
    const retry = policyOf({ maxDelayMs: 1000 });
    const dispatcher = agentWith({ limiter, retry });
    const res = await undici.request(`${server.origin}/flaky/1?retry-after=60`, { dispatcher });
    expect(res.statusCode).toBe(503);
    await res.body.text();
    expect(server.count).toBe(1);
  });

  test('a Retry-After over one day ends the retries, as delta-seconds or as an HTTP-date', async () => {
    const limiter = limiterOf();
    const retry = policyOf({ maxDelayMs: 3_600_000 });
    const dispatcher = agentWith({ limiter, retry });
    const twoDaysAhead = new Date(Date.now() + 2 * 86_400_000).toUTCString();
    for (const retryAfter of ['172800', twoDaysAhead]) {
      const url = `${server.origin}/status/503?retry-after=${encodeURIComponent(retryAfter)}`;
      const res = await undici.request(url, { dispatcher });
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe(retryAfter);
      await res.body.text();
    }
    expect(server.count).toBe(2);
    expect(retry.stats()).toMatchObject({ calls: 2, attempts: 2, retries: 0 });
    expect(outcomes).toEqual(['dropped', 'dropped']);
  });

  test("the caller's abort during the back-off wait ends the call at once and clears the timer", async () => {
    const clock = new ManualClock();
    const limiter = limiterOf();
    const retry = policyOf({ clock, random: () => 0.5 });
    const dispatcher = agentWith({ limiter, retry });
    const ac = new AbortController();
    const pending = undici
      .request(`${server.origin}/flaky/1`, { dispatcher, signal: ac.signal })
      .catch((e) => e);
    await until(() => clock.pending === 1, 'the policy waits');
    ac.abort(new Error('caller gave up'));
    expect((await pending).message).toBe('caller gave up');
    expect(clock.pending).toBe(0);
    expect(server.count).toBe(1);
    expect(limiter.inflight).toBe(0);
  });

  test('timeoutMs is the time limit of the whole call, retries included', async () => {
    const clock = new ManualClock();
    const limiter = limiterOf({ clock });
    const retry = policyOf({ clock, random: () => 0.99, baseDelayMs: 5_000 });
    const dispatcher = agentWith({ limiter, retry, timeoutMs: 2_000, clock });
    const pending = undici.request(`${server.origin}/flaky/1`, { dispatcher }).catch((e) => e);
    // Timers: the first attempt's deadline (cleared when its 503 ends), then the policy's wait.
    await until(() => clock.delays.length === 2 && clock.pending === 1, 'the policy waits');
    expect(clock.delays).toEqual([2_000, 4_950]);
    clock.advance(5_000);
    const error = await pending;
    expect(error.name).toBe('TimeoutError');
    expect(server.count).toBe(1);
  });

  test('the retry budget caps retries under a 100 % failure burst', async () => {
    const limiter = limiterOf({ limit: 100 });
    const budget = new RetryBudget({ ratio: 0.1, minPerSecond: 0 });
    const retry = policyOf({ budget, maxAttempts: 5 });
    const dispatcher = agentWith({ limiter, retry });
    const calls = 40;
    for (let i = 0; i < calls; i++) {
      const res = await undici.request(`${server.origin}/status/503?i=${i}`, { dispatcher });
      expect(res.statusCode).toBe(503);
      await res.body.text();
    }
    const stats = retry.stats();
    // Without a budget: 40 × 4 = 160 retries. With it: at most 10 % of the requests.
    expect(stats.retries).toBeLessThanOrEqual(calls * 0.1);
    expect(stats.refusedByBudget).toBeGreaterThanOrEqual(calls - calls * 0.1);
    expect(server.count).toBe(calls + stats.retries);
    expect(limiter.inflight).toBe(0);
  });

  test("a caller's handler that throws on the final response (undici's dump interceptor over its size) fails the call and releases the permit", async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const agent = new undici.Agent();
    agents.push(agent);
    const dispatcher = agent.compose(
      limitInterceptor({ limiter, retry }),
      undici.interceptors.dump({ maxSize: 10 }),
    );
    const error = await undici.request(`${server.origin}/big`, { dispatcher }).catch((e) => e);
    expect(error.code).toBe('UND_ERR_ABORTED');
    await until(() => limiter.inflight === 0, 'the permit is back');
    expect(outcomes).toHaveLength(1);
  });

  test('the final attempt’s streamed body still holds its permit until read', async () => {
    const limiter = limiterOf();
    const retry = policyOf();
    const dispatcher = agentWith({ limiter, retry });
    const res = await undici.request(`${server.origin}/slow`, { dispatcher });
    await until(() => server.held.length === 1, 'the server holds the response');
    expect(limiter.inflight).toBe(1);
    const text = res.body.text();
    server.held[0]?.end('last');
    expect(await text).toBe('first;last');
    expect(limiter.inflight).toBe(0);
  });
});
