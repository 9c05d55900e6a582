import Fastify, { type FastifyInstance } from 'fastify';
import { Limiter, PartitionedLimiter } from 'limits-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type LoadShedOptions, loadShed } from '../src/index.js';
import { deferred, firstChunk, nextEvent } from './loadShedSupport.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

/** A Fastify 5 app with `loadShed` registered on the root; every route waits for `gate`. */
async function serve(
  options: LoadShedOptions,
  gate: Promise<void> = Promise.resolve(),
  routes: (app: FastifyInstance, calls: string[]) => void = () => {},
) {
  const calls: string[] = [];
  // An aborted fetch leaves a connection that close() would wait on for undici's keep-alive (4 s).
  const app = Fastify({ forceCloseConnections: true });
  apps.push(app);
  await app.register(loadShed(options).fastify);
  app.get('/recommendations/:id', async (request) => {
    calls.push(request.url);
    await gate;
    return { ok: true };
  });
  app.get('/login', async (request) => {
    calls.push(request.url);
    await gate;
    return { ok: true };
  });
  routes(app, calls);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url, calls, app };
}

describe('loadShed as a Fastify 5 plugin', () => {
  it('admits a request and releases the permit as success when the response finishes', async () => {
    const limiter = new Limiter({ limit: 2 });
    const { url, calls } = await serve({ limiter });
    const released = nextEvent(limiter, 'release');
    const response = await fetch(`${url}/login`);
    expect(await response.json()).toEqual({ ok: true });
    expect((await released).outcome).toBe('success');
    expect(limiter.inflight).toBe(0);
    expect(calls).toEqual(['/login']);
  });

  it('answers a refused request with the 503, its headers and its JSON body, without running the route', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/login`);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(`${url}/recommendations/1`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = await response.text();
    expect(body).toBe('{"error":"overloaded","reason":"limit"}');
    expect(response.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
    gate.resolve();
    await first;
    expect(calls).toEqual(['/login']);
  });

  it('applies to routes of the root and of encapsulated child plugins, as fastify-plugin would', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const { url } = await serve({ limiter }, gate.promise, (app) => {
      app.register(async (child) => {
        child.get('/child', async () => 'child');
      });
    });
    const first = fetch(`${url}/login`);
    await nextEvent(limiter, 'acquire');
    expect((await fetch(`${url}/child`)).status).toBe(503);
    gate.resolve();
    await first;
    const released = nextEvent(limiter, 'release');
    expect(await (await fetch(`${url}/child`)).text()).toBe('child');
    await released;
    expect(limiter.inflight).toBe(0);
  });

  it('runs a queued request once the permit ahead of it is released', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/login`);
    await nextEvent(limiter, 'acquire');
    const queued = nextEvent(limiter, 'queue');
    const second = fetch(`${url}/recommendations/2`);
    await queued;
    expect(calls).toEqual(['/login']);
    gate.resolve();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(calls).toEqual(['/login', '/recommendations/2']);
  });

  it('releases the permit as ignore when the client disconnects in the middle of the response', async () => {
    const limiter = new Limiter({ limit: 1 });
    const gate = deferred();
    const { url } = await serve({ limiter }, undefined, (app) => {
      app.get('/stream', async (_request, reply) => {
        reply.hijack();
        reply.raw.writeHead(200, { 'content-type': 'text/plain' });
        reply.raw.write('partial');
        await gate.promise;
        reply.raw.end();
      });
    });
    const controller = new AbortController();
    const response = await fetch(`${url}/stream`, { signal: controller.signal });
    expect(await firstChunk(response)).toBe('partial');
    expect(limiter.inflight).toBe(1);
    const released = nextEvent(limiter, 'release');
    controller.abort();
    expect((await released).outcome).toBe('ignore');
    expect(limiter.inflight).toBe(0);
    gate.resolve();
  });

  it('takes a client that disconnects while queued out of the queue at once, without running the route', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/login`);
    await nextEvent(limiter, 'acquire');
    const controller = new AbortController();
    const queued = nextEvent(limiter, 'queue');
    const second = fetch(`${url}/recommendations/9`, { signal: controller.signal }).catch((e) => e);
    await queued;
    const rejected = nextEvent(limiter, 'reject');
    controller.abort();
    expect((await rejected).reason).toBe('aborted');
    expect(limiter.queued).toBe(0);
    expect(await second).toBeInstanceOf(Error);
    gate.resolve();
    await first;
    expect(calls).toEqual(['/login']);
    expect(limiter.inflight).toBe(0);
  });

  it('answers 503 with reason expired, from outside the hook, a request that waited longer than maxQueueWaitMs', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5, maxQueueWaitMs: 1 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/login`);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(`${url}/recommendations/3`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(await response.json()).toEqual({ error: 'overloaded', reason: 'expired' });
    gate.resolve();
    await first;
    expect(calls).toEqual(['/login']);
  });

  it('releases the permit as failure when a route throws, and as dropped when it answers 503', async () => {
    const limiter = new Limiter({ limit: 1 });
    const { url } = await serve({ limiter }, undefined, (app) => {
      app.get('/boom', async () => {
        throw new Error('boom');
      });
      app.get('/busy', async (_request, reply) => reply.code(503).send('busy'));
    });
    let released = nextEvent(limiter, 'release');
    expect((await fetch(`${url}/boom`)).status).toBe(500);
    expect((await released).outcome).toBe('failure');
    released = nextEvent(limiter, 'release');
    expect((await fetch(`${url}/busy`)).status).toBe(503);
    expect((await released).outcome).toBe('dropped');
    expect(limiter.inflight).toBe(0);
  });

  it('hands a refusal to onShed on the hijacked raw response', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const onShed = vi.fn((_req, res, error) => {
      res.writeHead(503, { 'retry-after': '7' });
      res.end(`custom ${error.reason}`);
    }) as NonNullable<LoadShedOptions['onShed']>;
    const { url } = await serve({ limiter, onShed }, gate.promise);
    const first = fetch(`${url}/login`);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(`${url}/login`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('7');
    expect(await response.text()).toBe('custom limit');
    gate.resolve();
    await first;
  });
});

describe('loadShed partitions with Fastify', () => {
  it('partitions by route pattern: /login stays admitted while /recommendations/:id is saturated', async () => {
    const limiter = new PartitionedLimiter({
      limit: 4,
      partitions: {
        login: { reserved: 1, maxQueued: 0 },
        recommendations: { maxQueued: 0 },
        default: { maxBorrow: 1 },
      },
    });
    const gate = deferred();
    const { url } = await serve({ limiter }, gate.promise);
    const recommendations = limiter.partition('recommendations');
    const held = [1, 2, 3].map((i) => fetch(`${url}/recommendations/${i}`));
    while (recommendations.inflight < 3) await nextEvent(recommendations, 'acquire');
    const shed = await fetch(`${url}/recommendations/4`);
    expect(shed.status).toBe(503);
    const login = fetch(`${url}/login`);
    await nextEvent(limiter.partition('login'), 'acquire');
    gate.resolve();
    expect((await login).status).toBe(200);
    for (const response of await Promise.all(held)) expect(response.status).toBe(200);
    expect(limiter.ledger().partitions.recommendations?.released).toBe(3);
    expect(limiter.ledger().partitions.login?.released).toBe(1);
  });

  it('gives the partition function the route pattern', async () => {
    const limiter = new PartitionedLimiter({
      limit: 2,
      partitions: { login: { reserved: 1 }, other: {} },
    });
    const seen: Array<string | undefined> = [];
    const partition = (_req: unknown, route: string | undefined) => {
      seen.push(route);
      return route === '/login' ? 'login' : 'nope';
    };
    const { url } = await serve({ limiter, partition, fallbackPartition: 'other' });
    await fetch(`${url}/login`);
    await fetch(`${url}/recommendations/5`);
    expect(seen).toEqual(['/login', '/recommendations/:id']);
    expect(limiter.ledger().partitions.login?.released).toBe(1);
    expect(limiter.ledger().partitions.other?.released).toBe(1);
  });
});
