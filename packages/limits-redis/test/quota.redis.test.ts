import { createHash } from 'node:crypto';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { Redis as Redis5 } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { Quota, type QuotaFailureEvent } from 'limits-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisQuotaStore } from '../src/index.js';
import { quotaSuite, ready, type SuiteClient } from './quota.suite.js';
import { startRedis, type TestRedis } from './support/redis.js';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

// One constructor type for both: the suite uses only what both versions have.
const versions: [string, typeof Redis5][] = [
  ['ioredis 5', Redis5],
  ['ioredis 6', Redis6 as unknown as typeof Redis5],
];

for (const [version, RedisClient] of versions) {
  const connect = () =>
    ready(
      new RedisClient(redis.port, '127.0.0.1', {
        maxRetriesPerRequest: 1,
      }) as unknown as SuiteClient,
    );

  describe(`RedisQuotaStore on a real Redis (${version})`, () => {
    quotaSuite(() => ({
      client: connect,
      async flushScripts() {
        const c = new RedisClient(redis.port, '127.0.0.1');
        await c.script('FLUSH');
        c.disconnect();
      },
    }));
  });

  describe(`RedisQuotaStore on a client still connecting (${version})`, () => {
    const quotaOn = (client: SuiteClient, onFailure: 'open' | 'closed', timeoutMs = 2_000) => {
      const store = new RedisQuotaStore(client, { onFailure, timeoutMs });
      const name = `connecting-${onFailure}-${version}-${Date.now()}-${Math.random()}`;
      const quota = new Quota<{ user: string }>({
        name,
        windowMs: 1e12,
        store,
        axes: [{ name: 'account', key: (x) => x.user, limit: 3, status: 429 }],
      });
      const failures: QuotaFailureEvent[] = [];
      quota.on('failure', (e) => failures.push(e));
      return { quota, store, name, failures };
    };

    it('connects a lazyConnect client (status "wait") and enforces the quota from its first call', async () => {
      const client = new RedisClient(redis.port, '127.0.0.1', {
        lazyConnect: true,
      }) as unknown as SuiteClient;
      try {
        expect(client.status).toBe('wait');
        const { quota, store, name, failures } = quotaOn(client, 'open');
        expect(await quota.consume({ user: 'a' }, 3)).toEqual({ ok: true });
        expect(await quota.consume({ user: 'a' })).toMatchObject({
          ok: false,
          axis: 'account',
          status: 429,
        });
        expect(failures).toEqual([]);
        expect(await client.hget(store.key(name, 'account', 'a'), 'n')).toBe('3');
      } finally {
        client.disconnect();
      }
    });

    it('waits for the initial connection of a fresh client instead of refusing its first calls', async () => {
      const client = new RedisClient(redis.port, '127.0.0.1') as unknown as SuiteClient;
      try {
        expect(client.status).toBe('connecting');
        const { quota, failures } = quotaOn(client, 'closed');
        const first = await Promise.all(['a', 'b', 'c'].map((user) => quota.consume({ user })));
        expect(first).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
        expect(failures).toEqual([]);
      } finally {
        client.disconnect();
      }
    });

    it('answers by the failure policy after timeoutMs when the initial connection never becomes ready', async () => {
      // Accepts the TCP connection and never answers: ioredis stays short of "ready".
      const sockets = new Set<Socket>();
      const silent = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as AddressInfo;
      const client = new RedisClient(port, '127.0.0.1') as unknown as SuiteClient;
      try {
        const { quota, failures } = quotaOn(client, 'closed', 100);
        expect(await quota.consume({ user: 'a' })).toEqual({
          ok: false,
          axis: null,
          status: 503,
          retryAfterMs: 1_000,
        });
        expect(client.status).not.toBe('ready');
        expect(failures.map((f) => f.error.message)).toEqual([
          'limits: Redis did not answer the quota script within 100 ms',
        ]);
      } finally {
        client.disconnect();
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    });
  });

  describe(`RedisQuotaStore when Redis is down or slow (${version})`, () => {
    async function setup(onFailure: 'open' | 'closed', timeoutMs = 150) {
      const client = new RedisClient(redis.port, '127.0.0.1', {
        maxRetriesPerRequest: 1,
        retryStrategy: () => 50,
      });
      client.on('error', () => {}); // reconnect attempts while Redis is stopped
      await ready(client as unknown as SuiteClient);
      const quota = new Quota<{ user: string }>({
        name: `down-${onFailure}-${version}-${Date.now()}`,
        windowMs: 1e12,
        store: new RedisQuotaStore(client, { onFailure, timeoutMs }),
        axes: [
          { name: 'account', key: (x) => x.user, limit: 3, status: 429 },
          { name: 'global', key: () => 'all', limit: 10, status: 503 },
        ],
      });
      const failures: QuotaFailureEvent[] = [];
      quota.on('failure', (e) => failures.push(e));
      return { client, quota, failures };
    }

    /** Consumes until a call is accepted again (Redis back), within `ms`. */
    async function recovered(quota: Quota<{ user: string }>, ms = 5_000) {
      const end = Date.now() + ms;
      for (;;) {
        const failures = quota.listenerCount('failure');
        const seen: unknown[] = [];
        const listener = (e: unknown) => seen.push(e);
        quota.on('failure', listener);
        const r = await quota.consume({ user: `after-${failures}-${Date.now()}` });
        quota.off('failure', listener);
        if (r.ok && seen.length === 0) return;
        if (Date.now() > end) throw new Error('the store did not recover');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }

    it('with onFailure "closed", rejects within the timeout while Redis is stopped, emits each time, and recovers after a restart with the same client', async () => {
      const { client, quota, failures } = await setup('closed');
      try {
        expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
        await redis.stop();
        for (let i = 0; i < 5; i++) {
          const t0 = performance.now();
          const r = await quota.consume({ user: 'a' });
          expect(performance.now() - t0).toBeLessThan(150 + 100);
          expect(r).toEqual({ ok: false, axis: null, status: 503, retryAfterMs: 1_000 });
        }
        expect(failures).toHaveLength(5);
        expect(failures.every((f) => f.policy === 'closed' && f.error instanceof Error)).toBe(true);
        await redis.restart();
        const before = failures.length;
        const end = Date.now() + 5_000;
        let r = await quota.consume({ user: 'b' });
        while (!r.ok && Date.now() < end) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          r = await quota.consume({ user: 'b' });
        }
        expect(r).toEqual({ ok: true });
        const failuresWhileReconnecting = failures.length - before;
        // Restarted Redis is empty and has no script cached: the store reloads it (NOSCRIPT → EVAL).
        expect(await quota.consume({ user: 'b' })).toEqual({ ok: true });
        expect(await quota.consume({ user: 'b' })).toEqual({ ok: true });
        expect(await quota.consume({ user: 'b' })).toMatchObject({ ok: false, axis: 'account' });
        expect(failures.length - before).toBe(failuresWhileReconnecting);
      } finally {
        if (!redis.running) await redis.restart();
        client.disconnect();
      }
    });

    it('with onFailure "open", lets calls through uncharged while Redis is stopped, emits each time, and recovers after a restart', async () => {
      const { client, quota, failures } = await setup('open');
      try {
        await redis.stop();
        for (let i = 0; i < 12; i++) {
          const t0 = performance.now();
          expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
          expect(performance.now() - t0).toBeLessThan(150 + 100);
        }
        expect(failures).toHaveLength(12);
        expect(failures.every((f) => f.policy === 'open')).toBe(true);
        await redis.restart();
        await recovered(quota);
        // Counting again: three charges for one user, then its account axis refuses.
        expect(await quota.consume({ user: 'c' }, 3)).toEqual({ ok: true });
        expect(await quota.consume({ user: 'c' })).toMatchObject({
          ok: false,
          axis: 'account',
          status: 429,
        });
      } finally {
        if (!redis.running) await redis.restart();
        client.disconnect();
      }
    });

    it('answers by the failure policy within timeoutMs when Redis is slow (CLIENT PAUSE)', async () => {
      const { client, quota, failures } = await setup('closed', 100);
      const admin = new RedisClient(redis.port, '127.0.0.1');
      try {
        await ready(admin as unknown as SuiteClient);
        await admin.call('CLIENT', 'PAUSE', '400', 'ALL');
        const t0 = performance.now();
        const r = await quota.consume({ user: 'a' });
        const took = performance.now() - t0;
        expect(r).toMatchObject({ ok: false, axis: null, status: 503 });
        expect(took).toBeGreaterThanOrEqual(95);
        expect(took).toBeLessThan(300);
        expect(failures[0]?.error.message).toMatch(/did not answer the quota script within 100 ms/);
      } finally {
        admin.disconnect();
        client.disconnect();
      }
    });
  });
}

describe('RedisQuotaStore options', () => {
  const client = { evalsha: async () => [0, 1, 1], eval: async () => [0, 1, 1] };

  it('refuses to be built without an explicit failure policy', () => {
    expect(() => new RedisQuotaStore(client, {} as never)).toThrow(
      /option "onFailure" is required: "open" .* or "closed"/,
    );
    expect(() => new RedisQuotaStore(client, undefined as never)).toThrow(TypeError);
  });

  it('refuses bad options and a client without evalsha', () => {
    expect(() => new RedisQuotaStore(client, { onFailure: 'opn' as never })).toThrow(RangeError);
    expect(() => new RedisQuotaStore(client, { onFailure: 'open', timeoutMs: 0 })).toThrow(
      /option "timeoutMs" must be a number in \[1/,
    );
    expect(() => new RedisQuotaStore(client, { onFailure: 'open', prefix: 'a{b' })).toThrow(
      /option "prefix" must be a non-empty string without "\{" or "\}", got "a\{b"/,
    );
    expect(() => new RedisQuotaStore(client, { onFailure: 'open', prefix: '' })).toThrow(
      RangeError,
    );
    expect(() => new RedisQuotaStore(client, { onFailure: 'open', timeout: 5 } as never)).toThrow(
      /did you mean "timeoutMs"/,
    );
    expect(
      () => new RedisQuotaStore(client, { onFailure: 'open', failureRetryAfterMs: -1 }),
    ).toThrow(RangeError);
    expect(() => new RedisQuotaStore({} as never, { onFailure: 'open' })).toThrow(
      /needs an ioredis client \(with evalsha and eval\), got an object/,
    );
  });

  it('stores a key whose encoded form is longer than 256 characters as "#" and its SHA-256, so every key is bounded', () => {
    const store = new RedisQuotaStore(client, { onFailure: 'closed' });
    const base = 'limits:quota:{q}:account:';
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    expect(store.key('q', 'account', 'x'.repeat(256))).toBe(`${base}${'x'.repeat(256)}`);
    const long = `${'x'.repeat(16_383)}a`;
    expect(store.key('q', 'account', long)).toBe(`${base}#${sha(long)}`);
    expect(store.key('q', 'account', long)).toHaveLength(base.length + 65);
    // The bound is on what Redis stores: "é" encodes to 6 characters (%C3%A9).
    expect(store.key('q', 'account', 'é'.repeat(42))).toBe(`${base}${'%C3%A9'.repeat(42)}`);
    expect(store.key('q', 'account', 'é'.repeat(43))).toBe(`${base}#${sha('%C3%A9'.repeat(43))}`);
    // Long keys that differ only at the end stay apart; no short key spells a digest ("#" → %23).
    expect(store.key('q', 'account', `${'x'.repeat(16_383)}b`)).not.toBe(
      store.key('q', 'account', long),
    );
    expect(store.key('q', 'account', `#${sha(long)}`)).toBe(`${base}%23${sha(long)}`);
    expect(() => store.key('q', 'account', `${'x'.repeat(300)}\uD800`)).toThrow(/well-formed/);
  });

  it("answers by the failure policy for a reply that is not the script's", async () => {
    const store = new RedisQuotaStore(
      { evalsha: async () => 'OK', eval: async () => 'OK' },
      { onFailure: 'closed', failureRetryAfterMs: 250 },
    );
    const verdict = await store.consume({
      quota: 'q',
      windowMs: 1_000,
      amount: 1,
      axes: [{ name: 'a', key: 'k', limit: 1 }],
    });
    expect(verdict).toMatchObject({ refused: -1, resetInMs: 250, failure: { policy: 'closed' } });
    expect(verdict.failure?.error.message).toMatch(/unexpected reply from the quota script: "OK"/);
  });

  it('answers by the failure policy when the client rejects with an error other than NOSCRIPT', async () => {
    const store = new RedisQuotaStore(
      { evalsha: () => Promise.reject(new Error('READONLY')), eval: async () => [0, 1, 1] },
      { onFailure: 'open' },
    );
    const verdict = await store.consume({
      quota: 'q',
      windowMs: 1_000,
      amount: 1,
      axes: [{ name: 'a', key: 'k', limit: 1 }],
    });
    expect(verdict.failure).toMatchObject({ policy: 'open' });
    expect(verdict.failure?.error.message).toBe('READONLY');
  });
});
