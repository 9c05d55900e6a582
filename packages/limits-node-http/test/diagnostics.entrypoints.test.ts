import diagnosticsChannel from 'node:diagnostics_channel';
import { createServer } from 'node:http';
import { guard } from 'limits-breaker';
import { Limiter, PartitionedLimiter } from 'limits-core';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { fetchGuard, limitFetch, limitInterceptor, loadShed } from '../src/index.js';
import { startServer } from './support/fetchServer.js';
import { closeLater, closeServers, listen } from './support/loadShedServers.js';

// The entry points publish their limiters on the `limits:` channels by themselves: an APM tool that
// subscribes sees their events without the application calling publishDiagnostics.

const subscriptions: Array<[string, (message: unknown) => void]> = [];
afterEach(async () => {
  for (const [name, fn] of subscriptions.splice(0)) diagnosticsChannel.unsubscribe(name, fn);
  await closeServers();
});

/** What arrives on limits:admit and limits:release. */
function watch(): Array<{ channel: string; limiter: unknown; partition: unknown }> {
  const seen: Array<{ channel: string; limiter: unknown; partition: unknown }> = [];
  for (const channel of ['limits:admit', 'limits:release']) {
    const fn = (message: unknown) => {
      const m = message as { limiter: unknown; partition: unknown };
      seen.push({ channel, limiter: m.limiter, partition: m.partition });
    };
    diagnosticsChannel.subscribe(channel, fn);
    subscriptions.push([channel, fn]);
  }
  return seen;
}

describe('entry points publish their limiters on the diagnostics channels', () => {
  it('limitFetch, with a limiter and with a fetchGuard guard', async () => {
    const server = await startServer();
    closeLater(() => server.close());
    const seen = watch();
    const limiter = new Limiter({ limit: 2 });
    await (await limitFetch(fetch, { limiter })(server.url)).text();
    expect(seen.filter((m) => m.limiter === limiter).map((m) => m.channel)).toEqual([
      'limits:admit',
      'limits:release',
    ]);
    const breaker = fetchGuard(guard, { limiter: { limit: 2 } });
    await (await limitFetch(fetch, { guard: breaker })(server.url)).text();
    expect(seen.filter((m) => m.limiter === breaker.limiter).map((m) => m.channel)).toEqual([
      'limits:admit',
      'limits:release',
    ]);
    await breaker.shutdown();
  });

  it('limitInterceptor', async () => {
    const server = await startServer();
    closeLater(() => server.close());
    const seen = watch();
    const limiter = new Limiter({ limit: 2 });
    const agent = new Agent().compose(limitInterceptor({ limiter }));
    closeLater(() => agent.close());
    const res = await request(server.url, { dispatcher: agent });
    await res.body.text();
    expect(seen.filter((m) => m.limiter === limiter).map((m) => m.channel)).toEqual([
      'limits:admit',
      'limits:release',
    ]);
  });

  it('loadShed, with each partition named', async () => {
    const seen = watch();
    const bulkheads = new PartitionedLimiter({
      limit: 4,
      partitions: { login: { reserved: 2 }, default: { reserved: 2 } },
    });
    const shed = loadShed({ limiter: bulkheads });
    const url = await listen(createServer(shed.wrap((_req, res) => res.end('ok'))));
    await (await fetch(`${url}/login`)).text();
    await new Promise((resolve) => setImmediate(resolve)); // the release follows the response's close
    expect(seen.map((m) => [m.channel, m.partition])).toEqual([
      ['limits:admit', 'login'],
      ['limits:release', 'login'],
    ]);
  });
});
