// loadShed with a quota: the quota is judged first (429 for an account over its share, 503 for the
// global cap), then the limiter (503). Real servers on 127.0.0.1:0 (see support/loadShedServers.ts);
// the quota's windows run on an injected clock, so Retry-After is exact and no test sleeps.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import {
  Limiter,
  MemoryQuotaStore,
  Quota,
  QuotaExceededError,
  type QuotaStore,
  type QuotaStoreVerdict,
} from 'limits-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type LoadShedOptions, loadShed, type ShedError, shedResponse } from '../src/index.js';
import {
  captureNextTickErrors,
  closeLater,
  closeServers,
  deferred,
  expressApp,
  fastifyApp,
  frameworks,
  listen,
  nextEvent,
  nodeHttp,
} from './support/loadShedServers.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await closeServers();
});

const WINDOW_MS = 60_000;
/** 25.5 s into a window: 34.5 s remain, so Retry-After is 35. */
const START = 10 * WINDOW_MS + 25_500;

/** 3 per account, 10 in all, per 60 s window, on an injected clock. */
function accountQuota(limits: { account?: number; global?: number } = {}) {
  const clock = { t: START, now: () => clock.t };
  const store = new MemoryQuotaStore({ clock });
  const quota = new Quota<{ account: string }>({
    windowMs: WINDOW_MS,
    axes: [
      { name: 'account', key: (c) => c.account, limit: limits.account ?? 3, status: 429 },
      { name: 'global', key: () => 'all', limit: limits.global ?? 10, status: 503 },
    ],
    store,
  });
  const consume = vi.spyOn(quota, 'consume');
  return { clock, store, quota, consume };
}

/** The account of a request: its `x-account` header (`undefined`: not counted). */
function byAccount(req: IncomingMessage): { account: string } | undefined {
  const account = req.headers['x-account'];
  return typeof account === 'string' ? { account } : undefined;
}

/** Everything the limiter was asked, in order. */
function watch(limiter: Limiter): string[] {
  const seen: string[] = [];
  limiter.on('acquire', () => seen.push('acquire'));
  limiter.on('reject', (e) => seen.push(`reject:${e.reason}`));
  return seen;
}

const get = (url: string, account?: string) =>
  fetch(url, account === undefined ? {} : { headers: { 'x-account': account } });

describe.each(frameworks)('loadShed with a quota on %s', (_name, framework) => {
  const serve = framework.serve.bind(framework);

  it('answers an account over its quota 429 with Retry-After to the window end, and the limiter never sees it', async () => {
    const { quota } = accountQuota();
    const limiter = new Limiter({ limit: 10 });
    const seen = watch(limiter);
    const { url, calls } = await serve({ limiter, quota, quotaContext: byAccount });
    for (let i = 0; i < 3; i++) expect((await get(`${url}/parse`, 'a')).status).toBe(200);
    expect(seen).toEqual(['acquire', 'acquire', 'acquire']);
    const response = await get(`${url}/over`, 'a');
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('35');
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ error: 'quota', axis: 'account' });
    expect(seen).toEqual(['acquire', 'acquire', 'acquire']);
    expect(calls).not.toContain('/over');
    // Another account still has its share.
    expect((await get(`${url}/parse`, 'b')).status).toBe(200);
  });

  it('answers 503 from the quota once the global cap is reached, naming the global axis', async () => {
    const { quota } = accountQuota({ account: 3, global: 4 });
    const limiter = new Limiter({ limit: 10 });
    const seen = watch(limiter);
    const { url } = await serve({ limiter, quota, quotaContext: byAccount });
    for (const account of ['a', 'b', 'c', 'd']) expect((await get(url, account)).status).toBe(200);
    const response = await get(url, 'e');
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('35');
    expect(await response.json()).toEqual({ error: 'quota', axis: 'global' });
    expect(seen).toHaveLength(4);
  });

  it("answers the limiter's own 503 when the quota admits a request the saturated limiter refuses", async () => {
    const { quota } = accountQuota();
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const { url } = await serve({ limiter, quota, quotaContext: byAccount }, gate.promise);
    const held = get(url, 'a');
    await nextEvent(limiter, 'acquire');
    const response = await get(url, 'b');
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: 'overloaded', reason: 'at_limit' });
    gate.resolve();
    expect((await held).status).toBe(200);
  });

  it('reports 429 before 503 to an account over its share when the global cap is full too', async () => {
    const { quota } = accountQuota({ account: 2, global: 4 });
    const limiter = new Limiter({ limit: 10 });
    const { url } = await serve({ limiter, quota, quotaContext: byAccount });
    for (const account of ['a', 'a', 'b', 'c']) expect((await get(url, account)).status).toBe(200);
    const mine = await get(url, 'a');
    expect(mine.status).toBe(429);
    expect(await mine.json()).toEqual({ error: 'quota', axis: 'account' });
    const other = await get(url, 'd');
    expect(other.status).toBe(503);
    expect(await other.json()).toEqual({ error: 'quota', axis: 'global' });
  });
});

describe('loadShed with a quota', () => {
  it('leaves the account counter untouched when the global cap refuses, and admits again in the next window', async () => {
    const { clock, quota } = accountQuota({ account: 1, global: 1 });
    const limiter = new Limiter({ limit: 10 });
    const { url } = await nodeHttp.serve({ limiter, quota, quotaContext: byAccount });
    expect((await get(url, 'x')).status).toBe(200);
    // "a" is refused by the global axis: its own share of 1 is not spent...
    expect((await get(url, 'a')).status).toBe(503);
    expect((await get(url, 'a')).status).toBe(503);
    clock.t += WINDOW_MS;
    // ...so in the next window its first request passes, and only its second is over its share.
    expect((await get(url, 'a')).status).toBe(200);
    const over = await get(url, 'a');
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('35');
  });

  it('charges the quota for a request the limiter then refuses (the charge stands, as documented)', async () => {
    const { quota } = accountQuota({ account: 2, global: 10 });
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const { url } = await nodeHttp.serve({ limiter, quota, quotaContext: byAccount }, gate.promise);
    const held = get(url, 'other');
    await nextEvent(limiter, 'acquire');
    expect((await get(url, 'a')).status).toBe(503); // the limiter's refusal, after a's charge
    gate.resolve();
    expect((await held).status).toBe(200);
    expect((await get(url, 'a')).status).toBe(200);
    expect((await get(url, 'a')).status).toBe(429);
  });

  it('passes the request itself to the quota by default, and does not count a request whose context is undefined', async () => {
    const clock = { now: () => START };
    const seen: IncomingMessage[] = [];
    const quota = new Quota<IncomingMessage>({
      windowMs: WINDOW_MS,
      axes: [
        {
          name: 'ip',
          key: (req) => {
            seen.push(req);
            return req.socket.remoteAddress ?? '';
          },
          limit: 1,
        },
      ],
      store: new MemoryQuotaStore({ clock }),
    });
    const limiter = new Limiter({ limit: 10 });
    const byDefault = await nodeHttp.serve({ limiter, quota });
    expect((await get(byDefault.url)).status).toBe(200);
    expect(seen[0]?.url).toBe('/');
    expect((await get(byDefault.url)).status).toBe(429);
    // Only POST is counted here: GET passes though the quota is full.
    const consume = vi.spyOn(quota, 'consume');
    const postsOnly = await nodeHttp.serve({
      limiter,
      quota,
      quotaContext: (req) => (req.method === 'POST' ? req : undefined),
    });
    expect((await get(postsOnly.url)).status).toBe(200);
    expect(consume).not.toHaveBeenCalled();
    expect((await fetch(postsOnly.url, { method: 'POST' })).status).toBe(429);
    expect(consume).toHaveBeenCalledTimes(1);
  });

  it("hands a quota refusal to onShed as a QuotaExceededError with the axis, status and time to the window's end", async () => {
    const { quota } = accountQuota({ account: 0 });
    const limiter = new Limiter({ limit: 10 });
    const errors: ShedError[] = [];
    const onShed = (_req: IncomingMessage, res: ServerResponse, error: ShedError) => {
      errors.push(error);
      res.writeHead(error.reason === 'quota' ? error.status : 503, { 'x-custom': '1' });
      res.end(`custom ${error.reason}`);
    };
    const { url } = await nodeHttp.serve({ limiter, quota, quotaContext: byAccount, onShed });
    const response = await get(url, 'a');
    expect(response.status).toBe(429);
    expect(response.headers.get('x-custom')).toBe('1');
    expect(await response.text()).toBe('custom quota');
    const error = errors[0] as QuotaExceededError;
    expect(error).toBeInstanceOf(QuotaExceededError);
    expect(error.code).toBe('QUOTA_EXCEEDED');
    expect(error.axis).toBe('account');
    expect(error.status).toBe(429);
    expect(error.retryAfterMs).toBe(34_500);
  });

  it('hands a quota refusal to onShed on the hijacked raw response with Fastify', async () => {
    const { quota } = accountQuota({ account: 0 });
    const onShed = vi.fn((_req: IncomingMessage, res: ServerResponse, error: ShedError) => {
      res.writeHead(error.reason === 'quota' ? error.status : 503);
      res.end(`fastify ${error.reason}`);
    });
    const { url, calls } = await fastifyApp.serve({
      limiter: new Limiter({ limit: 10 }),
      quota,
      quotaContext: byAccount,
      onShed,
    });
    const response = await get(`${url}/x`, 'a');
    expect(response.status).toBe(429);
    expect(await response.text()).toBe('fastify quota');
    expect(calls).toEqual([]);
  });

  it("answers by the store's failure policy: closed refuses with the quota's unavailable status, open passes", async () => {
    const failing = (policy: 'open' | 'closed'): QuotaStore => ({
      consume: async (): Promise<QuotaStoreVerdict> => ({
        refused: -1,
        counts: [],
        resetInMs: 2_500,
        failure: { policy, error: new Error('test: redis down') },
      }),
    });
    const axes = [{ name: 'account', key: () => 'a', limit: 5 }];
    const closed = new Quota({ windowMs: WINDOW_MS, axes, store: failing('closed') });
    const open = new Quota({ windowMs: WINDOW_MS, axes, store: failing('open') });
    const failures: string[] = [];
    closed.on('failure', (e) => failures.push(e.policy));
    open.on('failure', (e) => failures.push(e.policy));
    const limiter = new Limiter({ limit: 10 });
    const seen = watch(limiter);
    const a = await nodeHttp.serve({ limiter, quota: closed });
    const refused = await get(a.url);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('3');
    expect(await refused.json()).toEqual({ error: 'quota', axis: null });
    expect(seen).toEqual([]);
    const b = await nodeHttp.serve({ limiter, quota: open });
    expect((await get(b.url)).status).toBe(200);
    expect(seen).toEqual(['acquire']);
    expect(failures).toEqual(['closed', 'open']);
  });

  it("takes no permit for a client that left while the quota judged it (the quota's charge stands)", async () => {
    const verdict = deferred<QuotaStoreVerdict>();
    const store: QuotaStore = { consume: () => verdict.promise };
    const quota = new Quota({
      windowMs: WINDOW_MS,
      axes: [{ name: 'a', key: () => 'k', limit: 5 }],
      store,
    });
    const limiter = new Limiter({ limit: 10 });
    const seen = watch(limiter);
    const judged = vi.spyOn(store, 'consume');
    const closed = deferred();
    const server = createServer(
      loadShed({ limiter, quota }).wrap((_req, res) => {
        res.end('never');
      }),
    );
    server.on('request', (_req, res: ServerResponse) => res.on('close', () => closed.resolve()));
    const url = await listen(server);
    const controller = new AbortController();
    const response = fetch(url, { signal: controller.signal }).catch(() => 'aborted');
    await vi.waitFor(() => expect(judged).toHaveBeenCalledTimes(1));
    controller.abort();
    await closed.promise;
    verdict.resolve({ refused: -1, counts: [1], resetInMs: 1_000 });
    expect(await response).toBe('aborted');
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([]);
    expect(limiter.inflight).toBe(0);
  });
});

describe('loadShed when the quota rejects', () => {
  const throwing = () =>
    new Quota({
      windowMs: WINDOW_MS,
      axes: [
        {
          name: 'account',
          key: () => {
            throw new Error('test: key');
          },
          limit: 5,
        },
      ],
    });

  it("sends the error to Express's error path (next(error)), and the limiter is never asked", async () => {
    const limiter = new Limiter({ limit: 10 });
    const seen = watch(limiter);
    const app = express();
    app.use(loadShed({ limiter, quota: throwing() }));
    app.get('/', (_req, res) => void res.send('ok'));
    const errors: string[] = [];
    app.use(
      (error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
        errors.push(error.message);
        res.status(500).send('handled');
      },
    );
    const url = await listen(createServer(app));
    const response = await fetch(url);
    expect(response.status).toBe(500);
    expect(await response.text()).toBe('handled');
    expect(errors).toEqual(['test: key']);
    expect(seen).toEqual([]);
  });

  it('lets a throwing quotaContext propagate as a throw of the middleware: Express and Fastify answer 500, the quota is not charged', async () => {
    const { quota, consume } = accountQuota();
    const quotaContext = (): { account: string } => {
      throw new Error('test: context');
    };
    const limiter = new Limiter({ limit: 10 });
    const seen = watch(limiter);
    const viaExpress = await expressApp.serve({ limiter, quota, quotaContext });
    expect((await get(viaExpress.url)).status).toBe(500);
    const viaFastify = await fastifyApp.serve({ limiter, quota, quotaContext });
    const response = await get(viaFastify.url);
    expect(response.status).toBe(500);
    expect(((await response.json()) as { message: string }).message).toBe('test: context');
    expect(consume).not.toHaveBeenCalled();
    expect(seen).toEqual([]);
    expect(viaExpress.calls).toEqual([]);
    expect(viaFastify.calls).toEqual([]);
  });

  it("sends the error to Fastify's error handler", async () => {
    const app = Fastify();
    closeLater(() => app.close());
    await app.register(
      loadShed({ limiter: new Limiter({ limit: 10 }), quota: throwing() }).fastify,
    );
    app.get('/', async () => 'ok');
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const response = await fetch(url);
    expect(response.status).toBe(500);
    expect(((await response.json()) as { message: string }).message).toBe('test: key');
  });

  it('answers a wrapped node:http handler 500 and rethrows the error on the next tick', async () => {
    const errors = captureNextTickErrors();
    const handler = vi.fn((_req: IncomingMessage, res: ServerResponse) => res.end('ok'));
    const wrapped = loadShed({ limiter: new Limiter({ limit: 10 }), quota: throwing() }).wrap(
      handler,
    );
    const url = await listen(createServer(wrapped));
    const response = await fetch(url);
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ error: 'internal' });
    expect(handler).not.toHaveBeenCalled();
    expect(errors.map((e) => (e as Error).message)).toEqual(['test: key']);
  });
});

describe('loadShed quota options and responses', () => {
  const limiter = new Limiter();
  const quota = new Quota({ windowMs: 1_000, axes: [{ name: 'a', key: () => 'k', limit: 1 }] });

  it.each([
    [{ limiter, quota: {} }, TypeError, /option "quota" must be a Quota, got an object/],
    [{ limiter, quota: null }, TypeError, /option "quota" must be a Quota, got null/],
    [{ limiter, quota: 'q' }, TypeError, /option "quota" must be a Quota, got "q"/],
    [{ limiter, quota, quotaContext: 1 }, TypeError, /option "quotaContext" must be a function/],
    [
      { limiter, quotaContext: () => ({}) },
      TypeError,
      /option "quotaContext" needs a "quota", got none/,
    ],
    [
      { limiter, quot: quota },
      TypeError,
      /unknown option "quot" for loadShed; did you mean "quota"\?/,
    ],
  ])('refuses bad quota options before building anything: %o', (options, type, message) => {
    expect(() => loadShed(options as unknown as LoadShedOptions)).toThrow(type);
    expect(() => loadShed(options as unknown as LoadShedOptions)).toThrow(message);
  });

  it("builds a quota refusal's answer: the axis' status, Retry-After rounded up in [1 s, 1 day] whatever maxRetryAfterMs, and no unsafe axis name", () => {
    const refusal = (axis: string | null, status: number, retryAfterMs: number) =>
      shedResponse(new QuotaExceededError({ ok: false, axis, status, retryAfterMs }), 5_000);
    const a = refusal('account', 429, 3_600_000);
    expect(a.status).toBe(429);
    expect(a.headers['retry-after']).toBe('3600');
    expect(a.body).toBe('{"error":"quota","axis":"account"}');
    expect(a.headers['content-length']).toBe(String(a.body.length));
    expect(refusal('global', 503, 1).headers['retry-after']).toBe('1');
    expect(refusal('global', 503, 0).headers['retry-after']).toBe('1');
    expect(refusal('global', 503, 1_001).headers['retry-after']).toBe('2');
    expect(refusal('global', 503, 10 * 86_400_000).headers['retry-after']).toBe('86400');
    expect(refusal('<script>"', 429, 1_000).body).toBe('{"error":"quota","axis":null}');
    expect(refusal(null, 503, 1_000).body).toBe('{"error":"quota","axis":null}');
  });
});
