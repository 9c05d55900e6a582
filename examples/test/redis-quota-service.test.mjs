// The redis-quota example's service (loadShed + Quota + RedisQuotaStore) against a real redis-server on a
// free loopback port: concurrent parse requests from many accounts never exceed either cap, the quota's
// refusals never reach the limiter, and a refused call charges no counter (both axes or none).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { startRedis } from '../redis-quota/redisServer.mjs';
import { createService } from '../redis-quota/service.mjs';

const WINDOW_MS = 600_000;
let redisServer;
let redis;

before(async () => {
  redisServer = await startRedis();
  redis = new Redis(redisServer.port, redisServer.host, { maxRetriesPerRequest: 1 });
  await new Promise((resolve) => redis.once('ready', resolve));
});

after(async () => {
  redis.disconnect();
  await redisServer.stop();
});

/** Starts the service (its own quota name in Redis), in a window with at least 5 s left. */
async function serve(config, name) {
  const [s, us] = await redis.time();
  const left = WINDOW_MS - ((Number(s) * 1000 + Math.floor(Number(us) / 1000)) % WINDOW_MS);
  if (left < 5_000) await new Promise((r) => setTimeout(r, left + 20));
  const service = createService(
    redis,
    { windowMs: WINDOW_MS, alertAt: 0.66, ...config },
    {
      workers: 1_000,
    },
  );
  await redis.del(...(await redis.keys('limits:quota:{item-parse}:*')), 'unused');
  const acquired = [];
  service.limiter.on('acquire', () => acquired.push(name));
  await new Promise((resolve) => service.server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const url = `http://127.0.0.1:${service.server.address().port}/wishlists`;
  const post = async (account) => {
    const r = await fetch(url, { method: 'POST', headers: { 'x-account': account } });
    return {
      account,
      status: r.status,
      retryAfter: r.headers.get('retry-after'),
      body: await r.json(),
    };
  };
  const count = async (axis, key) =>
    Number((await redis.hget(service.store.key('item-parse', axis, key), 'n')) ?? 0);
  return { ...service, post, count, acquired, close: () => service.server.close() };
}

test('50 concurrent parse requests from 10 accounts admit exactly the global cap, at most 3 per account, and the limiter sees only those', async () => {
  const s = await serve({ accountLimit: 3, globalLimit: 10 }, 'concurrent');
  try {
    const accounts = Array.from({ length: 10 }, (_, i) => `acct-${i}`);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => s.post(accounts[i % accounts.length])),
    );
    const ok = results.filter((r) => r.status === 200);
    assert.equal(ok.length, 10);
    for (const a of accounts) {
      const mine = ok.filter((r) => r.account === a).length;
      assert.ok(mine <= 3, `${a} got ${mine} > 3`);
      assert.equal(await s.count('account', a), mine, `${a}'s counter is its admissions only`);
    }
    assert.equal(await s.count('global', 'all'), 10);
    for (const r of results.filter((x) => x.status !== 200)) {
      assert.ok(r.status === 429 || r.status === 503, `status ${r.status}`);
      assert.deepEqual(r.body, { error: 'quota', axis: r.status === 429 ? 'account' : 'global' });
      assert.ok(Number(r.retryAfter) >= 1 && Number(r.retryAfter) <= WINDOW_MS / 1000);
    }
    assert.equal(s.acquired.length, 10, 'the limiter was asked only for the admitted requests');
  } finally {
    s.close();
  }
});

test('an account over its share gets 429 before the full global cap would say 503, and a global refusal charges its account nothing', async () => {
  const s = await serve({ accountLimit: 2, globalLimit: 4 }, 'sequential');
  try {
    for (const a of ['a', 'a', 'b', 'c']) assert.equal((await s.post(a)).status, 200);
    const mine = await s.post('a');
    assert.equal(mine.status, 429);
    assert.deepEqual(mine.body, { error: 'quota', axis: 'account' });
    const other = await s.post('d');
    assert.equal(other.status, 503);
    assert.deepEqual(other.body, { error: 'quota', axis: 'global' });
    assert.equal(await s.count('account', 'd'), 0, "d's share is untouched by the global refusal");
    assert.equal(await s.count('account', 'a'), 2);
    assert.equal(s.acquired.length, 4);
  } finally {
    s.close();
  }
});
