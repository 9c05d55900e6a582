// A consumer process for quota.processes.test.ts: waits for "go", then fires its calls at once
// through its own ioredis client and RedisQuotaStore, and sends back every verdict.
//   fork(quota.consumer.mjs, [storeModuleUrl, port, quotaName, users, callsPerUser])
import { Redis } from 'ioredis';

const [storeUrl, port, quota, users, calls] = process.argv.slice(2);
const { RedisQuotaStore } = await import(storeUrl);
const client = new Redis(Number(port), '127.0.0.1');
await new Promise((resolve) => client.once('ready', resolve));
const store = new RedisQuotaStore(client, { onFailure: 'closed', timeoutMs: 5_000 });
process.send({ ready: true });
await new Promise((resolve) => process.once('message', resolve));
const jobs = [];
for (let i = 0; i < Number(calls); i++)
  for (const user of users.split(','))
    jobs.push(
      store
        .consume({
          quota,
          windowMs: 1e12,
          amount: 1,
          axes: [
            { name: 'account', key: user, limit: 3 },
            { name: 'global', key: 'all', limit: 10 },
          ],
        })
        .then((v) => ({
          user,
          refused: v.refused,
          counts: v.counts,
          failed: v.failure !== undefined,
        })),
    );
const verdicts = await Promise.all(jobs);
process.send({ verdicts }, () => {
  client.disconnect();
  process.exit(0);
});
