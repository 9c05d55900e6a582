// Seed 002 on a real Redis: a per-account quota (429) checked before a global cap (503), both judged and
// charged atomically by one Lua script, an alert at 66 % of the cap, Retry-After to the window's end.
// Starts its own redis-server on a free loopback port (or uses REDIS_URL), serves the service of
// service.mjs on another, and runs a short client against it: account a spends its share (200s, then
// 429), other accounts fill the global cap (the alert fires once, at 66 %, then 503), a read passes
// uncounted, after Retry-After the next window admits again, and a burst of 9 parses at once meets
// the limiter (8 workers, no queue) and its own 503.
//
//   node redis-quota/demo.mjs                       seed 002 scaled down: 3 per account, 10 in all,
//                                                   5 s windows, alert at 66 % (a few seconds)
//   QUOTA_ACCOUNT_LIMIT=30 QUOTA_GLOBAL_LIMIT=3000 QUOTA_WINDOW_MS=3600000 node redis-quota/demo.mjs
//                                                   seed 002's own numbers (skips the last step: it
//                                                   would wait for the hour to end)
//   REDIS_URL=redis://127.0.0.1:6379 node redis-quota/demo.mjs   an existing Redis instead
import { Redis } from 'ioredis';
import { startRedis } from './redisServer.mjs';
import { createService, ENV, quotaConfig, SEED_002 } from './service.mjs';

/** Seed 002 scaled down so the demo runs in seconds: 3 per account, 10 in all, per 5 s. */
const DEMO_DEFAULTS = { accountLimit: 3, globalLimit: 10, windowMs: 5_000, alertAt: 0.66 };
/** The demo waits for a window to end (to start in a fresh one, and to show the restart) only up to this. */
const MAX_WAIT_MS = 15_000;

const config = quotaConfig(process.env, DEMO_DEFAULTS);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

console.log(
  `seed 002 quota: account ${config.accountLimit} and global ${config.globalLimit} per ${config.windowMs} ms window, ` +
    `alert at ${Math.round(config.alertAt * 100)} % ` +
    `(seed 002: ${SEED_002.accountLimit}, ${SEED_002.globalLimit} per ${SEED_002.windowMs} ms, ${SEED_002.alertAt * 100} %; ` +
    `set ${Object.values(ENV).join(', ')})`,
);

const own = process.env.REDIS_URL ? undefined : await startRedis();
const redis = own
  ? new Redis(own.port, own.host, { maxRetriesPerRequest: 1 })
  : new Redis(/** @type {string} */ (process.env.REDIS_URL), { maxRetriesPerRequest: 1 });
if (own) console.log(`redis-server started on ${own.host}:${own.port}`);
await new Promise((resolve, reject) => {
  redis.once('ready', resolve);
  redis.once('error', reject);
});

/** While set, parse jobs wait for it (the burst below holds every worker busy at once). */
let busy;
const { server, quota, store } = createService(redis, config, {
  work: () => busy?.promise ?? Promise.resolve(),
  onAlert: (e) =>
    console.log(
      `  ALERT: ${e.axis} at ${e.count}/${e.limit} (${Math.round(e.alertAt * 100)} %), ${e.resetInMs} ms left in the window`,
    ),
});
quota.on('failure', (e) => console.log(`  quota store failed (${e.policy}): ${e.error.message}`));
await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
const address = /** @type {import('node:net').AddressInfo} */ (server.address());
const base = `http://127.0.0.1:${address.port}`;

/** Milliseconds left in the current window, on Redis' clock (the one the quota's script reads). */
async function windowLeftMs() {
  const [s, us] = await redis.time();
  const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
  return config.windowMs - (now % config.windowMs);
}

/** One parse request of `account`: its status, Retry-After and body. */
async function parse(account) {
  const r = await fetch(`${base}/wishlists`, {
    method: 'POST',
    headers: { 'x-account': account },
  });
  return { status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() };
}

/** Sends parse requests as `account` until one is refused or `max` passed; prints one line. */
async function spend(account, max) {
  let ok = 0;
  let refused;
  while (ok < max) {
    const r = await parse(account);
    if (r.status !== 200) {
      refused = r;
      break;
    }
    ok++;
  }
  const then = refused
    ? `, then ${refused.status} retry-after=${refused.retryAfter} ${refused.body}`
    : '';
  console.log(`  account ${account}: 200 ×${ok}${then}`);
  return { ok, refused };
}

let failed = false;
try {
  const left = await windowLeftMs();
  if (config.windowMs <= MAX_WAIT_MS) {
    // Start at a window's beginning so the whole run fits in one window.
    console.log(`waiting ${left} ms for a fresh window`);
    await sleep(left + 20);
  }
  console.log(`POST /wishlists as account a until refused:`);
  await spend('a', Number.POSITIVE_INFINITY);
  console.log(
    `POST /wishlists as other accounts, each up to its share, until the global cap refuses:`,
  );
  let last;
  for (let i = 0; ; i++) {
    const r = await spend(`u${i}`, config.accountLimit);
    if (r.refused?.status === 503) {
      last = r.refused;
      // One script judged both axes: the global refusal charged nothing, so a retry costs no share.
      const n = await redis.hget(store.key('item-parse', 'account', `u${i}`), 'n');
      console.log(
        `  account u${i}'s counter in Redis after the 503: ${n ?? 0} (the refused call charged nothing)`,
      );
      break;
    }
  }
  const both = await parse('a');
  console.log(
    `both full: account a gets ${both.status} ${both.body} (its own share first, not the server's)`,
  );
  const read = await fetch(`${base}/wishlists`);
  console.log(`GET /wishlists (a read, not counted): ${read.status}`);
  const waitS = Number(last.retryAfter);
  if (waitS * 1000 <= MAX_WAIT_MS) {
    console.log(`waiting Retry-After ${waitS} s for the next window`);
    await sleep(waitS * 1000);
    const again = await parse('a');
    console.log(`next window: account a gets ${again.status} ${again.body}`);
    // Seed 002's 8 parse workers with no queue: a ninth parse at once is the limiter's own 503. The
    // quota admitted (and charged) it first: the charge stands (limits-node-http README, "Quotas").
    let open;
    busy = { promise: new Promise((r) => (open = r)) };
    const burst = Array.from({ length: 9 }, (_, i) => parse(`b${i}`));
    const first = await Promise.race(burst);
    open();
    busy = undefined;
    const all = await Promise.all(burst);
    const held = all.filter((r) => r.status === 200).length;
    console.log(
      `9 parses at once (8 workers, no queue): 200 ×${held}; first answer ${first.status} ` +
        `retry-after=${first.retryAfter} ${first.body} (the limiter's own 503)`,
    );
  } else console.log(`Retry-After ${waitS} s: the next window is too far to wait for here`);
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  server.close();
  redis.disconnect();
  await own?.stop();
}
process.exitCode = failed ? 1 : 0;
