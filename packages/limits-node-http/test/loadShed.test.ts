// loadShed's behaviour, as one table of scenarios run against each framework it serves (node:http
// through `wrap`, Express 5 middleware, the Fastify 5 plugin), then what only one framework has.
// Real servers on 127.0.0.1:0 (see support/loadShedServers.ts); every wait is on a limiter event.
import { createServer, type ServerResponse } from 'node:http';
import express from 'express';
import { Limiter, PartitionedLimiter } from 'limits-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type LoadShedOptions, loadShed } from '../src/index.js';
import {
  closeServers,
  deferred,
  expressApp,
  fastifyApp,
  firstChunk,
  frameworks,
  listen,
  nextEvent,
} from './support/loadShedServers.js';

afterEach(closeServers);

describe.each(frameworks)('loadShed on %s', (_name, framework) => {
  const serve = framework.serve.bind(framework);

  it('admits a request, lets the application answer and releases the permit as success when the response finishes', async () => {
    const limiter = new Limiter({ limit: 2 });
    const { url, calls } = await serve({ limiter });
    const released = nextEvent(limiter, 'release');
    const response = await fetch(`${url}/a`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('ok');
    expect((await released).outcome).toBe('success');
    expect(limiter.inflight).toBe(0);
    expect(calls).toEqual(['/a']);
  });

  it('answers a refused request with a 503, Retry-After, a JSON content type and length, and a body that names only the reason, without reaching the application', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/held`);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(`${url}/refused`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(Number(response.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = await response.text();
    expect(body).toBe('{"error":"overloaded","reason":"at_limit"}');
    expect(response.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
    expect(calls).toEqual(['/held']);
    gate.resolve();
    expect((await first).status).toBe(200);
    expect(calls).toEqual(['/held']);
  });

  it("writes the limiter's retry estimate as Retry-After in whole seconds, capped by maxRetryAfterMs", async () => {
    // Nothing measured yet: the limiter estimates a permit frees in initialServiceMs.
    const limiter = new Limiter({ limit: 1, maxQueued: 0, initialServiceMs: 4_500 });
    const gate = deferred();
    const uncapped = await serve({ limiter }, gate.promise);
    const capped = await serve({ limiter, maxRetryAfterMs: 3_000 }, gate.promise);
    const first = fetch(uncapped.url);
    await nextEvent(limiter, 'acquire');
    const rejected = nextEvent(limiter, 'reject');
    const response = await fetch(uncapped.url);
    expect((await rejected).retryAfterMs).toBe(4_500);
    expect(response.headers.get('retry-after')).toBe('5');
    expect((await fetch(capped.url)).headers.get('retry-after')).toBe('3');
    gate.resolve();
    await first;
  });

  it('answers Retry-After: 1 while the limiter has no retry estimate (nothing measured, no initialServiceMs)', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 2 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const answers = [fetch(`${url}/held`)];
    await nextEvent(limiter, 'acquire');
    for (const path of ['/queued-1', '/queued-2']) {
      const queued = nextEvent(limiter, 'queue');
      answers.push(fetch(`${url}${path}`));
      await queued;
    }
    const rejected = nextEvent(limiter, 'reject');
    const response = await fetch(`${url}/refused`);
    expect(response.status).toBe(503);
    expect(await rejected).toEqual({ reason: 'queue_full', cost: 1 });
    expect(response.headers.get('retry-after')).toBe('1');
    gate.resolve();
    for (const answer of await Promise.all(answers)) expect(answer.status).toBe(200);
    expect(calls).toEqual(['/held', '/queued-1', '/queued-2']);
  });

  it('answers 503 with reason closed once the limiter is closed', async () => {
    const limiter = new Limiter({ limit: 1 });
    const { url, calls } = await serve({ limiter });
    await limiter.close();
    const response = await fetch(url);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: 'overloaded', reason: 'closed' });
    expect(calls).toEqual([]);
  });

  it('serves a queued request once the permit ahead of it is released', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/1`);
    await nextEvent(limiter, 'acquire');
    const queued = nextEvent(limiter, 'queue');
    const second = fetch(`${url}/2`);
    await queued;
    expect(calls).toEqual(['/1']);
    gate.resolve();
    expect((await first).status).toBe(200);
    expect((await second).status).toBe(200);
    expect(calls).toEqual(['/1', '/2']);
  });

  it('releases the permit as ignore when the client disconnects in the middle of the response', async () => {
    const limiter = new Limiter({ limit: 1 });
    const gate = deferred();
    const { url } = await serve({ limiter }, gate.promise);
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

  it('takes a client that disconnects while queued out of the queue at once, without running the application', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/held`);
    await nextEvent(limiter, 'acquire');
    const controller = new AbortController();
    const queued = nextEvent(limiter, 'queue');
    const second = fetch(`${url}/queued`, { signal: controller.signal }).catch((e) => e);
    await queued;
    expect(limiter.queued).toBe(1);
    const rejected = nextEvent(limiter, 'reject');
    controller.abort();
    expect((await rejected).reason).toBe('aborted');
    expect(limiter.queued).toBe(0);
    expect(await second).toBeInstanceOf(Error);
    gate.resolve();
    expect((await first).status).toBe(200);
    expect(calls).toEqual(['/held']);
    expect(limiter.inflight).toBe(0);
  });

  it("reports the application's finished 503 as dropped and its 500 as failure", async () => {
    const limiter = new Limiter({ limit: 2 });
    const { url } = await serve({ limiter });
    let released = nextEvent(limiter, 'release');
    expect((await fetch(`${url}/status/503`)).status).toBe(503);
    expect((await released).outcome).toBe('dropped');
    released = nextEvent(limiter, 'release');
    expect((await fetch(`${url}/status/500`)).status).toBe(500);
    expect((await released).outcome).toBe('failure');
    expect(limiter.inflight).toBe(0);
  });

  it('asks classify for the outcome, and falls back to the status table when it returns nothing valid or throws', async () => {
    const limiter = new Limiter({ limit: 2 });
    const classify = vi.fn((res: ServerResponse) => {
      if (res.getHeader('x-outcome') === 'throw') throw new Error('classify bug');
      return res.getHeader('x-outcome') as never;
    });
    const { url } = await serve({ limiter, classify });
    for (const [given, expected] of [
      ['ignore', 'ignore'],
      ['dropped', 'dropped'],
      ['nonsense', 'success'],
      ['throw', 'success'],
    ]) {
      const released = nextEvent(limiter, 'release');
      await fetch(`${url}/outcome/${given}`);
      expect((await released).outcome).toBe(expected);
    }
    expect(classify).toHaveBeenCalledTimes(4);
  });

  it('hands a refusal to onShed, which answers on the raw response', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const onShed = vi.fn((_req, res: ServerResponse, error: { reason: string }) => {
      res.writeHead(429, { 'content-type': 'text/plain', 'retry-after': '7' });
      res.end(`busy: ${error.reason}`);
    }) as NonNullable<LoadShedOptions['onShed']>;
    const { url } = await serve({ limiter, onShed }, gate.promise);
    const first = fetch(url);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(url);
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('7');
    expect(await response.text()).toBe('busy: at_limit');
    expect(onShed).toHaveBeenCalledTimes(1);
    gate.resolve();
    await first;
  });

  it('answers 503 with reason expired, from outside the admission, a request that waited longer than maxQueueWaitMs', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5, maxQueueWaitMs: 1 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/held`);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(`${url}/late`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
    expect(await response.json()).toEqual({ error: 'overloaded', reason: 'expired' });
    gate.resolve();
    await first;
    expect(calls).toEqual(['/held']);
  });
});

describe.each(frameworks)('loadShed time limit header on %s', (_name, framework) => {
  const serve = framework.serve.bind(framework);

  /** The options each acquireWith received. */
  function spied(limiter: Limiter) {
    return vi.spyOn(limiter, 'acquireWith');
  }

  it('refuses a time limit of 0 ms at once with reason deadline, even with capacity free', async () => {
    const limiter = new Limiter({ limit: 5 });
    const { url, calls } = await serve({ limiter });
    const response = await fetch(url, { headers: { 'x-request-timeout-ms': '0' } });
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: 'overloaded', reason: 'deadline' });
    expect(calls).toEqual([]);
  });

  it('passes a valid time limit to admission as timeoutMs', async () => {
    const limiter = new Limiter({ limit: 5 });
    const spy = spied(limiter);
    const { url } = await serve({ limiter });
    const response = await fetch(url, { headers: { 'x-request-timeout-ms': ' 2500 ' } });
    expect(response.status).toBe(200);
    expect(spy.mock.calls[0]?.[1]).toEqual({ timeoutMs: 2500 });
  });

  it('ignores garbage, negative, decimal, unit-suffixed and empty time limits', async () => {
    const limiter = new Limiter({ limit: 5 });
    const spy = spied(limiter);
    const { url } = await serve({ limiter });
    const values = ['abc', '-5', '1.5', '10ms', '', '1e3', '0x10', '1, 2', '\u00b2'];
    for (const value of values) {
      const response = await fetch(url, { headers: { 'x-request-timeout-ms': value } });
      expect(response.status).toBe(200);
    }
    expect(spy.mock.calls.map((c) => c[1])).toEqual(values.map(() => undefined));
  });

  it('caps a huge time limit at maxTimeoutMs', async () => {
    const limiter = new Limiter({ limit: 5 });
    const spy = spied(limiter);
    const { url } = await serve({ limiter, maxTimeoutMs: 1000 });
    for (const value of ['5000000', '99999999999999999999999']) {
      const response = await fetch(url, { headers: { 'x-request-timeout-ms': value } });
      expect(response.status).toBe(200);
    }
    expect(spy.mock.calls.map((c) => c[1])).toEqual([{ timeoutMs: 1000 }, { timeoutMs: 1000 }]);
  });

  it('refuses at once a request whose time limit cannot be met given the queue ahead of it', async () => {
    // One permit held, and a service time guess of 1 s: a 100 ms time limit cannot be met.
    const limiter = new Limiter({ limit: 1, maxQueued: 10, initialServiceMs: 1000 });
    const gate = deferred();
    const { url, calls } = await serve({ limiter }, gate.promise);
    const first = fetch(`${url}/held`);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(`${url}/late`, { headers: { 'x-request-timeout-ms': '100' } });
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: 'overloaded', reason: 'deadline' });
    expect(limiter.queued).toBe(0);
    gate.resolve();
    await first;
    expect(calls).toEqual(['/held']);
  });

  it('reads the header named by timeoutHeader, and none when it is false', async () => {
    const limiter = new Limiter({ limit: 5 });
    const spy = spied(limiter);
    const custom = await serve({ limiter, timeoutHeader: 'x-envoy-expected-rq-timeout-ms' });
    await fetch(custom.url, { headers: { 'x-envoy-expected-rq-timeout-ms': '750' } });
    await fetch(custom.url, { headers: { 'x-request-timeout-ms': '0' } });
    const off = await serve({ limiter, timeoutHeader: false });
    const response = await fetch(off.url, { headers: { 'x-request-timeout-ms': '0' } });
    expect(response.status).toBe(200);
    expect(spy.mock.calls.map((c) => c[1])).toEqual([{ timeoutMs: 750 }, undefined, undefined]);
  });
});

describe.each(frameworks)('loadShed partitions on %s', (_name, framework) => {
  const serve = framework.serve.bind(framework);

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
    expect(await shed.json()).toEqual({ error: 'overloaded', reason: 'at_limit' });
    const login = fetch(`${url}/login?user=a`);
    await nextEvent(limiter.partition('login'), 'acquire');
    expect(limiter.ledger().partitions.login?.running).toBe(1);
    gate.resolve();
    expect((await login).status).toBe(200);
    for (const response of await Promise.all(held)) expect(response.status).toBe(200);
    expect(limiter.ledger().partitions.recommendations?.released).toBe(3);
    expect(limiter.ledger().partitions.login?.released).toBe(1);
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

describe('loadShed middleware', () => {
  it('throws a TypeError that points to wrap() when the middleware is called without next', () => {
    const shed = loadShed({ limiter: new Limiter() });
    const call = shed as unknown as (req: unknown, res: unknown) => void;
    expect(() => call({}, {})).toThrow(/use loadShed\(options\)\.wrap\(handler\)/);
    expect(() => shed.wrap(42 as never)).toThrow(TypeError);
  });
});

describe.each([
  [expressApp.name, expressApp],
  [fastifyApp.name, fastifyApp],
])('loadShed on %s when a route throws', (_name, framework) => {
  it('releases the permit as failure when the framework answers 500 from its error path', async () => {
    const limiter = new Limiter({ limit: 1 });
    const { url } = await framework.serve({ limiter });
    for (const path of ['/boom', '/reject']) {
      const released = nextEvent(limiter, 'release');
      const response = await fetch(`${url}${path}`);
      expect(response.status).toBe(500);
      expect((await released).outcome).toBe('failure');
      expect(limiter.inflight).toBe(0);
    }
  });
});

describe('loadShed as Express 5 middleware', () => {
  it('releases the permits of stacked loadShed instances, each to its own limiter', async () => {
    const outer = new Limiter({ limit: 2 });
    const inner = new Limiter({ limit: 2 });
    const app = express();
    app.use(loadShed({ limiter: outer }));
    app.get('/', loadShed({ limiter: inner }), (_req, res) => {
      res.send('ok');
    });
    const url = await listen(createServer(app));
    const released = Promise.all([nextEvent(outer, 'release'), nextEvent(inner, 'release')]);
    expect(await (await fetch(url)).text()).toBe('ok');
    expect((await released).map((e) => e.outcome)).toEqual(['success', 'success']);
    expect([outer.inflight, inner.inflight]).toEqual([0, 0]);
  });
});

describe('loadShed as a Fastify 5 plugin', () => {
  it('applies to routes of the root and of encapsulated child plugins, as fastify-plugin would', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const { url } = await fastifyApp.serveWith({ limiter }, gate.promise, (app) => {
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
    const { url } = await fastifyApp.serve({ limiter, partition, fallbackPartition: 'other' });
    await fetch(`${url}/login`);
    await fetch(`${url}/recommendations/5`);
    expect(seen).toEqual(['/login', '/recommendations/:id']);
    expect(limiter.ledger().partitions.login?.released).toBe(1);
    expect(limiter.ledger().partitions.other?.released).toBe(1);
  });
});
