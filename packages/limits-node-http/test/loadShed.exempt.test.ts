import { createServer, type IncomingMessage } from 'node:http';
import express from 'express';
import { Limiter, Quota } from 'limits-core';
import { afterEach, describe, expect, it } from 'vitest';
import { type LoadShedOptions, loadShed } from '../src/index.js';
import { checkExempt } from '../src/loadShed/exempt.js';
import {
  closeServers,
  deferred,
  frameworks,
  listen,
  nextEvent,
} from './support/loadShedServers.js';

afterEach(closeServers);

/** A limiter with room for one request and no queue, and a count of what it was asked. */
function full() {
  const limiter = new Limiter({ limit: 1, maxQueued: 0 });
  const asked = { granted: 0, refused: 0 };
  limiter.on('acquire', () => asked.granted++);
  limiter.on('reject', () => asked.refused++);
  return { limiter, asked };
}

describe.each(frameworks)('loadShed exempt on %s', (_name, framework) => {
  it('lets exempt paths through a full limiter without a permit, and refuses the others', async () => {
    const { limiter, asked } = full();
    const gate = deferred();
    const app = await framework.serve(
      { limiter, exempt: ['/outcome/health', '/status/*'] },
      gate.promise,
    );
    // One request holds the only permit (it waits on the gate).
    const holding = fetch(`${app.url}/login`);
    await nextEvent(limiter, 'acquire');
    expect(limiter.inflight).toBe(1);

    const health = await fetch(`${app.url}/outcome/health?verbose=1`);
    expect(health.status).toBe(200);
    expect(health.headers.get('x-outcome')).toBe('health');
    const status = await fetch(`${app.url}/status/204`);
    expect(status.status).toBe(204);
    // Not exempt: a path that only starts like one, and any other.
    const near = await fetch(`${app.url}/outcome/healthz`);
    expect(near.status).toBe(503);
    expect(await near.json()).toEqual({ error: 'overloaded', reason: 'at_limit' });
    const other = await fetch(`${app.url}/login`);
    expect(other.status).toBe(503);
    await other.arrayBuffer();

    expect(asked).toEqual({ granted: 1, refused: 2 });
    expect(limiter.inflight).toBe(1);
    gate.resolve();
    expect((await holding).status).toBe(200);
    expect(limiter.inflight).toBe(0);
    expect(app.calls).toEqual(['/login', '/outcome/health', '/status/204']);
  });

  it('takes a predicate: only true exempts', async () => {
    const { limiter, asked } = full();
    const gate = deferred();
    const seen: string[] = [];
    const app = await framework.serve(
      {
        limiter,
        exempt: (req: IncomingMessage) => {
          seen.push(req.url ?? '');
          return req.headers['x-probe'] === 'ready';
        },
      },
      gate.promise,
    );
    const holding = fetch(`${app.url}/login`);
    await nextEvent(limiter, 'acquire');
    const probe = await fetch(`${app.url}/status/200`, { headers: { 'x-probe': 'ready' } });
    expect(probe.status).toBe(200);
    const notProbe = await fetch(`${app.url}/status/200`, { headers: { 'x-probe': 'yes' } });
    expect(notProbe.status).toBe(503);
    await notProbe.arrayBuffer();
    expect(asked).toEqual({ granted: 1, refused: 1 });
    expect(seen).toEqual(['/login', '/status/200', '/status/200']);
    gate.resolve();
    expect((await holding).status).toBe(200);
  });
});

describe('loadShed exempt', () => {
  it('is never charged on the quota', async () => {
    const quota = new Quota<IncomingMessage>({
      windowMs: 60_000,
      axes: [{ name: 'global', key: () => 'all', limit: 1 }],
    });
    const refused: string[] = [];
    quota.on('refuse', (e) => refused.push(String(e.axis)));
    const limiter = new Limiter({ limit: 10 });
    const shed = loadShed({ limiter, quota, exempt: ['/metrics'] });
    const url = await listen(createServer(shed.wrap((_req, res) => res.end('ok'))));
    for (let i = 0; i < 3; i++) expect((await fetch(`${url}/metrics`)).status).toBe(200);
    expect((await fetch(`${url}/work`)).status).toBe(200); // the quota's one unit
    const over = await fetch(`${url}/work`);
    expect(over.status).toBe(429);
    await over.arrayBuffer();
    expect(refused).toEqual(['global']);
  });

  it('matches the path as the server received it in Express, whatever the mount path', async () => {
    const { limiter, asked } = full();
    const app = express();
    app.use('/api', loadShed({ limiter, exempt: ['/api/health'] }));
    app.get('/api/health', (_req, res) => void res.send('up'));
    const url = await listen(createServer(app));
    limiter.tryAcquire(); // full
    expect(await (await fetch(`${url}/api/health`)).text()).toBe('up');
    expect(asked.refused).toBe(0);
  });

  it.each([
    [
      { exempt: '/health' },
      TypeError,
      'option "exempt" must be an array of paths or a function (req) => boolean, got "/health"',
    ],
    [{ exempt: [7] }, TypeError, 'option "exempt[0]" must be a path starting with "/"'],
    [{ exempt: ['health'] }, RangeError, 'got "health"'],
    [{ exempt: ['/a', '/b?x=1'] }, RangeError, 'option "exempt[1]" must be a path'],
    [{ exempt: ['/a*'] }, RangeError, 'and "*" only as a final "/*" prefix), got "/a*"'],
    [{ exempt: ['/*/x'] }, RangeError, 'got "/*/x"'],
    [{ exempt: [`/${'a'.repeat(1024)}`] }, RangeError, 'up to 1024 characters'],
    [
      { exempt: Array.from({ length: 1001 }, (_, i) => `/p${i}`) },
      RangeError,
      'option "exempt" must list at most 1000 paths, got 1001',
    ],
  ])('refuses %o', (extra, type, message) => {
    const options = { limiter: new Limiter(), ...extra } as unknown as LoadShedOptions;
    expect(() => loadShed(options)).toThrow(type);
    expect(() => loadShed(options)).toThrow(message);
  });

  it('matches exact paths and /* prefixes, ignoring the query string', () => {
    const test = checkExempt(['/health', '/internal/*']) as (req: IncomingMessage) => boolean;
    const at = (url: string) => test({ url } as IncomingMessage);
    expect(at('/health')).toBe(true);
    expect(at('/health?full=1')).toBe(true);
    expect(at('/health/')).toBe(false);
    expect(at('/healthz')).toBe(false);
    expect(at('/internal')).toBe(true);
    expect(at('/internal/')).toBe(true);
    expect(at('/internal/metrics?x')).toBe(true);
    expect(at('/internals')).toBe(false);
    expect(at('/')).toBe(false);
    expect(checkExempt([])).toBeUndefined();
    expect(checkExempt(undefined)).toBeUndefined();
  });
});
