import { Cluster as Cluster5 } from 'ioredis';
import { Cluster as Cluster6 } from 'ioredis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisQuotaStore } from '../src/index.js';
import { quotaSuite, ready, type SuiteClient } from './quota.suite.js';
import { startCluster, type TestCluster } from './support/redis.js';

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await startCluster();
}, 120_000);
afterAll(async () => {
  await cluster?.close();
});

const versions: [string, typeof Cluster5][] = [
  ['ioredis 5', Cluster5],
  ['ioredis 6', Cluster6 as unknown as typeof Cluster5],
];

for (const [version, ClusterClient] of versions) {
  const connect = () => ready(new ClusterClient(cluster.nodes) as unknown as SuiteClient);

  describe(`RedisQuotaStore on a 3-master Redis Cluster (${version} Cluster client)`, () => {
    quotaSuite(() => ({
      client: connect,
      async flushScripts() {
        const c = await ready(new ClusterClient(cluster.nodes) as unknown as SuiteClient);
        const masters = (c as unknown as Cluster5).nodes('master');
        expect(masters).toHaveLength(3);
        await Promise.all(masters.map((node) => node.script('FLUSH')));
        c.disconnect();
      },
    }));

    it('puts every key of one quota in one slot, and different quotas on different masters', async () => {
      const c = (await connect()) as unknown as Cluster5;
      try {
        const store = new RedisQuotaStore(c, { onFailure: 'closed' });
        const slot = async (key: string) => Number(await c.call('CLUSTER', 'KEYSLOT', key));
        const slots = new Set<number>();
        for (const id of ['a', 'b:{c}', '{x}', '*', 'ü'])
          slots.add(await slot(store.key('q', 'account', id)));
        slots.add(await slot(store.key('q', 'global', 'all')));
        expect(slots.size).toBe(1);
        const spread = new Set<number>();
        for (let i = 0; i < 30; i++)
          spread.add(await slot(store.key(`quota-${i}`, 'global', 'all')));
        expect(spread.size).toBeGreaterThan(1);
      } finally {
        c.disconnect();
      }
    });
  });
}
