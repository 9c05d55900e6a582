// Outbound propagation of the request context, the same table for limitFetch and limitInterceptor,
// against a real server on 127.0.0.1: the headers each attempt sends (and never over the caller's),
// the opt-outs, the budget refused before sending, the limiter's acquire options, the inbound
// signal aborting the outbound call, and retries that stop at x-do-not-retry.
import { getEventListeners } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import { guard } from 'limits-breaker';
import { LimitExceededError, Limiter, type ReleaseEvent, RetryPolicy } from 'limits-core';
import { Agent, request as undiciRequest } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  fetchGuard,
  type LimitFetchInit,
  limitFetch,
  limitInterceptor,
  type PropagateOptions,
  runWithContext,
} from '../src/index.js';
import { type FetchServer, startServer, until } from './support/fetchServer.js';

/** What both clients are asked for. */
interface ClientOptions {
  limiter?: Limiter;
  guard?: ReturnType<typeof fetchGuard>;
  propagate?: boolean | PropagateOptions;
  retry?: RetryPolicy;
}

/** One call: the caller's own headers, the per-call opt-out. */
interface CallInit {
  headers?: Record<string, string>;
  propagate?: boolean;
}

type Call = (url: string, init?: CallInit) => Promise<{ status: number; body: string }>;

const clients: Array<[string, (options: ClientOptions) => Call]> = [
  [
    'limitFetch',
    (options) => {
      const api = limitFetch(fetch, options);
      return async (url, init = {}) => {
        const given: LimitFetchInit = { ...init };
        const res = await api(url, given);
        return { status: res.status, body: await res.text() };
      };
    },
  ],
  [
    'limitInterceptor',
    (options) => {
      const agent = new Agent().compose(limitInterceptor(options));
      return async (url, init = {}) => {
        const res = await undiciRequest(url, {
          dispatcher: agent,
          ...(init.headers === undefined ? {} : { headers: init.headers }),
          ...(init.propagate === undefined ? {} : ({ propagate: init.propagate } as object)),
        });
        return { status: res.statusCode, body: await res.body.text() };
      };
    },
  ],
];

/** A policy that retries at once (no back-off), so no test waits on time. */
function immediate() {
  return new RetryPolicy({ maxAttempts: 3, baseDelayMs: 0, maxDelayMs: 0 });
}

function recorded(limit = 4) {
  const limiter = new Limiter({ limit });
  const releases: ReleaseEvent[] = [];
  limiter.on('release', (e) => releases.push(e));
  return { limiter, outcomes: () => releases.map((e) => e.outcome) };
}

describe.each(clients)('propagation through %s', (_name, client) => {
  let server: FetchServer;
  beforeEach(async () => {
    server = await startServer();
  });
  afterEach(async () => {
    await server.close();
  });

  /** The headers of the `n`th request the server saw (from 1). */
  const seen = (n = 1): IncomingHttpHeaders => server.requests[n - 1]?.headers ?? {};

  it('sends the time left, the criticality and the attempt inside a context, and nothing outside', async () => {
    const call = client({ limiter: new Limiter({ limit: 4 }) });
    await runWithContext({ timeoutMs: 5_000, criticality: 'sheddable', cohort: 'u1' }, () =>
      call(server.url),
    );
    const timeout = Number(seen(1)['x-request-timeout-ms']);
    expect(timeout).toBeGreaterThan(0);
    expect(timeout).toBeLessThanOrEqual(4_990);
    expect(seen(1)['x-request-criticality']).toBe('sheddable');
    expect(seen(1)['x-request-attempt']).toBe('1');
    await call(server.url);
    expect(seen(2)['x-request-timeout-ms']).toBeUndefined();
    expect(seen(2)['x-request-criticality']).toBeUndefined();
    expect(seen(2)['x-request-attempt']).toBeUndefined();
  });

  it('sends no time limit for a context without a deadline, and the criticality still', async () => {
    const call = client({ limiter: new Limiter({ limit: 4 }) });
    await runWithContext({}, () => call(server.url));
    expect(seen(1)['x-request-timeout-ms']).toBeUndefined();
    expect(seen(1)['x-request-criticality']).toBe('critical');
    expect(seen(1)['x-request-attempt']).toBe('1');
  });

  it('never replaces a header the caller set, whatever its case', async () => {
    const call = client({ limiter: new Limiter({ limit: 4 }) });
    await runWithContext({ timeoutMs: 5_000, criticality: 'sheddable' }, () =>
      call(server.url, {
        headers: {
          'X-Request-Criticality': 'critical_plus',
          'x-request-timeout-ms': '77',
          other: 'kept',
        },
      }),
    );
    expect(seen(1)['x-request-criticality']).toBe('critical_plus');
    expect(seen(1)['x-request-timeout-ms']).toBe('77');
    expect(seen(1).other).toBe('kept');
    expect(seen(1)['x-request-attempt']).toBe('1');
  });

  it('sends nothing with propagate: false, globally or for one call', async () => {
    const off = client({ limiter: new Limiter({ limit: 4 }), propagate: false });
    const on = client({ limiter: new Limiter({ limit: 4 }) });
    await runWithContext({ timeoutMs: 5, criticality: 'sheddable' }, async () => {
      await off(server.url);
      await on(server.url, { propagate: false });
    });
    for (const n of [1, 2]) {
      expect(seen(n)['x-request-timeout-ms']).toBeUndefined();
      expect(seen(n)['x-request-criticality']).toBeUndefined();
      expect(seen(n)['x-request-attempt']).toBeUndefined();
    }
  });

  it('uses the header names and the margin given, and sends none turned off', async () => {
    const call = client({
      limiter: new Limiter({ limit: 4 }),
      propagate: {
        marginMs: 1_000,
        timeoutHeader: 'x-budget-ms',
        criticalityHeader: false,
        attemptHeader: 'x-try',
      },
    });
    await runWithContext({ timeoutMs: 5_000, criticality: 'sheddable' }, () => call(server.url));
    expect(Number(seen(1)['x-budget-ms'])).toBeLessThanOrEqual(4_000);
    expect(Number(seen(1)['x-budget-ms'])).toBeGreaterThan(0);
    expect(seen(1)['x-request-timeout-ms']).toBeUndefined();
    expect(seen(1)['x-request-criticality']).toBeUndefined();
    expect(seen(1)['x-try']).toBe('1');
  });

  it('refuses a call whose budget is within the margin with the reason deadline, before sending or taking a permit', async () => {
    const limiter = new Limiter({ limit: 4 });
    const acquired = vi.fn();
    limiter.on('acquire', acquired);
    const call = client({ limiter });
    const error = await runWithContext({ timeoutMs: 5 }, () => call(server.url)).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LimitExceededError);
    expect((error as LimitExceededError).reason).toBe('deadline');
    expect(server.requests).toHaveLength(0);
    expect(acquired).not.toHaveBeenCalled();
    expect(limiter.inflight).toBe(0);
  });

  it("passes the context's criticality and cohort, the attempt and the time left to the limiter", async () => {
    const limiter = new Limiter({ limit: 4 });
    const spy = vi.spyOn(limiter, 'acquire');
    const withSpy = vi.spyOn(limiter, 'acquireWith');
    const call = client({ limiter });
    await runWithContext({ timeoutMs: 5_000, criticality: 'sheddable_plus', cohort: 'acme' }, () =>
      call(server.url),
    );
    const options = (spy.mock.calls[0]?.[0] ?? withSpy.mock.calls[0]?.[1]) as Record<
      string,
      unknown
    >;
    expect(options.criticality).toBe('sheddable_plus');
    expect(options.cohort).toBe('acme');
    expect(options.attempt).toBe(1);
    expect(options.timeoutMs).toBeGreaterThan(0);
    expect(options.timeoutMs).toBeLessThanOrEqual(4_990);
  });

  it.each([
    ['', undefined],
    [' (a retried call)', immediate],
  ])(
    'aborts the outbound call when the context signal aborts, releases its permit as ignore and leaves no listener%s',
    async (_case, retry) => {
      const { limiter, outcomes } = recorded();
      server.handle = () => {};
      const inbound = new AbortController();
      const call = client({ limiter, ...(retry === undefined ? {} : { retry: retry() }) });
      const answer = runWithContext({ signal: inbound.signal }, () => call(server.url)).catch(
        (e: unknown) => e,
      );
      await until(() => server.requests.length === 1);
      inbound.abort(new DOMException('the client disconnected', 'AbortError'));
      const error = await answer;
      expect((error as Error).name).toBe('AbortError');
      await until(() => limiter.inflight === 0 && server.aborted === 1);
      expect(outcomes()).toEqual(['ignore']);
      expect(server.requests).toHaveLength(1);
    },
  );

  it('leaves no listener on the context signal once a call has ended', async () => {
    const inbound = new AbortController();
    const call = client({ limiter: new Limiter({ limit: 4 }), retry: immediate() });
    await runWithContext({ signal: inbound.signal }, async () => {
      await call(server.url);
      await call(server.url);
    });
    expect(getEventListeners(inbound.signal, 'abort')).toHaveLength(0);
  });

  it('carries the context on through a guard too', async () => {
    const breaker = fetchGuard(guard, { limiter: new Limiter({ limit: 4 }) });
    const call = client({ guard: breaker });
    await runWithContext({ timeoutMs: 5_000, criticality: 'sheddable' }, () => call(server.url));
    expect(Number(seen(1)['x-request-timeout-ms'])).toBeLessThanOrEqual(4_990);
    expect(seen(1)['x-request-criticality']).toBe('sheddable');
    expect(seen(1)['x-request-attempt']).toBe('1');
    const error = await runWithContext({ timeoutMs: 1 }, () => call(server.url)).catch(
      (e: unknown) => e,
    );
    expect((error as LimitExceededError).reason).toBe('deadline');
    expect(server.requests).toHaveLength(1);
    await breaker.shutdown();
  });

  it('does not send a call whose context signal has already aborted', async () => {
    const limiter = new Limiter({ limit: 4 });
    const call = client({ limiter });
    const error = await runWithContext({ signal: AbortSignal.abort('gone') }, () =>
      call(server.url),
    ).catch((e: unknown) => e);
    expect(error).toBe('gone');
    expect(server.requests).toHaveLength(0);
    expect(limiter.inflight).toBe(0);
  });

  it('numbers the attempts of a retried call in x-request-attempt', async () => {
    let n = 0;
    server.handle = (_req, res) => {
      n++;
      res.writeHead(n < 3 ? 503 : 200);
      res.end(`answer ${n}`);
    };
    const { limiter, outcomes } = recorded();
    const call = client({ limiter, retry: immediate() });
    const res = await runWithContext({ timeoutMs: 5_000 }, () => call(server.url));
    expect(res).toEqual({ status: 200, body: 'answer 3' });
    expect([1, 2, 3].map((i) => seen(i)['x-request-attempt'])).toEqual(['1', '2', '3']);
    await until(() => limiter.inflight === 0);
    expect(outcomes()).toEqual(['dropped', 'dropped', 'success']);
  });

  it('never retries a response that carries x-do-not-retry, whatever its status and Retry-After', async () => {
    server.handle = (_req, res) => {
      res.writeHead(503, { 'retry-after': '0', 'x-do-not-retry': '1' });
      res.end('shed');
    };
    const { limiter } = recorded();
    const call = client({ limiter, retry: immediate() });
    expect(await call(server.url)).toEqual({ status: 503, body: 'shed' });
    expect(server.requests).toHaveLength(1);
    await until(() => limiter.inflight === 0);
  });
});

describe('propagate option', () => {
  it.each([
    [
      { propagate: 'yes' },
      TypeError,
      /option "propagate" must be true, false or an object, got "yes"/,
    ],
    [
      { propagate: { marginMs: -1 } },
      RangeError,
      /option "propagate.marginMs" must be a number in \[0, 60000\], got -1/,
    ],
    [
      { propagate: { timeoutHeader: 'X-T' } },
      RangeError,
      /option "propagate.timeoutHeader" must be a lowercase HTTP header name, got "X-T"/,
    ],
    [
      { propagate: { attemptHeader: 2 } },
      TypeError,
      /option "propagate.attemptHeader" must be a header name or false, got 2/,
    ],
    [
      { propagate: { margin: 5 } },
      TypeError,
      /unknown option "propagate.margin" for propagate; did you mean "propagate.marginMs"\?/,
    ],
  ])('refuses %o for limitFetch and limitInterceptor', (bad, Kind, message) => {
    const limiter = new Limiter({ limit: 1 });
    for (const make of [
      () => limitFetch(fetch, { limiter, ...bad } as never),
      () => limitInterceptor({ limiter, ...bad } as never),
    ]) {
      expect(make).toThrow(Kind);
      expect(make).toThrow(message);
    }
  });
});
