import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Limiter } from 'limits-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type LoadShedOptions, loadShed } from '../src/index.js';
import { deferred, firstChunk, listen, nextEvent } from './loadShedSupport.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A node:http server behind `loadShed`; `gate` holds every response until the test opens it. */
async function serve(options: LoadShedOptions, gate?: Promise<void>) {
  const calls: string[] = [];
  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    calls.push(req.url ?? '');
    if (gate !== undefined) await gate;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  };
  const url = await listen(createServer(loadShed(options).wrap(handler)), closers);
  return { url, calls };
}

describe('loadShed on node:http', () => {
  it('admits a request, runs the handler and releases the permit as success when the response finishes', async () => {
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

  it('answers a refused request with a 503, Retry-After, a JSON content type and length, and a body that names only the reason', async () => {
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
    expect(body).toBe('{"error":"overloaded","reason":"limit"}');
    expect(response.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
    expect(calls).toEqual(['/held']);
    gate.resolve();
    expect((await first).status).toBe(200);
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
    const handler = async (_req: IncomingMessage, res: ServerResponse): Promise<void> => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      await gate.promise;
      res.end('rest');
    };
    const url = await listen(createServer(loadShed({ limiter }).wrap(handler)), closers);
    const controller = new AbortController();
    const response = await fetch(url, { signal: controller.signal });
    expect(await firstChunk(response)).toBe('partial');
    expect(limiter.inflight).toBe(1);
    const released = nextEvent(limiter, 'release');
    controller.abort();
    expect((await released).outcome).toBe('ignore');
    expect(limiter.inflight).toBe(0);
    gate.resolve();
  });

  it('takes a client that disconnects while queued out of the queue at once, without running its handler', async () => {
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

  it('reports a finished 503 of the application as dropped and a 500 as failure', async () => {
    const limiter = new Limiter({ limit: 2 });
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      res.statusCode = req.url === '/busy' ? 503 : 500;
      res.end();
    };
    const url = await listen(createServer(loadShed({ limiter }).wrap(handler)), closers);
    let released = nextEvent(limiter, 'release');
    await fetch(`${url}/busy`);
    expect((await released).outcome).toBe('dropped');
    released = nextEvent(limiter, 'release');
    await fetch(`${url}/broken`);
    expect((await released).outcome).toBe('failure');
  });

  it('asks classify for the outcome, and falls back to the status table when it returns nothing valid or throws', async () => {
    const limiter = new Limiter({ limit: 2 });
    const classify = vi.fn((res: ServerResponse) => {
      if (res.getHeader('x-outcome') === 'throw') throw new Error('classify bug');
      return res.getHeader('x-outcome') as never;
    });
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      res.setHeader('x-outcome', (req.url ?? '/').slice(1));
      res.end();
    };
    const url = await listen(createServer(loadShed({ limiter, classify }).wrap(handler)), closers);
    for (const [given, expected] of [
      ['ignore', 'ignore'],
      ['dropped', 'dropped'],
      ['nonsense', 'success'],
      ['throw', 'success'],
    ]) {
      const released = nextEvent(limiter, 'release');
      await fetch(`${url}/${given}`);
      expect((await released).outcome).toBe(expected);
    }
    expect(classify).toHaveBeenCalledTimes(4);
  });

  it('answers a refusal with onShed when it is given', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const onShed = vi.fn(
      (_req: IncomingMessage, res: ServerResponse, error: { reason: string }) => {
        res.writeHead(429, { 'content-type': 'text/plain' });
        res.end(`busy: ${error.reason}`);
      },
    );
    const { url } = await serve({ limiter, onShed }, gate.promise);
    const first = fetch(url);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(url);
    expect(response.status).toBe(429);
    expect(await response.text()).toBe('busy: limit');
    expect(onShed).toHaveBeenCalledTimes(1);
    gate.resolve();
    await first;
  });

  it('refuses with the 503 of the expired reason a request that waited longer than maxQueueWaitMs', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 5, maxQueueWaitMs: 1 });
    const gate = deferred();
    const { url } = await serve({ limiter }, gate.promise);
    const first = fetch(url);
    await nextEvent(limiter, 'acquire');
    const response = await fetch(url);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: 'overloaded', reason: 'expired' });
    gate.resolve();
    await first;
  });

  it('throws a TypeError that points to wrap() when the middleware is called without next', () => {
    const shed = loadShed({ limiter: new Limiter() });
    const call = shed as unknown as (req: unknown, res: unknown) => void;
    expect(() => call({}, {})).toThrow(/use loadShed\(options\)\.wrap\(handler\)/);
    expect(() => shed.wrap(42 as never)).toThrow(TypeError);
  });
});

describe('loadShed time budget header', () => {
  /** The options each acquireWith received. */
  function spied(limiter: Limiter) {
    return vi.spyOn(limiter, 'acquireWith');
  }

  it('refuses a budget of 0 ms at once with reason deadline, even with capacity free', async () => {
    const limiter = new Limiter({ limit: 5 });
    const { url, calls } = await serve({ limiter });
    const response = await fetch(url, { headers: { 'x-request-timeout-ms': '0' } });
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: 'overloaded', reason: 'deadline' });
    expect(calls).toEqual([]);
  });

  it('passes a valid budget to admission as timeoutMs', async () => {
    const limiter = new Limiter({ limit: 5 });
    const spy = spied(limiter);
    const { url } = await serve({ limiter });
    const response = await fetch(url, { headers: { 'x-request-timeout-ms': ' 2500 ' } });
    expect(response.status).toBe(200);
    expect(spy.mock.calls[0]?.[1]).toEqual({ timeoutMs: 2500 });
  });

  it('ignores garbage, negative, decimal, unit-suffixed and empty budgets', async () => {
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

  it('caps a huge budget at maxTimeoutMs', async () => {
    const limiter = new Limiter({ limit: 5 });
    const spy = spied(limiter);
    const { url } = await serve({ limiter, maxTimeoutMs: 1000 });
    for (const value of ['5000000', '99999999999999999999999']) {
      const response = await fetch(url, { headers: { 'x-request-timeout-ms': value } });
      expect(response.status).toBe(200);
    }
    expect(spy.mock.calls.map((c) => c[1])).toEqual([{ timeoutMs: 1000 }, { timeoutMs: 1000 }]);
  });

  it('refuses at once a request whose budget cannot be met given the queue ahead of it', async () => {
    // One permit held, and a service time guess of 1 s: a 100 ms budget cannot be met.
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
