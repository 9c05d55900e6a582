import { describe, expect, it } from 'vitest';
import { RedisLeasePool } from '../src/index.js';
import { poolKeys } from '../src/leases/keys.js';

/** A client that must never be called: option checks happen before any Redis call. */
const redis = {
  evalsha: () => Promise.reject(new Error('not called')),
  eval: () => Promise.reject(new Error('not called')),
  duplicate: () => {
    throw new Error('not called');
  },
};
const base = { name: 'db', limit: 4, onFailure: 'closed' } as const;
const make = (extra: Record<string, unknown>, client: unknown = redis) =>
  new RedisLeasePool(client as never, { ...base, ...extra } as never);

describe('RedisLeasePool options', () => {
  it('refuses to construct without an explicit failure policy, saying what to choose', () => {
    expect(() => make({ onFailure: undefined })).toThrow(
      /option "onFailure" is required: "open" .* or "closed"/,
    );
    expect(() => new RedisLeasePool(redis as never, undefined as never)).toThrow(
      /needs options \{ name, limit, onFailure \}/,
    );
  });

  it('refuses a failure policy that is not open or closed', () => {
    expect(() => make({ onFailure: 'failOpen' })).toThrow(RangeError);
    expect(() => make({ onFailure: true })).toThrow(TypeError);
  });

  it('refuses an unknown option with the nearest valid name', () => {
    expect(() => make({ leaseTTLMs: 100 })).toThrow(/did you mean "leaseTtlMs"/);
  });

  it('refuses a missing or bad redis client, name and limit', () => {
    expect(() => make({}, null)).toThrow(/RedisLeasePool needs an ioredis client/);
    expect(() => make({}, {})).toThrow(TypeError);
    expect(() => make({ redis })).toThrow(/unknown option "redis"/);
    expect(() => make({ name: undefined })).toThrow(/option "name" must be a non-empty string/);
    expect(() => make({ name: '' })).toThrow(RangeError);
    expect(() => make({ name: 'a\ud800' })).toThrow(/option "name" must be a well-formed string/);
    expect(() => make({ limit: undefined })).toThrow(/option "limit" is required/);
    expect(() => make({ limit: 0 })).toThrow(RangeError);
    expect(() => make({ limit: 2.5 })).toThrow(RangeError);
    expect(() => make({ limit: '4' })).toThrow(TypeError);
  });

  it('checks the lease, timing and prefix options', () => {
    expect(() => make({ leaseTtlMs: 5 })).toThrow(/option "leaseTtlMs" must be an integer in \[10/);
    expect(() => make({ leaseTtlMs: 1000, renewEveryMs: 1000 })).toThrow(
      /option "renewEveryMs" must be < "leaseTtlMs" \(1000\), got 1000/,
    );
    expect(() => make({ renewEveryMs: 0 })).toThrow(RangeError);
    expect(() => make({ timeoutMs: 0 })).toThrow(RangeError);
    expect(() => make({ timeoutMs: Infinity })).toThrow(RangeError);
    expect(() => make({ maxWaitMs: -1 })).toThrow(RangeError);
    expect(() => make({ pollMs: 0 })).toThrow(RangeError);
    expect(() => make({ prefix: 'a{b}' })).toThrow(
      /option "prefix" must be a non-empty string without/,
    );
    expect(() => make({ prefix: '' })).toThrow(RangeError);
    expect(() => make({ clock: { now: () => 0 } })).toThrow(/option "clock.setTimeout"/);
    expect(make({ maxWaitMs: Infinity }).maxWaitMs).toBe(Infinity);
  });

  it('rejects bad acquire options before any Redis call', async () => {
    const pool = make({});
    await expect(pool.acquire({ cots: 1 } as never)).rejects.toThrow(/did you mean "cost"/);
    await expect(pool.acquire({ cost: 0 })).rejects.toThrow(RangeError);
    await expect(pool.acquire({ cost: 1.5 })).rejects.toThrow(RangeError);
    await expect(pool.acquire({ maxWaitMs: -1 })).rejects.toThrow(RangeError);
    await expect(pool.acquire({ timeoutMs: 0 })).rejects.toThrow(RangeError);
    await expect(pool.acquire({ signal: {} as never })).rejects.toThrow(TypeError);
    expect(pool.waiting).toBe(0);
  });

  it('refuses a cost above the limit, an aborted signal and a closed pool without a Redis call', async () => {
    const pool = make({});
    await expect(pool.acquire({ cost: 5 })).rejects.toMatchObject({ reason: 'too_large' });
    await expect(pool.acquire({ signal: AbortSignal.abort() })).rejects.toMatchObject({
      reason: 'aborted',
    });
    await pool.close();
    await expect(pool.acquire()).rejects.toMatchObject({ reason: 'closed' });
  });

  it('refuses to wrap something that is not a limiter', () => {
    expect(() => make({}).wrap({} as never)).toThrow(/wrap\(limiter\) needs a Limiter/);
  });
});

describe('pool keys', () => {
  it('share one hash tag, so every script touches one Cluster slot', () => {
    const k = poolKeys('limits:pool', 'orders-db');
    expect(k.leases).toBe('limits:pool:{orders-db}:leases');
    expect(k.used).toBe('limits:pool:{orders-db}:used');
  });

  it('encode a name so it cannot close the hash tag or reach another key', () => {
    const k = poolKeys('p', 'a}:{b%');
    expect(k.leases).toBe('p:{a%7D%3A%7Bb%25}:leases');
    expect(poolKeys('p', "x y!*'()é").used).toBe('p:{x%20y%21%2A%27%28%29%C3%A9}:used');
    expect(poolKeys('p', 'a}').leases).not.toBe(poolKeys('p', 'a%7D').leases);
    expect(() => poolKeys('p', '\ud800')).toThrow(TypeError);
  });
});
