// The request context across services on 127.0.0.1: loadShed at each door, limitFetch on the way
// out. The budget shrinks at each hop, the criticality travels, each hop numbers its own attempts,
// and a client that disconnects at the first service aborts the call it made to the next one.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { Limiter } from 'limits-core';
import { afterEach, describe, expect, it } from 'vitest';
import { limitFetch, loadShed } from '../src/index.js';
import { startServer, until } from './support/fetchServer.js';
import { closeServers, listen, nextEvent } from './support/loadShedServers.js';

afterEach(closeServers);

/**
 * A service behind loadShed whose handler calls `next` through limitFetch and answers its body;
 * the headers of the requests it received go to `seen`.
 */
async function relay(
  next: string,
  limiter: Limiter,
  outbound: Limiter,
  seen: IncomingHttpHeaders[] = [],
) {
  const api = limitFetch(fetch, { limiter: outbound });
  const shed = loadShed({ limiter });
  return listen(
    createServer(
      shed.wrap(async (req, res) => {
        seen.push(req.headers);
        try {
          const answer = await api(next);
          res.writeHead(answer.status);
          res.end(await answer.text());
        } catch (error) {
          res.writeHead(502);
          res.end((error as Error).name);
        }
      }),
    ),
  );
}

describe('the request context across services', () => {
  it('shrinks the budget at each hop and carries the criticality, each hop numbering its own attempts', async () => {
    const atC: IncomingHttpHeaders[] = [];
    const atB: IncomingHttpHeaders[] = [];
    const c = await listen(
      createServer(
        loadShed({ limiter: new Limiter({ limit: 4 }) }).wrap((req, res) => {
          atC.push(req.headers);
          res.end('done at C');
        }),
      ),
    );
    const b = await relay(c, new Limiter({ limit: 4 }), new Limiter({ limit: 4 }), atB);
    const a = await relay(b, new Limiter({ limit: 4 }), new Limiter({ limit: 4 }));
    const res = await fetch(a, {
      headers: {
        'x-request-timeout-ms': '5000',
        'x-request-criticality': 'sheddable_plus',
        'x-request-attempt': '2',
      },
    });
    expect(await res.text()).toBe('done at C');
    const budgetAtB = Number(atB[0]?.['x-request-timeout-ms']);
    const budgetAtC = Number(atC[0]?.['x-request-timeout-ms']);
    expect(budgetAtB).toBeLessThanOrEqual(5000 - 10);
    expect(budgetAtC).toBeLessThanOrEqual(budgetAtB - 10);
    expect(budgetAtC).toBeGreaterThan(0);
    expect(atB[0]?.['x-request-criticality']).toBe('sheddable_plus');
    expect(atC[0]?.['x-request-criticality']).toBe('sheddable_plus');
    // A retry reached A; A's own call to B is B's first attempt.
    expect(atB[0]?.['x-request-attempt']).toBe('1');
    expect(atC[0]?.['x-request-attempt']).toBe('1');
  });

  it('aborts the call to the next service when the client disconnects, and leaves no permit held', async () => {
    const downstream = await startServer();
    downstream.handle = () => {};
    const inbound = new Limiter({ limit: 4 });
    const outbound = new Limiter({ limit: 4 });
    const a = await relay(downstream.url, inbound, outbound);
    const client = new AbortController();
    const outboundAcquired = nextEvent(outbound, 'acquire');
    const answer = fetch(a, { signal: client.signal }).catch((e: unknown) => e);
    await outboundAcquired;
    await until(() => downstream.requests.length === 1);
    const outboundReleased = nextEvent(outbound, 'release');
    const inboundReleased = nextEvent(inbound, 'release');
    client.abort();
    expect(((await answer) as Error).name).toBe('AbortError');
    expect((await outboundReleased).outcome).toBe('ignore');
    expect((await inboundReleased).outcome).toBe('ignore');
    await until(() => downstream.aborted === 1);
    expect(inbound.inflight + outbound.inflight).toBe(0);
    await downstream.close();
  });
});
