import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { LimitExceededError, Limiter, type Outcome, type Permit } from 'limits-core';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import {
  type LimitInterceptorOptions,
  limitInterceptor,
  type RetryAfterEvent,
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

setFlagsFromString('--expose-gc');
/** V8's collector, reachable once the flag is set (for the garbage-collected body test). */
const gc = runInNewContext('gc') as () => void;

// Where undici 8 cannot run, say so as a skipped test (an empty test would pass and prove nothing).
if (!undici8Runs)
  test.skip(`undici 8 is tested only on Node >= 22.19 (its engines field); this is Node ${process.versions.node}`, () => {});

describe.each(undiciVersions)('limitInterceptor on %s', (_name, undici) => {
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

  /** A limiter whose releases are recorded in `outcomes`. */
  function limiterOf(options: ConstructorParameters<typeof Limiter>[0] = {}): Limiter {
    const limiter = new Limiter({ limit: 4, ...options });
    limiter.on('release', (e) => outcomes.push(e.outcome));
    return limiter;
  }

  function agentWith(
    options: LimitInterceptorOptions,
  ): ReturnType<Undici['Agent']['prototype']['compose']> {
    const agent = new undici.Agent();
    agents.push(agent);
    return agent.compose(limitInterceptor(options));
  }

  test('each status class is classified: 2xx-4xx success, 429/502/503/504 dropped, other 5xx failure', async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({ limiter });
    const statuses = [200, 204, 301, 404, 429, 500, 501, 502, 503, 504];
    for (const status of statuses) {
      const res = await undici.request(`${server.origin}/status/${status}`, { dispatcher });
      expect(res.statusCode).toBe(status);
      await res.body.text();
    }
    expect(outcomes).toEqual([
      'success',
      'success',
      'success',
      'success',
      'dropped',
      'failure',
      'failure',
      'dropped',
      'dropped',
      'dropped',
    ]);
    expect(limiter.inflight).toBe(0);
  });

  test('fetch through the interceptor is classified the same way and gets the response unchanged', async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({ limiter });
    const ok = await undici.fetch(`${server.origin}/status/200`, { dispatcher });
    expect(await ok.text()).toBe('body');
    const busy = await undici.fetch(`${server.origin}/status/503?retry-after=3`, { dispatcher });
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('3');
    await busy.text();
    expect(outcomes).toEqual(['success', 'dropped']);
    expect(limiter.inflight).toBe(0);
  });

  test('a network error is dropped and reaches the caller as undici reported it', async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({ limiter });
    const closed = await startServer();
    const origin = closed.origin;
    await closed.close();
    const error = await undici.request(`${origin}/status/200`, { dispatcher }).catch((e) => e);
    expect(error.code).toBe('ECONNREFUSED');
    expect(outcomes).toEqual(['dropped']);
    expect(limiter.inflight).toBe(0);
  });

  test('classify overrides the outcome, sees the status and headers, and falls back to the default with undefined', async () => {
    const limiter = limiterOf();
    const seen: unknown[] = [];
    const dispatcher = agentWith({
      limiter,
      classify: (call) => {
        seen.push([call.method, call.statusCode, call.headers?.['content-length'], call.error]);
        return call.statusCode === 404 ? 'ignore' : undefined;
      },
    });
    for (const status of [404, 503]) {
      const res = await undici.request(`${server.origin}/status/${status}`, { dispatcher });
      await res.body.text();
    }
    expect(outcomes).toEqual(['ignore', 'dropped']);
    expect(seen).toEqual([
      ['GET', 404, '4', undefined],
      ['GET', 503, '4', undefined],
    ]);
  });

  test('a classify that throws or answers something else gets the default outcome', async () => {
    const limiter = limiterOf();
    let calls = 0;
    const dispatcher = agentWith({
      limiter,
      classify: () => {
        calls++;
        if (calls === 1) throw new Error('bug in classify');
        return 'maybe' as Outcome;
      },
    });
    for (const status of [503, 500]) {
      const res = await undici.request(`${server.origin}/status/${status}`, { dispatcher });
      await res.body.text();
    }
    expect(outcomes).toEqual(['dropped', 'failure']);
  });

  test('an onRetryAfter hook that throws fails the request with its error and releases the permit', async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({
      limiter,
      onRetryAfter: () => {
        throw new Error('hook failed');
      },
    });
    const error = await undici
      .request(`${server.origin}/status/503?retry-after=1`, { dispatcher })
      .catch((e) => e);
    expect(error.message).toBe('hook failed');
    await until(() => limiter.inflight === 0, 'the permit is back');
    expect(outcomes).toHaveLength(1);
  });

  test('a Retry-After on a 429 or 503 is parsed and reported (delta-seconds and HTTP-date); garbage, negative and huge ones are not', async () => {
    const limiter = limiterOf();
    const events: RetryAfterEvent[] = [];
    const dispatcher = agentWith({ limiter, onRetryAfter: (e) => events.push(e) });
    const inAMinute = new Date(Date.now() + 61_000).toUTCString();
    const paths = [
      '/status/503?retry-after=7',
      `/status/429?retry-after=${encodeURIComponent(inAMinute)}`,
      '/status/503?retry-after=soon',
      '/status/503?retry-after=-1',
      '/status/429?retry-after=99999999999',
      '/status/200?retry-after=5',
      '/status/500?retry-after=5',
    ];
    for (const path of paths) {
      const res = await undici.request(`${server.origin}${path}`, { dispatcher });
      await res.body.text();
    }
    expect(events).toHaveLength(2);
    expect(events[0]).toEqual({
      origin: server.origin,
      method: 'GET',
      statusCode: 503,
      retryAfterMs: 7000,
    });
    expect(events[1]?.statusCode).toBe(429);
    expect(events[1]?.retryAfterMs).toBeGreaterThan(55_000);
    expect(events[1]?.retryAfterMs).toBeLessThanOrEqual(61_000);
  });

  test('a streamed body holds the permit until it has been read to its end', async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({ limiter });
    const res = await undici.request(`${server.origin}/slow`, { dispatcher });
    expect(res.statusCode).toBe(200);
    const text = res.body.text();
    await until(() => server.held.length === 1, 'the server holds the response');
    expect(limiter.inflight).toBe(1);
    server.held[0]?.write('second;');
    await new Promise((resolve) => setImmediate(resolve));
    expect(limiter.inflight).toBe(1);
    expect(outcomes).toEqual([]);
    server.held[0]?.end('last');
    expect(await text).toBe('first;second;last');
    expect(limiter.inflight).toBe(0);
    expect(outcomes).toEqual(['success']);
  });

  test('a fetch body holds the permit until it has been read to its end', async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({ limiter });
    const res = await undici.fetch(`${server.origin}/slow`, { dispatcher });
    await until(() => server.held.length === 1, 'the server holds the response');
    expect(limiter.inflight).toBe(1);
    const text = res.text();
    server.held[0]?.end('last');
    expect(await text).toBe('first;last');
    expect(limiter.inflight).toBe(0);
    expect(outcomes).toEqual(['success']);
  });

  test("release: 'headers' gives the permit back when the headers arrive", async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({ limiter, release: 'headers' });
    const res = await undici.request(`${server.origin}/slow?status=503`, { dispatcher });
    expect(limiter.inflight).toBe(0);
    expect(outcomes).toEqual(['dropped']);
    await until(() => server.held.length === 1, 'the server holds the response');
    server.held[0]?.end();
    await res.body.text();
    expect(outcomes).toEqual(['dropped']);
  });

  test("body.destroy() releases the permit; a caller's abort of a 200 is ignore, of a 503 still dropped", async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({ limiter });
    const ok = await undici.request(`${server.origin}/slow`, { dispatcher });
    const busy = await undici.request(`${server.origin}/slow?status=503`, { dispatcher });
    expect(limiter.inflight).toBe(2);
    ok.body.destroy();
    await until(() => limiter.inflight === 1, 'the first permit is back');
    busy.body.destroy();
    await until(() => limiter.inflight === 0, 'the second permit is back');
    expect(outcomes).toEqual(['ignore', 'dropped']);
  });

  test('body.dump() releases the permit: at once for a body over its limit, at the end for a small one', async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({ limiter });
    const big = await undici.request(`${server.origin}/big`, { dispatcher });
    expect(limiter.inflight).toBe(1);
    await big.body.dump().catch(() => {});
    await until(() => limiter.inflight === 0, 'the permit is back');
    const small = await undici.request(`${server.origin}/status/200`, { dispatcher });
    await small.body.dump();
    expect(limiter.inflight).toBe(0);
    expect(outcomes).toEqual(['ignore', 'success']);
  });

  test("a refusal answers with the limiter's LimitExceededError and never reaches the server", async () => {
    const limiter = limiterOf({ limit: 1, maxQueued: 0 });
    const dispatcher = agentWith({ limiter });
    const held = limiter.tryAcquire() as Permit;
    const error = await undici
      .request(`${server.origin}/status/200`, { dispatcher })
      .catch((e) => e);
    expect(error).toBeInstanceOf(LimitExceededError);
    expect(error.reason).toBe('at_limit');
    const fetchError = await undici
      .fetch(`${server.origin}/status/200`, { dispatcher })
      .catch((e) => e);
    expect(fetchError).toBeInstanceOf(TypeError);
    expect(fetchError.cause).toBeInstanceOf(LimitExceededError);
    expect(server.count).toBe(0);
    held.ignore();
    expect(limiter.inflight).toBe(0);
  });

  test('a queued request is sent when a permit frees, in order', async () => {
    const limiter = limiterOf({ limit: 1, maxQueued: 10 });
    const dispatcher = agentWith({ limiter });
    const first = await undici.request(`${server.origin}/slow`, { dispatcher });
    const second = undici.request(`${server.origin}/status/201`, { dispatcher });
    await until(() => limiter.queued === 1, 'the second request waits');
    expect(server.count).toBe(1);
    server.held[0]?.end();
    await first.body.text();
    const res = await second;
    expect(res.statusCode).toBe(201);
    await res.body.text();
    expect(server.count).toBe(2);
    expect(outcomes).toEqual(['success', 'success']);
  });

  test("the caller's abort while queued takes the request out of the queue at once, unsent", async () => {
    const limiter = limiterOf({ limit: 1, maxQueued: 10 });
    const dispatcher = agentWith({ limiter });
    const held = limiter.tryAcquire() as Permit;
    const ac = new AbortController();
    const pending = undici
      .request(`${server.origin}/status/200`, { dispatcher, signal: ac.signal })
      .catch((e) => e);
    const fac = new AbortController();
    const pendingFetch = undici
      .fetch(`${server.origin}/status/200`, { dispatcher, signal: fac.signal })
      .catch((e) => e);
    await until(() => limiter.queued === 2, 'both requests wait');
    ac.abort(new Error('caller gave up'));
    expect(limiter.queued).toBe(1);
    expect((await pending).message).toBe('caller gave up');
    fac.abort();
    expect(limiter.queued).toBe(0);
    expect((await pendingFetch).name).toBe('AbortError');
    held.ignore();
    expect(server.count).toBe(0);
    expect(limiter.inflight).toBe(0);
  });

  test("the caller's abort while undici queues the request for a connection is ignore, and the permit goes back", async () => {
    const limiter = limiterOf();
    const agent = new undici.Agent({ connections: 1 });
    agents.push(agent);
    const dispatcher = agent.compose(limitInterceptor({ limiter }));
    const first = await undici.request(`${server.origin}/slow`, { dispatcher });
    const ac = new AbortController();
    const second = undici
      .request(`${server.origin}/status/200`, { dispatcher, signal: ac.signal })
      .catch((e) => e);
    expect(limiter.inflight).toBe(2); // admitted by the limiter, waiting in undici's pool
    ac.abort(new Error('caller gave up'));
    // undici 8 takes the request out of its pool queue at once; undici 7 aborts it when the
    // connection frees (its request() waits for onRequestStart to abort).
    server.held[0]?.end();
    await first.body.text();
    expect((await second).message).toBe('caller gave up');
    await until(() => limiter.inflight === 0, 'both permits are back');
    expect(outcomes.sort()).toEqual(['ignore', 'success']);
    expect(server.count).toBe(1);
  });

  test('timeoutMs aborts a request whose response does not come in time, released as dropped', async () => {
    const clock = new ManualClock();
    const limiter = limiterOf({ clock });
    const dispatcher = agentWith({ limiter, timeoutMs: 1_000, clock });
    const pending = undici.request(`${server.origin}/hang`, { dispatcher }).catch((e) => e);
    await server.received(1);
    clock.advance(999);
    expect(limiter.inflight).toBe(1);
    clock.advance(1);
    const error = await pending;
    expect(error.name).toBe('TimeoutError');
    expect(error.message).toContain('1000 ms');
    await until(() => limiter.inflight === 0, 'the permit is back');
    expect(outcomes).toEqual(['dropped']);
    expect(clock.pending).toBe(0);
  });

  test('timeoutMs also bounds a body that streams too long', async () => {
    const clock = new ManualClock();
    const limiter = limiterOf({ clock });
    const dispatcher = agentWith({ limiter, timeoutMs: 1_000, clock });
    const res = await undici.request(`${server.origin}/slow`, { dispatcher });
    const text = res.body.text().catch((e) => e);
    clock.advance(1_000);
    expect((await text).name).toBe('TimeoutError');
    await until(() => limiter.inflight === 0, 'the permit is back');
    expect(outcomes).toEqual(['dropped']);
  });

  test('bodyTimeoutMs reclaims the permit of a body nobody reads, as ignore', async () => {
    const clock = new ManualClock();
    const limiter = limiterOf({ clock });
    const dispatcher = agentWith({ limiter, bodyTimeoutMs: 5_000, clock });
    const res = await undici.request(`${server.origin}/flood`, { dispatcher });
    const failed = new Promise((resolve) => res.body.on('error', resolve));
    await until(() => server.held.length === 1, 'the server holds the response');
    // The body's buffer fills up: undici pauses it for its (absent) reader.
    await until(
      () => res.body.readableLength >= res.body.readableHighWaterMark,
      "the body's buffer is full",
    );
    expect(limiter.inflight).toBe(1);
    clock.advance(5_000);
    expect(((await failed) as Error).name).toBe('TimeoutError');
    await until(() => limiter.inflight === 0, 'the permit is back');
    expect(outcomes).toEqual(['ignore']);
  });

  test('a fetch Response garbage-collected unread gives its permit back (undici cancels its body)', async () => {
    const limiter = limiterOf();
    const dispatcher = agentWith({ limiter });
    await (async () => {
      const res = await undici.fetch(`${server.origin}/flood`, { dispatcher });
      expect(res.status).toBe(200);
    })();
    await until(() => server.held.length === 1, 'the server holds the response');
    expect(limiter.inflight).toBe(1);
    for (let i = 0; i < 50 && limiter.inflight > 0; i++) {
      gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(limiter.inflight).toBe(0);
    expect(outcomes).toEqual(['ignore']);
  });

  test('bodyTimeoutMs counts a body the downstream streams too slowly as dropped', async () => {
    const clock = new ManualClock();
    const limiter = limiterOf({ clock });
    const dispatcher = agentWith({ limiter, bodyTimeoutMs: 5_000, timeoutMs: 60_000, clock });
    const res = await undici.request(`${server.origin}/slow`, { dispatcher });
    const text = res.body.text().catch((e) => e);
    clock.advance(4_999);
    expect(limiter.inflight).toBe(1);
    clock.advance(1);
    const error = await text;
    expect(error.name).toBe('TimeoutError');
    expect(error.message).toContain('bodyTimeoutMs');
    await until(() => limiter.inflight === 0, 'the permit is back');
    expect(outcomes).toEqual(['dropped']);
    expect(clock.pending).toBe(0);
  });

  test('timeoutMs is the limiter’s time limit too: a request queued past it is refused as expired, unsent', async () => {
    const clock = new ManualClock();
    const limiter = limiterOf({ clock, limit: 1, maxQueued: 10 });
    // The limiter admits a wait only if the deadline leaves room for the service time (≈ 1 s unmeasured).
    const dispatcher = agentWith({ limiter, timeoutMs: 10_000, clock });
    const held = limiter.tryAcquire() as Permit;
    const pending = undici.request(`${server.origin}/status/200`, { dispatcher }).catch((e) => e);
    await until(() => limiter.queued === 1, 'the request waits');
    clock.advance(10_000);
    const error = await pending;
    expect(error).toBeInstanceOf(LimitExceededError);
    expect(error.reason).toBe('expired');
    held.ignore();
    expect(server.count).toBe(0);
  });

  test('a completed request leaves no timer behind', async () => {
    const clock = new ManualClock();
    const limiter = limiterOf({ clock });
    const dispatcher = agentWith({ limiter, timeoutMs: 1_000, clock });
    const res = await undici.request(`${server.origin}/status/200`, { dispatcher });
    await res.body.text();
    expect(clock.pending).toBe(0);
    expect(outcomes).toEqual(['success']);
  });

  test('composed before the redirect interceptor, each redirect hop takes its own permit; after it, one permit covers the chain', async () => {
    const limiter = limiterOf();
    const perHop = new undici.Agent().compose(
      limitInterceptor({ limiter }),
      undici.interceptors.redirect({ maxRedirections: 2 }),
    );
    const perChain = new undici.Agent().compose(
      undici.interceptors.redirect({ maxRedirections: 2 }),
      limitInterceptor({ limiter }),
    );
    agents.push(perHop, perChain);
    const hops = await undici.request(`${server.origin}/redirect/503`, { dispatcher: perHop });
    expect(hops.statusCode).toBe(503);
    await hops.body.text();
    expect(outcomes).toEqual(['success', 'dropped']);
    const chain = await undici.request(`${server.origin}/redirect/200`, { dispatcher: perChain });
    expect(chain.statusCode).toBe(200);
    await chain.body.text();
    expect(outcomes).toEqual(['success', 'dropped', 'success']);
    expect(server.count).toBe(4);
    expect(limiter.inflight).toBe(0);
  });

  test("a caller's handler that throws on the response (undici's dump interceptor over its size) fails the request and releases the permit", async () => {
    const limiter = limiterOf();
    const agent = new undici.Agent();
    agents.push(agent);
    const dispatcher = agent.compose(
      limitInterceptor({ limiter }),
      undici.interceptors.dump({ maxSize: 10 }),
    );
    const error = await undici.request(`${server.origin}/big`, { dispatcher }).catch((e) => e);
    expect(error.code).toBe('UND_ERR_ABORTED');
    await until(() => limiter.inflight === 0, 'the permit is back');
    expect(outcomes).toHaveLength(1);
  });

  test('a limiter per origin: each origin has its own limiter, and an origin the function skips is not limited', async () => {
    const other = await startServer();
    try {
      const limiters = new Map<string, Limiter>();
      const dispatcher = agentWith({
        limiter: (origin) => {
          if (origin === other.origin) return undefined;
          const limiter = limiterOf();
          limiters.set(origin, limiter);
          return limiter;
        },
      });
      for (let i = 0; i < 2; i++) {
        const a = await undici.request(`${server.origin}/status/200`, { dispatcher });
        await a.body.text();
        const b = await undici.request(`${other.origin}/status/200`, { dispatcher });
        await b.body.text();
      }
      expect([...limiters.keys()]).toEqual([server.origin]);
      expect(outcomes).toEqual(['success', 'success']);
      expect(other.count).toBe(2);
    } finally {
      await other.close();
    }
  });

  test('maxOrigins bounds the limiters kept: a busy table refuses a new origin, an idle one is forgotten', async () => {
    const other = await startServer();
    try {
      const made: string[] = [];
      const dispatcher = agentWith({
        maxOrigins: 1,
        limiter: (origin) => {
          made.push(origin);
          return limiterOf();
        },
      });
      const slow = await undici.request(`${server.origin}/slow`, { dispatcher });
      const error = await undici
        .request(`${other.origin}/status/200`, { dispatcher })
        .catch((e) => e);
      expect(error).toBeInstanceOf(LimitExceededError);
      expect(error.message).toContain('maxOrigins');
      expect(other.count).toBe(0);
      slow.body.destroy();
      await until(() => outcomes.length === 1, 'the slow request released');
      const res = await undici.request(`${other.origin}/status/200`, { dispatcher });
      await res.body.text();
      expect(made).toEqual([server.origin, other.origin]);
    } finally {
      await other.close();
    }
  });
});
