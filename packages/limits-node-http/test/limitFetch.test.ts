import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { LimitExceededError, Limiter, type ReleaseEvent } from 'limits-core';
import { fetch as undiciFetch } from 'undici';
import { afterEach, beforeEach, describe, expect, expectTypeOf, test } from 'vitest';
import { limitFetch, retryAfterMs } from '../src/fetch/limitFetch.js';
import {
  type FetchServer,
  gate,
  ManualClock,
  reply,
  startServer,
  turns,
  until,
} from './support/fetchServer.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const fetches = [
  ['global fetch', globalThis.fetch],
  ['undici fetch', undiciFetch as unknown as typeof fetch],
] as const;

/** A limiter whose releases are recorded. */
function recorded(limit = 10, maxQueued = 0) {
  const limiter = new Limiter({ limit, maxQueued });
  const releases: ReleaseEvent[] = [];
  limiter.on('release', (e) => releases.push(e));
  return { limiter, releases, outcomes: () => releases.map((e) => e.outcome) };
}

describe.each(fetches)('limitFetch with %s', (_name, baseFetch) => {
  let server: FetchServer;
  beforeEach(async () => {
    server = await startServer();
  });
  afterEach(async () => {
    await server.close();
  });

  test('returns a function typed exactly like the fetch it wraps', () => {
    const { limiter } = recorded();
    const limited = limitFetch(globalThis.fetch, { limiter });
    expectTypeOf(limited).toEqualTypeOf<typeof fetch>();
    const viaUndici = limitFetch(undiciFetch, { limiter });
    expectTypeOf(viaUndici).toEqualTypeOf<typeof undiciFetch>();
  });

  test.each([
    [200, 'success'],
    [201, 'success'],
    [302, 'success'],
    [400, 'success'],
    [404, 'success'],
    [429, 'dropped'],
    [500, 'failure'],
    [501, 'failure'],
    [502, 'dropped'],
    [503, 'dropped'],
    [504, 'dropped'],
    [599, 'failure'],
  ])('classifies a %i response as %s once its body is read', async (status, outcome) => {
    const { limiter, outcomes } = recorded();
    server.handle = reply(status, 'body', status === 302 ? { location: '/elsewhere' } : {});
    const f = limitFetch(baseFetch, { limiter });
    const res = await f(`${server.url}/x`, { redirect: 'manual' });
    expect(res.status).toBe(status);
    expect(limiter.inflight).toBe(1);
    expect(await res.text()).toBe('body');
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual([outcome]);
  });

  test.each([
    ['delta-seconds', 429, '120', 120_000],
    ['zero', 503, '0', 0],
    ['HTTP-date in the past', 503, 'Sun, 06 Nov 1994 08:49:37 GMT', 0],
    ['garbage', 503, 'soon', undefined],
    ['negative', 429, '-5', undefined],
    ['fractional', 503, '1.5', undefined],
    ['huge', 503, '99999999', undefined],
  ] as const)(
    'surfaces a %s Retry-After of a real %i response through retryAfterMs',
    async (_k, status, value, expected) => {
      const { limiter } = recorded();
      server.handle = reply(status, 'wait', { 'retry-after': value });
      const f = limitFetch(baseFetch, { limiter });
      const res = await f(server.url);
      expect(retryAfterMs(res)).toBe(expected);
      await res.body?.cancel();
      expect(limiter.inflight).toBe(0);
    },
  );

  test('surfaces an HTTP-date Retry-After in the future as the time left', async () => {
    const { limiter } = recorded();
    server.handle = reply(503, 'wait', {
      'retry-after': new Date(Date.now() + 90_000).toUTCString(),
    });
    const f = limitFetch(baseFetch, { limiter });
    const res = await f(server.url);
    const ms = retryAfterMs(res) as number;
    expect(ms).toBeGreaterThan(80_000);
    expect(ms).toBeLessThanOrEqual(90_000);
    await res.text();
  });

  test('keeps status, status text, headers and url on the response it hands out', async () => {
    const { limiter } = recorded();
    server.handle = (_req, res) => {
      res.writeHead(418, 'Teapot', { 'x-a': '1', 'content-type': 'application/json' });
      res.end('{"a":1}');
    };
    const f = limitFetch(baseFetch, { limiter });
    const res = await f(`${server.url}/tea?q=1`);
    expect(res.status).toBe(418);
    expect(res.statusText).toBe('Teapot');
    expect(res.headers.get('x-a')).toBe('1');
    expect(res.url).toBe(`${server.url}/tea?q=1`);
    expect(res.redirected).toBe(false);
    expect(res.ok).toBe(false);
    expect(await res.json()).toEqual({ a: 1 });
    expect(limiter.inflight).toBe(0);
  });

  test('classifies a network error as dropped and rejects with it', async () => {
    const { limiter, outcomes } = recorded();
    const url = server.url;
    await server.close();
    const f = limitFetch(baseFetch, { limiter });
    await expect(f(`${url}/gone`)).rejects.toThrow(TypeError);
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['dropped']);
    server = await startServer();
  });

  test('a user classify decides, and a classify that throws falls back to the default', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = reply(404, 'no');
    const f = limitFetch(baseFetch, {
      limiter,
      classify: (r) => (r.response?.status === 404 ? 'ignore' : undefined),
    });
    await (await f(server.url)).text();
    const g = limitFetch(baseFetch, {
      limiter,
      classify: () => {
        throw new Error('bad classify');
      },
    });
    server.handle = reply(503, 'busy');
    await (await g(server.url)).text();
    expect(outcomes()).toEqual(['ignore', 'dropped']);
  });

  test('releases as soon as the headers arrive with release headers', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = reply(503, 'busy');
    const f = limitFetch(baseFetch, { limiter, release: 'headers' });
    const res = await f(server.url);
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['dropped']);
    expect(await res.text()).toBe('busy');
  });

  test('a streamed body holds the permit until it has been read to its end', async () => {
    const { limiter, outcomes } = recorded();
    const more = gate();
    server.handle = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first;');
      more.promise.then(() => res.end('second'));
    };
    const f = limitFetch(baseFetch, { limiter });
    const res = await f(server.url);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    const first = await reader.read();
    expect(decoder.decode(first.value)).toBe('first;');
    expect(limiter.inflight).toBe(1);
    more.open();
    let text = '';
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += decoder.decode(chunk.value);
      expect(limiter.inflight).toBe(1);
    }
    expect(text).toBe('second');
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['success']);
  });

  test.each([
    ['json', (r: Response) => r.json()],
    ['text', (r: Response) => r.text()],
    ['arrayBuffer', (r: Response) => r.arrayBuffer()],
    ['blob', (r: Response) => r.blob()],
  ] as const)('reading the body with %s releases the permit', async (_m, read) => {
    const { limiter, outcomes } = recorded();
    server.handle = reply(200, '{"ok":true}', { 'content-type': 'application/json' });
    const f = limitFetch(baseFetch, { limiter });
    const res = await f(server.url);
    expect(limiter.inflight).toBe(1);
    await read(res);
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['success']);
  });

  test('cancelling the body releases the permit without a latency sample and closes the request', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = (_req, res) => {
      res.writeHead(200);
      res.write('endless');
    };
    const f = limitFetch(baseFetch, { limiter });
    const res = await f(server.url);
    await res.body?.cancel();
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['ignore']);
    await until(() => server.aborted === 1);
  });

  test('cancelling the body of a 503 still reports congestion', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = reply(503, 'busy');
    const f = limitFetch(baseFetch, { limiter });
    const res = await f(server.url);
    await res.body?.cancel();
    expect(outcomes()).toEqual(['dropped']);
  });

  test('a 204 response and a HEAD request release at once', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = (req, res) => {
      res.writeHead(req.method === 'HEAD' ? 200 : 204, { 'content-length': '0' });
      res.end();
    };
    const f = limitFetch(baseFetch, { limiter });
    const noContent = await f(server.url);
    expect(noContent.status).toBe(204);
    expect(noContent.body).toBeNull();
    expect(limiter.inflight).toBe(0);
    const head = await f(server.url, { method: 'HEAD' });
    expect(head.body).toBeNull();
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['success', 'success']);
  });

  test('a body that errors mid-stream releases the permit as dropped', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = (_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
      setImmediate(() => res.socket?.destroy());
    };
    const f = limitFetch(baseFetch, { limiter });
    const res = await f(server.url);
    await expect(res.text()).rejects.toThrow();
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['dropped']);
  });

  test('a body nobody reads is reclaimed when the response is garbage-collected', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = (_req, res) => {
      res.writeHead(200);
      res.write('never read');
    };
    const f = limitFetch(baseFetch, { limiter });
    await (async () => {
      const res = await f(server.url);
      expect(res.status).toBe(200);
    })();
    expect(limiter.inflight).toBe(1);
    for (let i = 0; i < 50 && limiter.inflight > 0; i++) {
      gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['ignore']);
    await until(() => server.aborted === 1);
  });

  test('the body timeout releases an unread body as ignore and a late reader gets a TimeoutError', async () => {
    const { limiter, outcomes } = recorded();
    const clock = new ManualClock();
    server.handle = (_req, res) => {
      res.writeHead(200);
      res.write('slow');
    };
    const f = limitFetch(baseFetch, { limiter, bodyTimeoutMs: 1000, clock });
    const res = await f(server.url);
    clock.advance(999);
    expect(limiter.inflight).toBe(1);
    clock.advance(1);
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['ignore']);
    await expect(res.text()).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(clock.pending).toBe(0);
    await until(() => server.aborted === 1);
  });

  test('the body timeout releases a body still awaited from the downstream as dropped', async () => {
    const { limiter, outcomes } = recorded();
    const clock = new ManualClock();
    server.handle = (_req, res) => {
      res.writeHead(200);
      res.write('first');
    };
    const f = limitFetch(baseFetch, { limiter, bodyTimeoutMs: 1000, clock });
    const res = await f(server.url);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const next = reader.read(); // waits for a chunk the server never sends
    await turns();
    clock.advance(1000);
    await expect(next).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['dropped']);
  });

  test('a body read in time clears the body timeout', async () => {
    const { limiter, outcomes } = recorded();
    const clock = new ManualClock();
    const f = limitFetch(baseFetch, { limiter, bodyTimeoutMs: 1000, timeoutMs: 5000, clock });
    expect(await (await f(server.url)).text()).toBe('ok');
    expect(clock.pending).toBe(0);
    expect(outcomes()).toEqual(['success']);
  });

  test('the caller abort rejects with the caller reason and says nothing about the downstream', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = () => {}; // never answers
    const clock = new ManualClock();
    const f = limitFetch(baseFetch, { limiter, timeoutMs: 10_000, clock });
    const controller = new AbortController();
    const reason = new Error('user left');
    const pending = f(server.url, { signal: controller.signal });
    await until(() => server.requests.length === 1);
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['ignore']);
    expect(clock.pending).toBe(0);
  });

  test('our own time limit aborts with a TimeoutError classified dropped', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = () => {}; // never answers
    const clock = new ManualClock();
    const f = limitFetch(baseFetch, { limiter, timeoutMs: 500, clock });
    const pending = f(server.url, { signal: new AbortController().signal });
    await until(() => server.requests.length === 1);
    clock.advance(500);
    await expect(pending).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['dropped']);
  });

  test('the caller abort while nobody reads the body releases the permit at once', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = (_req, res) => {
      res.writeHead(200);
      res.write('part');
    };
    const f = limitFetch(baseFetch, { limiter });
    const controller = new AbortController();
    const res = await f(server.url, { signal: controller.signal });
    expect(limiter.inflight).toBe(1);
    controller.abort(new Error('changed my mind'));
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['ignore']);
    await expect(res.text()).rejects.toThrow();
    await until(() => server.aborted === 1);
  });

  test('our time limit running out while nobody reads the body releases it as dropped', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = (_req, res) => {
      res.writeHead(200);
      res.write('part');
    };
    const clock = new ManualClock();
    const f = limitFetch(baseFetch, { limiter, timeoutMs: 500, clock });
    const res = await f(server.url);
    clock.advance(500);
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['dropped']);
    await expect(res.text()).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  test('the time limit covers a body still streaming', async () => {
    const { limiter, outcomes } = recorded();
    server.handle = (_req, res) => {
      res.writeHead(200);
      res.write('part');
    };
    const clock = new ManualClock();
    const f = limitFetch(baseFetch, { limiter, timeoutMs: 500, clock });
    const res = await f(server.url);
    const text = res.text();
    clock.advance(500);
    await expect(text).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(limiter.inflight).toBe(0);
    expect(outcomes()).toEqual(['dropped']);
  });

  test('a user classify decides the outcome of an error too', async () => {
    const { limiter, outcomes } = recorded();
    const url = server.url;
    await server.close();
    const f = limitFetch(baseFetch, {
      limiter,
      classify: (r) => (r.error === undefined ? undefined : 'ignore'),
    });
    await expect(f(url)).rejects.toThrow(TypeError);
    expect(outcomes()).toEqual(['ignore']);
    server = await startServer();
  });

  test('a time limit already spent when the permit is asked for rejects with a TimeoutError', async () => {
    const { limiter } = recorded();
    let t = 0;
    const jumpy = { now: () => (t += 1000), setTimeout: () => 0, clearTimeout: () => {} };
    const f = limitFetch(baseFetch, { limiter, timeoutMs: 500, clock: jumpy });
    await expect(f(server.url)).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(server.requests).toHaveLength(0);
    expect(limiter.inflight).toBe(0);
  });

  test('merges the signals by hand where AbortSignal.any is missing, and unlinks them', async () => {
    const { limiter, outcomes } = recorded();
    const any = AbortSignal.any;
    (AbortSignal as { any?: unknown }).any = undefined;
    try {
      const clock = new ManualClock();
      const f = limitFetch(baseFetch, { limiter, timeoutMs: 500, clock });
      // The caller's abort.
      server.handle = () => {};
      const controller = new AbortController();
      const aborted = f(server.url, { signal: controller.signal });
      await until(() => server.requests.length === 1);
      controller.abort('mine');
      await expect(aborted).rejects.toBe('mine');
      // Our timeout.
      const timed = f(server.url, { signal: new AbortController().signal });
      await until(() => server.requests.length === 2);
      clock.advance(500);
      await expect(timed).rejects.toMatchObject({ name: 'TimeoutError' });
      // A call that ended: a later abort of its signal changes nothing.
      server.handle = reply(200, 'ok');
      const late = new AbortController();
      expect(await (await f(server.url, { signal: late.signal })).text()).toBe('ok');
      late.abort('after the end');
      expect(outcomes()).toEqual(['ignore', 'dropped', 'success']);
      expect(clock.pending).toBe(0);
    } finally {
      AbortSignal.any = any;
    }
  });

  test('a refusal by the limiter rejects with LimitExceededError before any network call', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const held = await limiter.acquire();
    const f = limitFetch(baseFetch, { limiter });
    const error = await f(server.url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as LimitExceededError).reason).toBe('at_limit');
    expect(server.requests).toHaveLength(0);
    held.success();
  });

  test('a call queued for a permit leaves the queue with the caller reason when the caller aborts', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const held = await limiter.acquire();
    const f = limitFetch(baseFetch, { limiter });
    const controller = new AbortController();
    const pending = f(server.url, { signal: controller.signal });
    await until(() => limiter.queued === 1);
    controller.abort('stop');
    await expect(pending).rejects.toBe('stop');
    expect(limiter.queued).toBe(0);
    expect(server.requests).toHaveLength(0);
    held.success();
  });

  test('a signal that is not an AbortSignal rejects without a permit or a timer left behind', async () => {
    const { limiter } = recorded();
    const clock = new ManualClock();
    const f = limitFetch(baseFetch, { limiter, timeoutMs: 1000, clock });
    await expect(f(server.url, { signal: {} as AbortSignal })).rejects.toThrow(TypeError);
    expect(clock.pending).toBe(0);
    expect(limiter.inflight).toBe(0);
    expect(server.requests).toHaveLength(0);
  });

  test('an already aborted signal rejects at once without a permit', async () => {
    const { limiter } = recorded();
    const f = limitFetch(baseFetch, { limiter });
    await expect(f(server.url, { signal: AbortSignal.abort('early') })).rejects.toBe('early');
    expect(server.requests).toHaveLength(0);
    expect(limiter.inflight).toBe(0);
  });

  test('accepts a Request object, its method, body and signal', async () => {
    const { limiter } = recorded();
    server.handle = (req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => res.end(`${req.method} ${body}`));
    };
    const f = limitFetch(baseFetch, { limiter });
    const RequestCtor = (
      baseFetch === globalThis.fetch ? Request : (await import('undici')).Request
    ) as typeof Request;
    const res = await f(new RequestCtor(server.url, { method: 'POST', body: 'hello' }));
    expect(await res.text()).toBe('POST hello');
    const controller = new AbortController();
    controller.abort('from request');
    await expect(f(new RequestCtor(server.url, { signal: controller.signal }))).rejects.toBe(
      'from request',
    );
    expect(limiter.inflight).toBe(0);
  });

  test('a limiter function gives each origin its own limiter, or none', async () => {
    const { limiter } = recorded();
    const seen: string[] = [];
    const f = limitFetch(baseFetch, {
      limiter: (origin, request) => {
        seen.push(`${request.method} ${origin}`);
        return request.method === 'GET' ? limiter : undefined;
      },
    });
    const res = await f(`${server.url}/a`);
    expect(limiter.inflight).toBe(1);
    await res.text();
    const unlimited = await f(`${server.url}/b`, { method: 'PUT' });
    expect(limiter.inflight).toBe(0);
    expect(await unlimited.text()).toBe('ok');
    expect(seen).toEqual([`GET ${server.url}`, `PUT ${server.url}`]);
  });
});

describe('limitFetch with a fetch look-alike', () => {
  test('wraps a response that is not a Response class instance into a global Response', async () => {
    const { limiter, outcomes } = recorded();
    const lookalike = async (_input: string) => ({
      status: 201,
      statusText: 'Created',
      headers: new Headers({ 'x-id': '7' }),
      url: 'http://example.test/things',
      redirected: false,
      type: 'basic',
      body: new Response('made').body,
    });
    const f = limitFetch(lookalike, { limiter });
    const res = (await f('http://example.test/things')) as unknown as Response;
    expect(res).toBeInstanceOf(Response);
    expect(res.status).toBe(201);
    expect(res.headers.get('x-id')).toBe('7');
    expect(res.url).toBe('http://example.test/things');
    expect(limiter.inflight).toBe(1);
    expect(await res.text()).toBe('made');
    expect(outcomes()).toEqual(['success']);
  });
});

describe('retryAfterMs', () => {
  test.each([
    ['120', 120_000],
    ['0', 0],
    ['-1', undefined],
    ['soon', undefined],
    ['1.5', undefined],
    ['999999999', undefined],
  ] as const)('reads Retry-After %s from a response', (value, expected) => {
    expect(
      retryAfterMs(new Response(null, { status: 503, headers: { 'retry-after': value } })),
    ).toBe(expected);
  });

  test('reads an HTTP-date and a missing header', () => {
    const at = new Date(Date.now() + 60_000).toUTCString();
    const ms = retryAfterMs(new Response(null, { status: 429, headers: { 'retry-after': at } }));
    expect(ms).toBeGreaterThan(55_000);
    expect(ms).toBeLessThanOrEqual(60_000);
    expect(retryAfterMs(new Response(null, { status: 429 }))).toBeUndefined();
  });
});

describe('limitFetch options', () => {
  const limiter = new Limiter({ limit: 1 });
  test.each([
    [undefined, TypeError, /must be an object/],
    [{}, TypeError, /exactly one of "limiter"/],
    [{ limiter, guard: {} }, TypeError, /exactly one of "limiter"/],
    [{ limiter: 5 }, TypeError, /option "limiter" must be a Limiter/],
    [{ guard: {} }, TypeError, /made by fetchGuard/],
    [{ limiter, timeoutMs: 0 }, RangeError, /option "timeoutMs"/],
    [{ limiter, timeoutMs: '5' }, TypeError, /option "timeoutMs"/],
    [{ limiter, bodyTimeoutMs: -1 }, RangeError, /option "bodyTimeoutMs"/],
    [{ limiter, release: 'end' }, RangeError, /option "release"/],
    [{ limiter, classify: 1 }, TypeError, /option "classify"/],
    [{ limiter, retry: {} }, TypeError, /option "retry"/],
    [{ limiter, retryable: true }, TypeError, /option "retryable"/],
    [{ limiter, clock: {} }, TypeError, /option "clock.now" must be a function/],
    [{ limiter, clock: 5 }, TypeError, /option "clock" must be an object/],
    [{ limiter, timeout: 5 }, TypeError, /did you mean "timeoutMs"/],
  ])('refuses %o', (options, type, message) => {
    expect(() => limitFetch(fetch, options as never)).toThrow(type);
    expect(() => limitFetch(fetch, options as never)).toThrow(message);
  });

  test('refuses a fetch that is not a function', () => {
    expect(() => limitFetch('fetch' as never, { limiter })).toThrow(/needs a function/);
  });
});
