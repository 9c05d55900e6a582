import { Metadata, status } from '@grpc/grpc-js';
import { Limiter, type Outcome, PartitionedLimiter } from 'limits-core';
import { afterEach, describe, expect, it } from 'vitest';
import { loadShedGrpc } from '../src/index.js';
import { call, connect, KINDS, startServer, until } from './support/echo.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(limit = 2, maxQueued = 10) {
  const limiter = new Limiter({ limit, maxQueued });
  const outcomes: Outcome[] = [];
  limiter.on('release', (e) => outcomes.push(e.outcome));
  const srv = await startServer([loadShedGrpc({ limiter })]);
  const client = connect(srv.port);
  cleanups.push(srv.close, () => client.close());
  return { srv, limiter, client, outcomes };
}

describe('loadShedGrpc', () => {
  for (const kind of KINDS) {
    it(`admits a ${kind} call before its handler runs and releases it when its status is sent`, async () => {
      const { srv, limiter, client, outcomes } = await setup();
      const c = call(client, kind, { delayMs: 30 });
      await until(() => srv.counts.running === 1);
      expect(limiter.inflight).toBe(1);
      expect((await c.ended).code).toBe(status.OK);
      await until(() => outcomes.length === 1);
      expect(outcomes).toEqual(['success']);
      expect(limiter.inflight).toBe(0);
    });

    it(`releases a ${kind} call ending with a handler error as failure, RESOURCE_EXHAUSTED as dropped`, async () => {
      const { client, limiter, outcomes } = await setup();
      await call(client, kind, { code: status.INTERNAL }).ended;
      await call(client, kind, { code: status.RESOURCE_EXHAUSTED }).ended;
      await until(() => outcomes.length === 2);
      expect(outcomes).toEqual(['failure', 'dropped']);
      expect(limiter.inflight).toBe(0);
    });

    it(`releases a ${kind} call the client cancels as ignore`, async () => {
      const { srv, client, limiter, outcomes } = await setup();
      const c = call(client, kind, { hang: true });
      await until(() => srv.counts.handled === 1);
      c.cancel();
      await c.ended;
      await until(() => outcomes.length === 1);
      expect(outcomes).toEqual(['ignore']);
      expect(limiter.inflight).toBe(0);
    });

    it(`releases a ${kind} call whose deadline passes in its handler as dropped`, async () => {
      const { srv, client, limiter, outcomes } = await setup();
      const c = call(client, kind, { hang: true }, { deadline: Date.now() + 300 });
      await until(() => srv.counts.handled === 1);
      expect((await c.ended).code).toBe(status.DEADLINE_EXCEEDED);
      await until(() => outcomes.length === 1);
      expect(outcomes).toEqual(['dropped']);
      expect(limiter.inflight).toBe(0);
      expect(srv.counts.handled).toBe(1);
    });

    it(`releases a ${kind} call its handler cancels (status CANCELLED) as failure`, async () => {
      const { client, limiter, outcomes } = await setup();
      expect((await call(client, kind, { code: status.CANCELLED }).ended).code).toBe(
        status.CANCELLED,
      );
      await until(() => outcomes.length === 1);
      expect(outcomes).toEqual(['failure']);
      expect(limiter.inflight).toBe(0);
    });

    it(`refuses a ${kind} call with RESOURCE_EXHAUSTED and never calls its handler`, async () => {
      const { srv, client, limiter } = await setup(1, 0);
      const first = call(client, kind, { hang: true });
      await until(() => srv.counts.handled === 1);
      const refused = await call(client, kind, {}).ended;
      expect(refused.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(refused.details).toBe('limits: at_limit');
      expect(srv.counts.handled).toBe(1);
      first.cancel();
      await first.ended;
      await until(() => limiter.inflight === 0);
    });

    it(`takes a queued ${kind} call out of the queue when the client cancels; its handler never runs`, async () => {
      const { srv, client, limiter, outcomes } = await setup(1, 5);
      const first = call(client, kind, { hang: true });
      await until(() => srv.counts.handled === 1);
      const queued = call(client, kind, {});
      await until(() => limiter.queued === 1);
      queued.cancel();
      expect((await queued.ended).code).toBe(status.CANCELLED);
      await until(() => limiter.queued === 0);
      expect(limiter.inflight).toBe(1);
      first.cancel();
      await first.ended;
      await until(() => limiter.inflight === 0);
      expect(srv.counts.handled).toBe(1);
      expect(outcomes).toEqual(['ignore']);
    });
  }

  it('answers a call whose grpc-timeout passes while queued with DEADLINE_EXCEEDED, handler not called', async () => {
    const { srv, client, limiter } = await setup(1, 5);
    const first = call(client, 'unary', { hang: true });
    await until(() => srv.counts.handled === 1);
    const late = await call(client, 'unary', {}, { deadline: Date.now() + 60 }).ended;
    expect(late.code).toBe(status.DEADLINE_EXCEEDED);
    await until(() => limiter.queued === 0);
    first.cancel();
    await first.ended;
    expect(srv.counts.handled).toBe(1);
  });

  it('answers a closed limiter with UNAVAILABLE', async () => {
    const { srv, client, limiter } = await setup(1, 0);
    await limiter.close();
    const closed = await call(client, 'unary', {}).ended;
    expect(closed.code).toBe(status.UNAVAILABLE);
    expect(closed.details).toBe('limits: closed');
    expect(srv.counts.handled).toBe(0);
  });

  it('partitions by method path, unknown methods in the fallback partition', async () => {
    const limiter = new PartitionedLimiter({
      limit: 4,
      partitions: { '/test.Echo/Unary': { reserved: 2 }, default: { reserved: 2 } },
    });
    const srv = await startServer([loadShedGrpc({ limiter })]);
    const client = connect(srv.port);
    cleanups.push(srv.close, () => client.close());
    const unary = call(client, 'unary', { hang: true });
    const bidi = call(client, 'bidi', { hang: true });
    await until(() => srv.counts.handled === 2);
    const ledger = limiter.ledger().partitions;
    expect(ledger['/test.Echo/Unary']?.running).toBe(1);
    expect(ledger.default?.running).toBe(1);
    unary.cancel();
    bidi.cancel();
    await Promise.all([unary.ended, bidi.ended]);
  });

  it('reads the criticality from metadata and sheds one service only with a limiter function', async () => {
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const seen: (string | undefined)[] = [];
    const original = limiter.acquireWith.bind(limiter);
    limiter.acquireWith = (request, options) => {
      seen.push(options?.criticality);
      return original(request, options);
    };
    const srv = await startServer([
      loadShedGrpc({ limiter: (method) => (method.endsWith('/Unary') ? limiter : undefined) }),
    ]);
    const client = connect(srv.port);
    cleanups.push(srv.close, () => client.close());
    const md = new Metadata();
    md.set('x-criticality', 'SHEDDABLE');
    expect((await call(client, 'unary', {}, { metadata: md }).ended).code).toBe(status.OK);
    const held = call(client, 'unary', { hang: true });
    await until(() => srv.counts.running === 1);
    // Another service's method is not limited.
    expect((await call(client, 'serverStream', {}).ended).code).toBe(status.OK);
    held.cancel();
    await held.ended;
    expect(seen).toEqual(['sheddable', undefined]);
  });

  it('refuses bad options with the option named', () => {
    expect(() => loadShedGrpc({} as never)).toThrow(/option "limiter" must be/);
    expect(() => loadShedGrpc({ limiter: new Limiter(), partition: () => 'a' })).toThrow(
      /"partition" needs a PartitionedLimiter/,
    );
    expect(() => loadShedGrpc({ limiter: new Limiter(), criticalityKey: 'X-Bad' })).toThrow(
      /criticalityKey/,
    );
    expect(() =>
      loadShedGrpc({
        limiter: new PartitionedLimiter({ limit: 2, partitions: { a: { reserved: 1 } } }),
      }),
    ).toThrow(/fallbackPartition/);
  });
});
