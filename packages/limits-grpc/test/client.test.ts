import { Metadata, status } from '@grpc/grpc-js';
import { guard } from 'limits-breaker';
import { Limiter, type Outcome } from 'limits-core';
import { afterEach, describe, expect, it } from 'vitest';
import { grpcGuard, limitGrpcClient } from '../src/index.js';
import {
  call,
  connect,
  type EchoClientInstance,
  KINDS,
  startServer,
  until,
} from './support/echo.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A server, a limiter, a client through the interceptor, and the outcomes the limiter was told. */
async function setup(limit = 2, maxQueued = 10) {
  const srv = await startServer();
  const limiter = new Limiter({ limit, maxQueued });
  const outcomes: Outcome[] = [];
  limiter.on('release', (e) => outcomes.push(e.outcome));
  const client = connect(srv.port, [limitGrpcClient({ limiter })]);
  cleanups.push(srv.close, () => client.close());
  return { srv, limiter, client, outcomes };
}

describe('limitGrpcClient', () => {
  for (const kind of KINDS) {
    it(`holds the permit of a ${kind} call until its status arrives, then releases it as success`, async () => {
      const { srv, limiter, client, outcomes } = await setup();
      const c = call(client, kind, { delayMs: 30 });
      await until(() => srv.counts.running === 1);
      expect(limiter.inflight).toBe(1);
      const ended = await c.ended;
      expect(ended.code).toBe(status.OK);
      expect(ended.messages).toBeGreaterThan(0);
      expect(limiter.inflight).toBe(0);
      expect(outcomes).toEqual(['success']);
    });

    it(`releases a ${kind} call that ends with a server error as failure, UNAVAILABLE as dropped`, async () => {
      const { client, limiter, outcomes } = await setup();
      expect((await call(client, kind, { code: status.INTERNAL }).ended).code).toBe(
        status.INTERNAL,
      );
      expect((await call(client, kind, { code: status.UNAVAILABLE }).ended).code).toBe(
        status.UNAVAILABLE,
      );
      expect((await call(client, kind, { code: status.NOT_FOUND }).ended).code).toBe(
        status.NOT_FOUND,
      );
      expect(outcomes).toEqual(['failure', 'dropped', 'success']);
      expect(limiter.inflight).toBe(0);
    });

    it(`releases a ${kind} call the client cancels while it runs as ignore`, async () => {
      const { srv, client, limiter, outcomes } = await setup();
      const c = call(client, kind, { hang: true });
      await until(() => srv.counts.handled === 1);
      c.cancel();
      expect((await c.ended).code).toBe(status.CANCELLED);
      expect(outcomes).toEqual(['ignore']);
      expect(limiter.inflight).toBe(0);
      await until(() => srv.counts.running === 0);
    });

    it(`releases a ${kind} call whose deadline passes while it runs as dropped`, async () => {
      const { srv, client, limiter, outcomes } = await setup();
      const c = call(client, kind, { hang: true }, { deadline: Date.now() + 300 });
      await until(() => srv.counts.handled === 1);
      const ended = await c.ended;
      expect(ended.code).toBe(status.DEADLINE_EXCEEDED);
      expect(outcomes).toEqual(['dropped']);
      expect(limiter.inflight).toBe(0);
      await until(() => srv.counts.running === 0);
    });

    it(`releases a ${kind} call the server cancels (status CANCELLED) as failure`, async () => {
      const { client, limiter, outcomes } = await setup();
      expect((await call(client, kind, { code: status.CANCELLED }).ended).code).toBe(
        status.CANCELLED,
      );
      expect(outcomes).toEqual(['failure']);
      expect(limiter.inflight).toBe(0);
    });

    it(`answers a refused ${kind} call with RESOURCE_EXHAUSTED without reaching the server`, async () => {
      const { srv, client, limiter } = await setup(1, 0);
      const first = call(client, kind, { hang: true });
      await until(() => srv.counts.handled === 1);
      const refused = await call(client, kind, {}).ended;
      expect(refused.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(refused.details).toBe('limits: at_limit');
      expect(srv.counts.handled).toBe(1);
      first.cancel();
      await first.ended;
      expect(limiter.inflight).toBe(0);
    });

    it(`takes a ${kind} call cancelled while queued out of the queue; it never starts`, async () => {
      const { srv, client, limiter, outcomes } = await setup(1, 5);
      const first = call(client, kind, { hang: true });
      await until(() => srv.counts.handled === 1);
      const queued = call(client, kind, {});
      await until(() => limiter.queued === 1);
      queued.cancel();
      const ended = await queued.ended;
      expect(ended.code).toBe(status.CANCELLED);
      expect(limiter.queued).toBe(0);
      expect(limiter.inflight).toBe(1);
      first.cancel();
      await first.ended;
      expect(limiter.inflight).toBe(0);
      expect(srv.counts.handled).toBe(1);
      expect(outcomes).toEqual(['ignore']);
    });
  }

  it('answers a call whose deadline passes while queued with DEADLINE_EXCEEDED (expired), never sent', async () => {
    const { srv, client, limiter } = await setup(1, 5);
    const first = call(client, 'unary', { hang: true });
    await until(() => srv.counts.handled === 1);
    const late = await call(client, 'unary', {}, { deadline: Date.now() + 50 }).ended;
    expect(late.code).toBe(status.DEADLINE_EXCEEDED);
    expect(late.details).toMatch(/^limits: (expired|deadline)$/);
    expect(limiter.queued).toBe(0);
    first.cancel();
    await first.ended;
    expect(srv.counts.handled).toBe(1);
  });

  it('answers a closed limiter with UNAVAILABLE and the retry estimate as grpc-retry-pushback-ms', async () => {
    const { srv, client, limiter } = await setup(1, 0);
    await limiter.close();
    const closed = await call(client, 'unary', {}).ended;
    expect(closed.code).toBe(status.UNAVAILABLE);
    expect(closed.details).toBe('limits: closed');
    expect(srv.counts.handled).toBe(0);
    const busy = new Limiter({ limit: 1, maxQueued: 0, initialServiceMs: 250 });
    const held = busy.tryAcquire();
    const client2 = connect(srv.port, [limitGrpcClient({ limiter: busy })]);
    cleanups.push(() => client2.close());
    const refused = await call(client2, 'unary', {}).ended;
    expect(refused.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(Number(refused.metadata.get('grpc-retry-pushback-ms')[0])).toBeGreaterThan(0);
    held?.release('ignore');
  });

  it('takes classify and criticality options, and a limiter per method', async () => {
    const srv = await startServer();
    const limiter = new Limiter({ limit: 4 });
    const outcomes: Outcome[] = [];
    limiter.on('release', (e) => outcomes.push(e.outcome));
    const methods: string[] = [];
    const client = connect(srv.port, [
      limitGrpcClient({
        limiter: (method) => {
          methods.push(method);
          return method.endsWith('/Unary') ? limiter : undefined;
        },
        classify: (s) => (s.code === status.NOT_FOUND ? 'failure' : undefined),
        criticality: () => 'sheddable',
      }),
    ]);
    cleanups.push(srv.close, () => client.close());
    await call(client, 'unary', { code: status.NOT_FOUND }).ended;
    await call(client, 'unary', {}).ended;
    expect((await call(client, 'bidi', {}).ended).code).toBe(status.OK);
    expect(outcomes).toEqual(['failure', 'success']);
    expect(methods).toEqual(['/test.Echo/Unary', '/test.Echo/Unary', '/test.Echo/Bidi']);
  });

  it('refuses bad options with the option named', () => {
    expect(() => limitGrpcClient({} as never)).toThrow(
      /exactly one of options "limiter" and "guard"/,
    );
    expect(() => limitGrpcClient({ limiter: 3 } as never)).toThrow(/option "limiter" must be/);
    expect(() => limitGrpcClient({ limiter: new Limiter(), criticality: 'high' as never })).toThrow(
      /criticality/,
    );
    expect(() =>
      limitGrpcClient({ limiter: new Limiter(), clasify: () => 'success' } as never),
    ).toThrow(/classify/);
    expect(() => limitGrpcClient({ guard: {} as never })).toThrow(/grpcGuard/);
  });
});

describe('limitGrpcClient with a guard', () => {
  it('lets the guard admit and count calls; an open circuit answers UNAVAILABLE without a call', async () => {
    const srv = await startServer();
    const breaker = grpcGuard(guard, {
      limiter: { limit: 4 },
      volumeThreshold: 2,
      errorThresholdPercentage: 50,
      resetTimeout: 60_000,
    });
    const client: EchoClientInstance = connect(srv.port, [limitGrpcClient({ guard: breaker })]);
    cleanups.push(
      srv.close,
      () => client.close(),
      () => breaker.shutdown(),
    );
    expect((await call(client, 'unary', {}).ended).code).toBe(status.OK);
    for (let i = 0; i < 3; i++)
      await call(client, 'serverStream', { code: status.UNAVAILABLE }).ended;
    expect(breaker.state).toBe('OPEN');
    const handled = srv.counts.handled;
    const open = await call(client, 'bidi', {}).ended;
    expect(open.code).toBe(status.UNAVAILABLE);
    expect(open.details).toBe('limits: circuit_open');
    expect(srv.counts.handled).toBe(handled);
  });

  it('answers a call cancelled while queued in the guard at once; its turn never starts it', async () => {
    const srv = await startServer();
    const breaker = grpcGuard(guard, { limiter: { limit: 1, maxQueued: 5 } });
    const client = connect(srv.port, [limitGrpcClient({ guard: breaker })]);
    cleanups.push(
      srv.close,
      () => client.close(),
      () => breaker.shutdown(),
    );
    const first = call(client, 'bidi', { hang: true });
    await until(() => srv.counts.handled === 1);
    const queued = call(client, 'unary', {});
    await until(() => breaker.stats().limiter.queued === 1);
    queued.cancel();
    const ended = await queued.ended;
    expect(ended.code).toBe(status.CANCELLED);
    first.cancel();
    await first.ended;
    // The guard's queue hands the permit to the cancelled call, which gives it back unstarted.
    expect((await call(client, 'unary', {}).ended).code).toBe(status.OK);
    expect(srv.counts.handled).toBe(2);
  });

  it('refuses guard options it sets itself', () => {
    expect(() => grpcGuard(guard, { fallback: () => 1 } as never)).toThrow(/fallback/);
    expect(() => grpcGuard(guard, { timeoutMs: 5 } as never)).toThrow(/attemptTimeoutMs/);
  });
});

describe('metadata', () => {
  it('passes the caller metadata on unchanged', async () => {
    const { client } = await setup();
    const md = new Metadata();
    md.set('x-criticality', 'sheddable');
    expect((await call(client, 'unary', {}, { metadata: md }).ended).code).toBe(status.OK);
  });
});
