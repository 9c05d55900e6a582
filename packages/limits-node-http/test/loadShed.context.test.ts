// loadShed and the request context, on each framework: the context is visible in the route handler
// (Express after express.json(), Fastify after it parsed a body), filled from the headers and the
// options; its signal aborts when the client disconnects; the limiter gets criticality, attempt and
// cohort; a refused retry is told not to retry.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { Limiter } from 'limits-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  currentContext,
  type LoadShedOptions,
  loadShed,
  type RequestContext,
} from '../src/index.js';
import {
  closeLater,
  closeServers,
  deferred,
  listen,
  nextEvent,
} from './support/loadShedServers.js';

afterEach(closeServers);

/** What a route saw of its context. */
function view(ctx: RequestContext | undefined) {
  if (ctx === undefined) return null;
  return {
    criticality: ctx.criticality,
    attempt: ctx.attempt,
    cohort: ctx.cohort ?? null,
    budget: ctx.deadline === undefined ? null : ctx.remainingMs(),
  };
}

type Seen = NonNullable<ReturnType<typeof view>>;

/** What the route at `url` saw of its context. */
async function seenAt(url: string, init?: RequestInit): Promise<Seen> {
  return (await (await fetch(url, init)).json()) as Seen;
}

/**
 * One app per framework behind `loadShed(options)`: `GET /ctx` and `POST /ctx` (a JSON body, parsed
 * by the framework) answer what the route saw of its context; `GET /wait` waits until the context's
 * signal aborts and resolves `aborted` with its reason.
 */
interface ContextApp {
  readonly url: string;
  readonly aborted: Promise<unknown>;
  readonly waiting: Promise<void>;
}

type Serve = (options: LoadShedOptions) => Promise<ContextApp>;

function waiter() {
  const aborted = deferred<unknown>();
  const waiting = deferred();
  const wait = (): void => {
    const ctx = currentContext();
    if (ctx === undefined) throw new Error('no context');
    ctx.signal.addEventListener('abort', () => aborted.resolve(ctx.signal.reason), { once: true });
    waiting.resolve();
  };
  return { aborted: aborted.promise, waiting: waiting.promise, wait };
}

const serveNodeHttp: Serve = async (options) => {
  const w = waiter();
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/wait') {
      w.wait();
      return;
    }
    for await (const _chunk of req) {
      // the body is consumed with await: the context stays
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(view(currentContext())));
  };
  const url = await listen(createServer(loadShed(options).wrap(handler)));
  return { url, aborted: w.aborted, waiting: w.waiting };
};

const serveExpress: Serve = async (options) => {
  const w = waiter();
  const app = express();
  app.use(loadShed(options));
  app.use(express.json());
  app.get('/wait', () => w.wait());
  app.all('/ctx', async (_req, res) => {
    await Promise.resolve();
    res.json(view(currentContext()));
  });
  const url = await listen(createServer(app));
  return { url, aborted: w.aborted, waiting: w.waiting };
};

const serveFastify: Serve = async (options) => {
  const w = waiter();
  const app = Fastify({ forceCloseConnections: true });
  closeLater(() => app.close());
  await app.register(loadShed(options).fastify);
  app.get('/wait', (_request, reply) => {
    reply.hijack();
    w.wait();
  });
  const route = async () => view(currentContext());
  app.get('/ctx', route);
  app.post('/ctx', route);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, aborted: w.aborted, waiting: w.waiting };
};

const frameworks: Array<[string, Serve]> = [
  ['node:http', serveNodeHttp],
  ['Express', serveExpress],
  ['Fastify', serveFastify],
];

const json = { 'content-type': 'application/json' };

describe.each(frameworks)('loadShed request context on %s', (_name, serve) => {
  it('gives the route handler a context with the defaults when the request says nothing', async () => {
    const { url } = await serve({ limiter: new Limiter({ limit: 2 }) });
    const seen = await (await fetch(`${url}/ctx`)).json();
    expect(seen).toEqual({ criticality: 'critical', attempt: 1, cohort: null, budget: null });
  });

  it("fills the context from the request's headers, also after the framework parsed a JSON body", async () => {
    const { url } = await serve({ limiter: new Limiter({ limit: 2 }) });
    const headers = {
      ...json,
      'x-request-timeout-ms': '5000',
      'x-request-criticality': 'sheddable_plus',
      'x-request-attempt': '2',
    };
    for (const method of ['GET', 'POST']) {
      const seen = await seenAt(`${url}/ctx`, {
        method,
        headers,
        ...(method === 'POST' ? { body: '{"a":1}' } : {}),
      });
      expect(seen.criticality).toBe('sheddable_plus');
      expect(seen.attempt).toBe(2);
      expect(seen.budget).toBeGreaterThan(0);
      expect(seen.budget).toBeLessThanOrEqual(5000);
    }
  });

  it('takes criticality and cohort from the options, and the smallest time limit of the headers', async () => {
    const { url } = await serve({
      limiter: new Limiter({ limit: 2 }),
      criticality: (req) => (req.headers['x-plan'] === 'free' ? 'sheddable' : undefined),
      cohort: (req) => req.headers['x-user'] as string | undefined,
    });
    const free = await seenAt(`${url}/ctx`, {
      headers: {
        'x-plan': 'free',
        'x-user': 'u7',
        'grpc-timeout': '2S',
        'x-request-timeout-ms': '9000',
      },
    });
    expect(free.criticality).toBe('sheddable');
    expect(free.cohort).toBe('u7');
    expect(free.budget).toBeLessThanOrEqual(2000);
    const paid = await seenAt(`${url}/ctx`, {
      headers: { 'x-request-criticality': 'critical_plus' },
    });
    expect(paid.criticality).toBe('critical_plus');
    expect(paid.cohort).toBeNull();
  });

  it('runs the route without a context with context: false', async () => {
    const { url } = await serve({ limiter: new Limiter({ limit: 2 }), context: false });
    expect(await (await fetch(`${url}/ctx`)).json()).toBeNull();
  });

  it("aborts the context's signal when the client disconnects, and releases the permit", async () => {
    const limiter = new Limiter({ limit: 2 });
    const app = await serve({ limiter });
    const client = new AbortController();
    const request = fetch(`${app.url}/wait`, { signal: client.signal }).catch(() => undefined);
    await app.waiting;
    const released = nextEvent(limiter, 'release');
    client.abort();
    const reason = await app.aborted;
    expect((reason as DOMException).name).toBe('AbortError');
    expect((await released).outcome).toBe('ignore');
    expect(limiter.inflight).toBe(0);
    await request;
  });

  it('passes criticality, attempt and cohort to the limiter, and only what differs from the defaults', async () => {
    const limiter = new Limiter({ limit: 2 });
    const spy = vi.spyOn(limiter, 'acquireWith');
    const { url } = await serve({ limiter, cohort: (req) => req.headers['x-user'] as string });
    await fetch(`${url}/ctx`);
    await fetch(`${url}/ctx`, {
      headers: { 'x-request-criticality': 'sheddable', 'x-request-attempt': '3', 'x-user': 'u1' },
    });
    await fetch(`${url}/ctx`, {
      headers: { 'x-envoy-attempt-count': '2', 'x-request-timeout-ms': '800' },
    });
    expect(spy.mock.calls.map((c) => c[1])).toEqual([
      undefined,
      { criticality: 'sheddable', attempt: 3, cohort: 'u1' },
      { timeoutMs: 800, attempt: 2 },
    ]);
  });

  it('tells a refused retry not to retry, and not a refused first attempt', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const app = await serve({ limiter });
    const held = fetch(`${app.url}/wait`);
    await app.waiting;
    const first = await fetch(`${app.url}/ctx`);
    expect(first.status).toBe(503);
    expect(first.headers.get('x-do-not-retry')).toBeNull();
    expect(first.headers.get('retry-after')).toBe('1');
    const retry = await fetch(`${app.url}/ctx`, { headers: { 'x-request-attempt': '2' } });
    expect(retry.status).toBe(503);
    expect(retry.headers.get('x-do-not-retry')).toBe('1');
    expect(retry.headers.get('retry-after')).toBe('1');
    await retry.text();
    await first.text();
    void held.catch(() => undefined);
  });

  it('tells a first attempt refused for want of time (deadline) not to retry: a retry has less of it', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 10, initialServiceMs: 1_000 });
    const app = await serve({ limiter });
    const held = fetch(`${app.url}/wait`);
    await app.waiting;
    // A 50 ms budget behind a call held about a second: refused at the door as `deadline`.
    const late = await fetch(`${app.url}/ctx`, { headers: { 'x-request-timeout-ms': '50' } });
    expect(late.status).toBe(503);
    expect(await late.json()).toEqual({ error: 'overloaded', reason: 'deadline' });
    expect(late.headers.get('x-do-not-retry')).toBe('1');
    void held.catch(() => undefined);
  });

  it('names the do-not-retry header as doNotRetryHeader says, or sends none with false', async () => {
    const refusing = new Limiter({ limit: 1, maxQueued: 0 });
    const named = await serve({ limiter: refusing, doNotRetryHeader: 'x-no-retry' });
    const off = await serve({ limiter: refusing, doNotRetryHeader: false });
    const held = fetch(`${named.url}/wait`);
    await named.waiting;
    const retry = { headers: { 'x-request-attempt': '2' } };
    const a = await fetch(`${named.url}/ctx`, retry);
    expect(a.headers.get('x-no-retry')).toBe('1');
    expect(a.headers.get('x-do-not-retry')).toBeNull();
    const b = await fetch(`${off.url}/ctx`, retry);
    expect(b.status).toBe(503);
    expect(b.headers.get('x-do-not-retry')).toBeNull();
    void held.catch(() => undefined);
  });
});
