import { Cluster } from 'ioredis';
import { Cluster as Cluster6 } from 'ioredis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLeasePool } from '../src/index.js';
import { poolKeys } from '../src/leases/keys.js';
import { waitFor } from './support/leasePool.js';
import { startCluster, type TestCluster } from './support/redis.js';

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
}, 120_000);
afterAll(async () => {
  await cluster?.close();
});

const clients = [
  { version: 'ioredis 5', make: () => new Cluster(cluster.nodes) },
  { version: 'ioredis 6', make: () => new Cluster6(cluster.nodes) as unknown as Cluster },
];

describe.each(clients)('RedisLeasePool on a 3-master Redis Cluster ($version)', ({ make }) => {
  it('keeps every key of a pool in one slot, whatever the name', async () => {
    const client = make();
    try {
      for (const name of ['orders-db', 'a}b{c', 'tenant:42']) {
        const k = poolKeys('limits:pool', name);
        const slots = await Promise.all(
          [k.leases, k.used, k.channel].map((key) => client.cluster('KEYSLOT', key)),
        );
        expect(new Set(slots).size).toBe(1);
      }
    } finally {
      client.disconnect();
    }
  });

  it('grants, refuses, wakes a waiter on another connection by pub/sub, and survives SCRIPT FLUSH', async () => {
    const a = make();
    const b = make();
    const name = `cluster-${Math.random().toString(36).slice(2)}`;
    const holder = new RedisLeasePool(a, {
      name,
      limit: 2,
      onFailure: 'closed',
      timeoutMs: 2_000,
    });
    const waiter = new RedisLeasePool(b, {
      name,
      limit: 2,
      onFailure: 'closed',
      timeoutMs: 2_000,
      pollMs: 60_000,
      maxWaitMs: 10_000,
    });
    try {
      const l1 = await holder.acquire();
      const l2 = await holder.acquire();
      await expect(waiter.acquire({ maxWaitMs: 0 })).rejects.toMatchObject({ reason: 'at_limit' });
      const waiting = waiter.acquire();
      await waitFor('the waiter to subscribe on some node', async () => {
        const counts = await Promise.all(
          a.nodes('master').map(async (node) => {
            const [, subs] = (await node.pubsub(
              'NUMSUB',
              poolKeys('limits:pool', name).channel,
            )) as [string, number];
            return Number(subs);
          }),
        );
        return counts.reduce((x, y) => x + y, 0) === 1;
      });
      const start = Date.now();
      await l1.release();
      const l3 = await waiting;
      expect(Date.now() - start).toBeLessThan(2_000); // the poll would take 60 s
      await Promise.all(
        cluster.nodes.map((n) =>
          a
            .nodes('master')
            .find((m) => m.options.port === n.port)
            ?.script('FLUSH'),
        ),
      );
      await l2.release();
      const l4 = await holder.acquire();
      expect(await holder.status()).toEqual({ used: 2, leases: 2, limit: 2 });
      await l3.release();
      await l4.release();
      expect((await waiter.status()).used).toBe(0);
    } finally {
      await holder.close();
      await waiter.close();
      a.disconnect();
      b.disconnect();
    }
  });
});
