// loadShed in front of a limiter with `shedding`: the criticality and attempt read from the
// request's headers decide who is refused under overload, on each framework. A request shed for a
// more important one gets a 503 with reason shed and x-do-not-retry; a retry is shed before a first
// attempt; at the door, a risen threshold refuses the least important while the others queue.
import { createServer } from 'node:http';
import { type AcquireOptions, Limiter, type Permit } from 'limits-core';
import { afterEach, describe, expect, it } from 'vitest';
import { loadShed } from '../src/index.js';
import { ManualClock } from './support/fetchServer.js';
import { closeServers, frameworks, listen, nextEvent } from './support/loadShedServers.js';

afterEach(closeServers);

describe.each(frameworks)('loadShed with a shedding limiter on %s', (_name, framework) => {
  const serve = framework.serve.bind(framework);

  it('sheds a queued sheddable request to make room for a critical one, telling it not to retry', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 1, shedding: {} });
    const busy = limiter.tryAcquire() as Permit;
    const { url, calls } = await serve({ limiter });
    const queued = nextEvent(limiter, 'queue');
    const low = fetch(`${url}/low`, { headers: { 'x-request-criticality': 'sheddable' } });
    await queued;
    const high = fetch(`${url}/high`, { headers: { 'x-request-criticality': 'critical' } });
    const shed = await low;
    expect(shed.status).toBe(503);
    expect(await shed.json()).toEqual({ error: 'overloaded', reason: 'shed' });
    expect(shed.headers.get('x-do-not-retry')).toBe('1');
    expect(shed.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(limiter.queued).toBe(1);
    busy.success();
    const served = await high;
    expect(served.status).toBe(200);
    await served.text();
    expect(calls).toEqual(['/high']);
  });

  it('sheds a queued retry before a first attempt of the same criticality', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 1, shedding: {} });
    const busy = limiter.tryAcquire() as Permit;
    const { url, calls } = await serve({ limiter });
    const queued = nextEvent(limiter, 'queue');
    const retry = fetch(`${url}/retry`, { headers: { 'x-request-attempt': '2' } });
    await queued;
    const first = fetch(`${url}/first`);
    const shed = await retry;
    expect(shed.status).toBe(503);
    expect(await shed.json()).toEqual({ error: 'overloaded', reason: 'shed' });
    expect(shed.headers.get('x-do-not-retry')).toBe('1');
    busy.success();
    const served = await first;
    expect(served.status).toBe(200);
    await served.text();
    expect(calls).toEqual(['/first']);
  });
});

describe('loadShed at the door of an overloaded shedding limiter', () => {
  it('refuses a sheddable request at once and queues a critical one, by their headers', async () => {
    // 4 at a time, 10 ms each (0.4 per ms), offered 0.2 critical + 0.8 sheddable per ms on a manual
    // clock: the threshold rises to cut into sheddable, and stays there while time stands still.
    const clock = new ManualClock();
    const limiter = new Limiter({
      limit: 4,
      maxQueued: 50,
      shedding: {},
      clock,
      trackLeaks: 'off',
    });
    const hold = (permit: Permit) => clock.setTimeout(() => permit.success(), 10);
    const send = (options: AcquireOptions) => {
      const permit = limiter.acquireWith({ granted: hold, refused: () => {} }, options);
      if (permit !== undefined) hold(permit);
    };
    for (let t = 0; t < 2000; t += 5) {
      send({ criticality: 'critical', cohort: `c${t % 97}` });
      for (let i = 0; i < 4; i++) send({ criticality: 'sheddable', cohort: `s${(t + i) % 89}` });
      clock.advance(5);
    }
    expect(limiter.snapshot().shedding?.criticality).toBe('sheddable');
    const url = await listen(
      createServer(loadShed({ limiter }).wrap((_req, res) => res.end('ok'))),
    );

    const shed = await fetch(url, { headers: { 'x-request-criticality': 'sheddable' } });
    expect(shed.status).toBe(503);
    expect(await shed.json()).toEqual({ error: 'overloaded', reason: 'shed' });
    expect(shed.headers.get('x-do-not-retry')).toBe('1');

    const queued = nextEvent(limiter, 'queue');
    const critical = fetch(url, { headers: { 'x-request-criticality': 'critical' } });
    await queued;
    clock.advance(1_000); // the queue drains
    const served = await critical;
    expect(served.status).toBe(200);
    expect(await served.text()).toBe('ok');
  });
});
