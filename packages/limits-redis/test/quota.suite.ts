/**
 * The RedisQuotaStore behaviours of seed 002, written once and run against a standalone Redis with
 * ioredis 5 and 6 (quota.redis.test.ts) and against a 3-master Redis Cluster (quota.cluster.test.ts).
 * Seed 002's numbers scaled down: account 3 (429) before global 10 (503) per window.
 */
import { Quota, type QuotaAlertEvent, type QuotaFailureEvent } from 'limits-core';
import { afterEach, expect, it } from 'vitest';
import { RedisQuotaStore, type RedisScriptClient } from '../src/index.js';

/** What the suite needs of a client: the store's calls plus a few commands to look at the keys. */
export interface SuiteClient extends RedisScriptClient {
  hget(key: string, field: string): Promise<string | null>;
  exists(...keys: string[]): Promise<number>;
  pttl(key: string): Promise<number>;
  disconnect(): void;
  once(event: 'ready', fn: () => void): unknown;
}

export interface SuiteTarget {
  /** A new connected client. */
  client(): Promise<SuiteClient>;
  /** Runs SCRIPT FLUSH on every server. */
  flushScripts(): Promise<void>;
}

interface Ctx {
  user: string;
}

/** A window no test crosses (about 31 years), so counts never roll over mid-test. */
const LONG_WINDOW_MS = 1e12;

/** Waits until an ioredis client is ready. */
export async function ready<C extends SuiteClient>(client: C): Promise<C> {
  if (client.status !== 'ready')
    await new Promise<void>((resolve) => client.once('ready', resolve));
  return client;
}

export function quotaSuite(target: () => SuiteTarget): void {
  const clients: SuiteClient[] = [];
  let names = 0;
  const client = async () => {
    const c = await target().client();
    clients.push(c);
    return c;
  };
  afterEach(() => {
    for (const c of clients.splice(0)) c.disconnect();
  });

  /** A store and a seed-002 quota (scaled down) under a name no other test uses. */
  async function seed(
    windowMs = LONG_WINDOW_MS,
    c?: SuiteClient,
    name = `seed-${process.pid}-${names++}-${Date.now()}`,
  ) {
    const redis = c ?? (await client());
    const store = new RedisQuotaStore(redis, { onFailure: 'closed', timeoutMs: 1_000 });
    const quota = new Quota<Ctx>({
      name,
      windowMs,
      store,
      axes: [
        { name: 'account', key: (x) => x.user, limit: 3, status: 429 },
        { name: 'global', key: () => 'all', limit: 10, status: 503 },
      ],
    });
    const failures: QuotaFailureEvent[] = [];
    quota.on('failure', (e) => failures.push(e));
    const count = async (axis: string, key: string) =>
      Number((await redis.hget(store.key(name, axis, key), 'n')) ?? 0);
    return { quota, store, redis, name, count, failures };
  }

  it('enforces account 3 and global 10 per window, 429 before 503', async () => {
    const { quota, count, failures } = await seed();
    for (const user of ['a', 'b', 'c']) {
      for (let i = 0; i < 3; i++) expect(await quota.consume({ user })).toEqual({ ok: true });
    }
    expect(await quota.consume({ user: 'd' })).toEqual({ ok: true }); // global 10/10
    const a = await quota.consume({ user: 'a' });
    expect(a).toMatchObject({ ok: false, axis: 'account', status: 429 });
    expect(await quota.consume({ user: 'd' })).toMatchObject({
      ok: false,
      axis: 'global',
      status: 503,
    });
    expect(await quota.consume({ user: 'e' }, 2)).toMatchObject({
      ok: false,
      axis: 'global',
      status: 503,
    });
    expect(await count('global', 'all')).toBe(10);
    expect(await count('account', 'a')).toBe(3);
    expect(await count('account', 'd')).toBe(1);
    expect(failures).toEqual([]);
    if (!a.ok) expect(a.retryAfterMs).toBeGreaterThan(0);
  });

  it('leaves the account counter untouched when the global axis refuses', async () => {
    const { quota, store, redis, name, count } = await seed();
    for (const user of ['a', 'b', 'c']) await quota.consume({ user }, 3);
    await quota.consume({ user: 'x' }); // x 1/3, global 10/10
    for (let i = 0; i < 5; i++)
      expect(await quota.consume({ user: 'x' })).toMatchObject({ ok: false, axis: 'global' });
    expect(await quota.consume({ user: 'y' }, 3)).toMatchObject({ ok: false, axis: 'global' });
    expect(await count('account', 'x')).toBe(1);
    expect(await redis.exists(store.key(name, 'account', 'y'))).toBe(0);
  });

  it('fires one alert exactly at the 66 % crossing across two instances consuming at once', async () => {
    const first = await seed();
    const second = await seed(LONG_WINDOW_MS, await client(), first.name);
    const alerts: QuotaAlertEvent[] = [];
    for (const q of [first.quota, second.quota])
      q.on('alert', (e) => {
        if (e.axis === 'global') alerts.push(e);
      });
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        (i % 2 === 0 ? first : second).quota.consume({ user: `u${i % 12}` }),
      ),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(10);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      axis: 'global',
      key: 'all',
      count: 7,
      limit: 10,
      alertAt: 0.66,
    });
  });

  it('restarts the counters at the next window (a 1 s window, waited for)', async () => {
    const { quota, count, store, redis, name } = await seed(1_000);
    // Start early in a window, so the charges below land in one.
    const probe = await store.consume({
      quota: name,
      windowMs: 1_000,
      amount: 1,
      axes: [{ name: 'probe', key: 'p', limit: 1e9 }],
    });
    if (probe.resetInMs < 600)
      await new Promise((resolve) => setTimeout(resolve, probe.resetInMs + 5));
    expect(await quota.consume({ user: 'a' }, 3)).toEqual({ ok: true });
    const r = await quota.consume({ user: 'a' });
    expect(r).toMatchObject({ ok: false, axis: 'account', status: 429 });
    if (r.ok) return;
    expect(r.retryAfterMs).toBeLessThanOrEqual(1_000);
    const ttl = await redis.pttl(store.key(name, 'account', 'a'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1_000);
    await new Promise((resolve) => setTimeout(resolve, r.retryAfterMs + 20));
    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    expect(await count('account', 'a')).toBe(1);
  });

  it('keeps working after SCRIPT FLUSH (EVALSHA falls back to EVAL on NOSCRIPT)', async () => {
    const { quota, count, failures } = await seed();
    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    await target().flushScripts();
    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    await target().flushScripts();
    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    expect(await quota.consume({ user: 'a' })).toMatchObject({ ok: false, axis: 'account' });
    expect(await count('account', 'a')).toBe(3);
    expect(failures).toEqual([]);
  });

  it('keeps long tenant ids (16 KB, differing only at the end) apart under keys of bounded length', async () => {
    const redis = await client();
    const name = `long-${process.pid}-${names++}-${Date.now()}`;
    const store = new RedisQuotaStore(redis, { onFailure: 'closed' });
    const quota = new Quota<string>({
      name,
      windowMs: LONG_WINDOW_MS,
      store,
      axes: [{ name: 'account', key: (id) => id, limit: 1 }],
    });
    const ids = [`${'x'.repeat(16_383)}a`, `${'x'.repeat(16_383)}b`];
    for (const id of ids) expect(await quota.consume(id)).toEqual({ ok: true });
    for (const id of ids)
      expect(await quota.consume(id)).toMatchObject({ ok: false, axis: 'account' });
    for (const id of ids) {
      const key = store.key(name, 'account', id);
      expect(key.length).toBeLessThan(200);
      expect(await redis.hget(key, 'n')).toBe('1');
    }
  });

  it('encodes tenant ids so that none collides with or reaches another key', async () => {
    const redis = await client();
    const name = `enc:{q}*\n${Date.now()}`;
    const store = new RedisQuotaStore(redis, { onFailure: 'closed' });
    const quota = new Quota<string>({
      name,
      windowMs: LONG_WINDOW_MS,
      store,
      axes: [
        { name: 'account', key: (id) => id, limit: 1 },
        { name: 'global', key: () => 'all', limit: 1_000, status: 503 },
      ],
    });
    const ids = [
      'a',
      'a:b',
      'a%3Ab',
      ':',
      '',
      '{a}',
      '}{',
      '{',
      '*',
      '?',
      'a\nb',
      'a\r\nb',
      ' ',
      '%',
      '한국어',
      '👍',
      'all',
      'account:all',
      `x}:global:all`,
    ];
    for (const id of ids) expect(await quota.consume(id)).toEqual({ ok: true });
    for (const id of ids)
      expect(await quota.consume(id)).toMatchObject({ ok: false, axis: 'account' });
    const keys = new Set(ids.map((id) => store.key(name, 'account', id)));
    expect(keys.size).toBe(ids.length);
    const tag = store.key(name, 'x', 'x').split('{')[1]?.split('}')[0];
    for (const key of keys) {
      expect(key.split('{')[1]?.split('}')[0]).toBe(tag); // one hash tag: one slot
      expect(key).toMatch(/^limits:quota:\{[^{}:]+\}:account:[A-Za-z0-9_.~%-]*$/);
      expect(await redis.hget(key, 'n')).toBe('1');
    }
    expect(Number(await redis.hget(store.key(name, 'global', 'all'), 'n'))).toBe(ids.length);
    await expect(quota.consume('\uD800')).rejects.toThrow(/well-formed/);
  });
}
