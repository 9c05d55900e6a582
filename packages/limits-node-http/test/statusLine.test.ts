import { type Guard, guard } from 'limits-breaker';
import { Limiter, type Outcome, RetryPolicy } from 'limits-core';
import { fetch as undiciFetch } from 'undici';
import { afterEach, describe, expect, test } from 'vitest';
import { fetchGuard, limitFetch, limitInterceptor } from '../src/index.js';
import { until } from './support/fetchServer.js';
import { type Undici, undiciVersions } from './support/interceptorServer.js';
import { latin1, type RawServer, startRawServer, utf8 } from './support/rawServer.js';

// Status lines that fetch resolves with, but that `new Response()` refuses (a status outside
// 200–599, a status text that is not a valid reason phrase once fetch has decoded it).
const statusLines = [
  ['a status above 599', latin1('HTTP/1.1 999 Weird'), 999, 'Weird'],
  // The byte 0xE9 alone is not UTF-8: fetch decodes it as U+FFFD.
  ['a Latin-1 reason phrase', latin1('HTTP/1.1 200 Caf\u00e9'), 200, 'Caf\uFFFD'],
  ['a UTF-8 reason phrase', utf8('HTTP/1.1 200 Prêt ✓'), 200, 'Prêt ✓'],
  ['a control character in the reason phrase', latin1('HTTP/1.1 200 A\u0001B'), 200, 'A\u0001B'],
  ['both at once', utf8('HTTP/1.1 600 Fin ✓'), 600, 'Fin ✓'],
] as const;

const fetches = [
  ['global fetch', globalThis.fetch],
  ['undici fetch', undiciFetch as unknown as typeof fetch],
] as const;

/** Opens the circuit at the first breaker failure, for a minute. */
const opensAtOnce = { volumeThreshold: 1, errorThresholdPercentage: 1, resetTimeout: 60_000 };

let raw: RawServer | undefined;
const guards: Guard<unknown[], unknown>[] = [];
const agents: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const g of guards.splice(0)) await g.shutdown();
  await Promise.all(agents.splice(0).map((a) => a.close().catch(() => {})));
  await raw?.close();
  raw = undefined;
});

function recorded(limit = 4) {
  const limiter = new Limiter({ limit });
  const outcomes: Outcome[] = [];
  limiter.on('release', (e) => outcomes.push(e.outcome));
  return { limiter, outcomes };
}

describe.each(fetches)('limitFetch and an unusual status line with %s', (_name, baseFetch) => {
  test.each(statusLines)(
    '%s: resolves as fetch does, and the permit goes back when the body is read',
    async (_what, line, status, statusText) => {
      raw = await startRawServer(line);
      const plain = await baseFetch(raw.url);
      expect([plain.status, plain.statusText]).toEqual([status, statusText]);
      const { limiter, outcomes } = recorded();
      const f = limitFetch(baseFetch, { limiter });
      const res = await f(raw.url);
      expect(res).toBeInstanceOf(plain.constructor);
      expect([res.status, res.statusText, res.ok]).toEqual([status, statusText, plain.ok]);
      expect(res.headers.get('content-length')).toBe('2');
      expect(limiter.inflight).toBe(1);
      expect(await res.text()).toBe(await plain.text());
      expect(limiter.inflight).toBe(0);
      expect(outcomes).toEqual(['success']);
    },
  );

  test('a clone keeps the status, the status text, ok and the url', async () => {
    raw = await startRawServer(utf8('HTTP/1.1 999 Fin ✓'));
    const { limiter } = recorded();
    const res = await limitFetch(baseFetch, { limiter })(raw.url);
    const copy = res.clone();
    expect([copy.status, copy.statusText, copy.ok, copy.url]).toEqual([
      999,
      'Fin ✓',
      false,
      raw.url,
    ]);
    expect(await copy.text()).toBe('ok');
    expect(await res.text()).toBe('ok');
    expect(limiter.inflight).toBe(0);
  });

  test('through a fetchGuard such a response is a success: the circuit stays closed', async () => {
    raw = await startRawServer(latin1('HTTP/1.1 999 Weird'), utf8('HTTP/1.1 200 Prêt ✓'));
    const { limiter, outcomes } = recorded();
    const g = fetchGuard(guard, { limiter, ...opensAtOnce });
    guards.push(g);
    const f = limitFetch(baseFetch, { guard: g });
    const first = await f(raw.url);
    expect(first.status).toBe(999);
    expect(await first.text()).toBe('ok');
    const second = await f(raw.url);
    expect(second.statusText).toBe('Prêt ✓');
    expect(await second.text()).toBe('ok');
    await until(() => g.stats().breaker.successes === 2);
    expect(g.state).toBe('CLOSED');
    expect(limiter.inflight).toBe(0);
    expect(outcomes).toEqual(['success', 'success']);
  });

  test('with retries, a 503 with such a reason phrase is retried and the next answer handed out', async () => {
    raw = await startRawServer(utf8('HTTP/1.1 503 Busy ✗'), latin1('HTTP/1.1 999 Weird'));
    const { limiter, outcomes } = recorded();
    const retry = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 0 });
    const res = await limitFetch(baseFetch, { limiter, retry })(raw.url);
    expect([res.status, res.statusText]).toEqual([999, 'Weird']);
    expect(await res.text()).toBe('ok');
    expect(raw.requests).toBe(2);
    expect(limiter.inflight).toBe(0);
    expect(outcomes).toEqual(['dropped', 'success']);
  });

  test('a response its own class cannot rebuild is handed out as fetch gave it, its permit released at the headers', async () => {
    raw = await startRawServer(latin1('HTTP/1.1 200 OK'));
    class StreamlessResponse extends Response {
      constructor(body?: ConstructorParameters<typeof Response>[0], init?: ResponseInit) {
        if (body instanceof ReadableStream) throw new TypeError('no stream bodies here');
        super(body, init);
      }
    }
    const streamlessFetch = async (input: string) => {
      const res = await baseFetch(input);
      const { status, headers } = res;
      return new StreamlessResponse(await res.arrayBuffer(), { status, headers });
    };
    const { limiter, outcomes } = recorded();
    const f = limitFetch(streamlessFetch, { limiter });
    const res = await f(raw.url);
    expect(res).toBeInstanceOf(StreamlessResponse);
    expect(limiter.inflight).toBe(0);
    expect(outcomes).toEqual(['success']);
    expect(await res.text()).toBe('ok');

    const g = fetchGuard(guard, { limiter, ...opensAtOnce });
    guards.push(g);
    const guarded = await limitFetch(streamlessFetch, { guard: g })(raw.url);
    expect(guarded).toBeInstanceOf(StreamlessResponse);
    await until(() => limiter.inflight === 0);
    expect(outcomes).toEqual(['success', 'success']);
    expect(g.state).toBe('CLOSED');
    expect(await guarded.text()).toBe('ok');
  });
});

describe.each(undiciVersions)(
  'limitInterceptor and an unusual status line on %s',
  (_name, undici) => {
    function agent(interceptor?: Parameters<typeof limitInterceptor>[0]) {
      const a = new undici.Agent();
      agents.push(a);
      return interceptor === undefined ? a : a.compose(limitInterceptor(interceptor));
    }

    async function answers(undiciApi: Undici, url: string, dispatcher: ReturnType<typeof agent>) {
      const r = await undiciApi.request(url, { dispatcher });
      const f = await undiciApi.fetch(url, { dispatcher });
      return {
        request: [r.statusCode, r.statusText, await r.body.text()],
        fetch: [f.status, f.statusText, f.ok, await f.text()],
      };
    }

    test.each(statusLines)(
      '%s: request and fetch see what undici gives them without the interceptor',
      async (_what, line, status, statusText) => {
        raw = await startRawServer(line);
        const plain = await answers(undici, raw.url, agent());
        expect(plain.request).toEqual([status, statusText, 'ok']);
        const { limiter, outcomes } = recorded();
        const retry = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 0 });
        expect(await answers(undici, raw.url, agent({ limiter }))).toEqual(plain);
        expect(await answers(undici, raw.url, agent({ limiter, retry }))).toEqual(plain);
        expect(limiter.inflight).toBe(0);
        expect(outcomes).toEqual(['success', 'success', 'success', 'success']);
      },
    );

    test('with retries, a 503 with such a reason phrase is retried and the next answer passed on', async () => {
      raw = await startRawServer(utf8('HTTP/1.1 503 Busy ✗'), latin1('HTTP/1.1 999 Weird'));
      const { limiter, outcomes } = recorded();
      const retry = new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 0 });
      const res = await undici.request(raw.url, { dispatcher: agent({ limiter, retry }) });
      expect([res.statusCode, res.statusText, await res.body.text()]).toEqual([999, 'Weird', 'ok']);
      expect(raw.requests).toBe(2);
      expect(outcomes).toEqual(['dropped', 'success']);
    });

    test('through a fetchGuard such a response is a success: the circuit stays closed', async () => {
      raw = await startRawServer(latin1('HTTP/1.1 999 Weird'), utf8('HTTP/1.1 200 Prêt ✓'));
      const { limiter } = recorded();
      const g = fetchGuard(guard, { limiter, ...opensAtOnce });
      guards.push(g);
      const dispatcher = agent({ guard: g });
      const first = await undici.request(raw.url, { dispatcher });
      expect([first.statusCode, await first.body.text()]).toEqual([999, 'ok']);
      const second = await undici.fetch(raw.url, { dispatcher });
      expect([second.statusText, await second.text()]).toEqual(['Prêt ✓', 'ok']);
      await until(() => g.stats().breaker.successes === 2);
      expect(g.state).toBe('CLOSED');
      expect(limiter.inflight).toBe(0);
    });
  },
);
