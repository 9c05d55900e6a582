import { createServer } from 'node:http';
import express from 'express';
import { Limiter, PartitionedLimiter } from 'limits-core';
import { afterEach, describe, expect, it } from 'vitest';
import { type LoadShedOptions, loadShed } from '../src/index.js';
import { deferred, firstChunk, listen, nextEvent } from './loadShedSupport.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** An Express 5 app behind `loadShed`: `/hold/*` waits for `gate`, `/boom` throws, `/reject` rejects. */
async function serve(options: LoadShedOptions, gate: Promise<void> = Promise.resolve()) {
  const calls: string[] = [];
  const app = express();
  app.use(loadShed(options));
  app.use((req, _res, next) => {
    calls.push(req.path);
    next();
  });
  app.get('/boom', () => {
    throw new Error('boom');
  });
  app.get('/reject', async () => {
    throw new Error('async boom');
  });
  app.get('/{*rest}', async (_req, res) => {
    await gate;
    res.send('ok');
  });
  const url = await listen(createServer(app), closers);
  return { url, calls };
}

describe('loadShed as Express 5 middleware', () => {
  it('admits a request, calls next and releases the permit as success when the response finishes', async () => {
    const limiter = new Limiter({ limit: 2 });
    const { url, calls } = await serve({ limiter });
    const released = nextEvent(limiter, 'release');
    const response = await fetch(`${url}/a`);
    expect(await response.text()).toBe('ok');
    expect((await released).outcome).toBe('success');
    expect(limiter.inflight).toBe(0);
    expect(calls).toEqual(['/a']);
  });

  it('answers a refused request with the 503, its headers and its JSON body, without reaching the routes', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/held`);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(`${url}/refused`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const body = await response.text();
    expect(body).toBe('{"error":"overloaded","reason":"limit"}');
    expect(response.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
    gate.resolve();
    await first;
    expect(calls).toEqual(['/held']);
  });

  it('releases the permit as failure when a route throws and Express answers 500 from its error path', async () => {
    const limiter = new Limiter({ limit: 1 });
    const { url } = await serve({ limiter });
    for (const path of ['/boom', '/reject']) {
      const released = nextEvent(limiter, 'release');
      const response = await fetch(`${url}${path}`);
      expect(response.status).toBe(500);
      expect((await released).outcome).toBe('failure');
      expect(limiter.inflight).toBe(0);
    }
  });

  it('releases the permit as ignore when the client disconnects in the middle of the response', async () => {
    const limiter = new Limiter({ limit: 1 });
    const gate = deferred();
    const app = express();
    app.use(loadShed({ limiter }));
    app.get('/', async (_req, res) => {
      res.write('partial');
      await gate.promise;
      res.end();
    });
    const url = await listen(createServer(app), closers);
    const controller = new AbortController();
    const response = await fetch(url, { signal: controller.signal });
    expect(await firstChunk(response)).toBe('partial');
    const released = nextEvent(limiter, 'release');
    controller.abort();
    expect((await released).outcome).toBe('ignore');
    expect(limiter.inflight).toBe(0);
    gate.resolve();
  });

  it('releases the permits of stacked loadShed instances, each to its own limiter', async () => {
    const outer = new Limiter({ limit: 2 });
    const inner = new Limiter({ limit: 2 });
    const app = express();
    app.use(loadShed({ limiter: outer }));
    app.get('/', loadShed({ limiter: inner }), (_req, res) => {
      res.send('ok');
    });
    const url = await listen(createServer(app), closers);
    const released = Promise.all([nextEvent(outer, 'release'), nextEvent(inner, 'release')]);
    expect(await (await fetch(url)).text()).toBe('ok');
    expect((await released).map((e) => e.outcome)).toEqual(['success', 'success']);
    expect([outer.inflight, inner.inflight]).toEqual([0, 0]);
  });

  it('takes a client that disconnects while queued out of the queue at once', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/held`);
    await nextEvent(limiter, 'acquire');
    const controller = new AbortController();
    const queued = nextEvent(limiter, 'queue');
    const second = fetch(`${url}/queued`, { signal: controller.signal }).catch((e) => e);
    await queued;
    const rejected = nextEvent(limiter, 'reject');
    controller.abort();
    expect((await rejected).reason).toBe('aborted');
    expect(limiter.queued).toBe(0);
    await second;
    gate.resolve();
    expect((await first).status).toBe(200);
    expect(calls).toEqual(['/held']);
  });
});

describe('loadShed partitions with Express', () => {
  /** 4 units: login keeps 1 reserved; recommendations may borrow the other 3 and never queues. */
  function bulkheads() {
    return new PartitionedLimiter({
      limit: 4,
      partitions: {
        login: { reserved: 1, maxQueued: 0 },
        recommendations: { maxQueued: 0 },
        default: { maxBorrow: 1, maxQueued: 0 },
      },
    });
  }

  it('keeps /login admitted while /recommendations is saturated and shed', async () => {
    const limiter = bulkheads();
    const gate = deferred();
    const { url } = await serve({ limiter }, gate.promise);
    const recommendations = limiter.partition('recommendations');
    const held = [1, 2, 3].map((i) => fetch(`${url}/recommendations/${i}`));
    while (recommendations.inflight < 3) await nextEvent(recommendations, 'acquire');
    const shed = await fetch(`${url}/recommendations/4`);
    expect(shed.status).toBe(503);
    expect(await shed.json()).toEqual({ error: 'overloaded', reason: 'limit' });
    const login = fetch(`${url}/login?user=a`);
    await nextEvent(limiter.partition('login'), 'acquire');
    expect(limiter.ledger().partitions.login?.running).toBe(1);
    gate.resolve();
    expect((await login).status).toBe(200);
    for (const response of await Promise.all(held)) expect(response.status).toBe(200);
  });

  it('sends paths that name no partition to the fallback partition', async () => {
    const limiter = bulkheads();
    const gate = deferred();
    const { url } = await serve({ limiter }, gate.promise);
    const other = fetch(`${url}/unknown/path`);
    await nextEvent(limiter.partition('default'), 'acquire');
    const root = fetch(`${url}/`);
    await nextEvent(limiter.partition('default'), 'reject');
    expect((await root).status).toBe(503);
    gate.resolve();
    expect((await other).status).toBe(200);
    expect(limiter.ledger().partitions.default?.released).toBe(1);
  });

  it('uses the partition function, sending non-strings and unknown names to fallbackPartition', async () => {
    const limiter = bulkheads();
    const partition = (req: { headers: Record<string, unknown> }) =>
      req.headers['x-part'] === 'none'
        ? (undefined as unknown as string)
        : String(req.headers['x-part']);
    const { url } = await serve({ limiter, partition, fallbackPartition: 'recommendations' });
    for (const part of ['login', 'none', 'attacker-chosen-label']) {
      await fetch(url, { headers: { 'x-part': part } });
    }
    const { partitions } = limiter.ledger();
    expect(partitions.login?.released).toBe(1);
    expect(partitions.recommendations?.released).toBe(2);
    expect(partitions.default?.released).toBe(0);
    expect(Object.keys(partitions)).toEqual(['login', 'recommendations', 'default']);
  });
});
