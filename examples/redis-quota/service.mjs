// Seed 002's service: item parsing behind a per-account quota (429) checked before a global cap (503),
// both judged and charged in one Redis script (RedisQuotaStore), then the process' own limiter (8 parse
// workers, no queue: its refusal is the limiter's 503). Only the routes that enqueue a parse are counted;
// reads, /health and the rest pass uncounted.
import { createServer } from 'node:http';
import { Limiter, Quota } from 'limits-core';
import { loadShed } from 'limits-node-http';
import { RedisQuotaStore } from 'limits-redis';

/** Seed 002's numbers: 30 per account and 3,000 in all per hour, an alert at 66 %. */
export const SEED_002 = {
  accountLimit: 30,
  globalLimit: 3_000,
  windowMs: 3_600_000,
  alertAt: 0.66,
};

/** The variables the service reads, and the value each has in seed 002. */
export const ENV = {
  accountLimit: 'QUOTA_ACCOUNT_LIMIT',
  globalLimit: 'QUOTA_GLOBAL_LIMIT',
  windowMs: 'QUOTA_WINDOW_MS',
  alertAt: 'QUOTA_ALERT_AT',
};

/**
 * The quota's numbers from the environment (`defaults` for a variable that is not set). A value that is
 * not a number is refused here, naming the variable; the Quota then checks its range.
 * @param {NodeJS.ProcessEnv} env
 * @param {typeof SEED_002} defaults
 * @returns {typeof SEED_002}
 */
export function quotaConfig(env, defaults) {
  /** @type {Record<string, number>} */
  const out = {};
  for (const [field, variable] of Object.entries(ENV)) {
    const raw = env[variable];
    const value = raw === undefined || raw === '' ? defaults[field] : Number(raw);
    if (!Number.isFinite(value))
      throw new RangeError(`environment variable ${variable} must be a number, got "${raw}"`);
    out[field] = value;
  }
  return /** @type {typeof SEED_002} */ (out);
}

/** The parse routes of seed 002 (POST only): each enqueues a job for a parse worker. */
const COUNTED = /^\/(wishlists|tournaments\/[^/]+\/items)(\/|$)/;

/**
 * The account of a counted request (its `x-account` header; a real service reads its session), or
 * `undefined` for a request that is not counted.
 * @param {import('node:http').IncomingMessage} req
 */
function parseJobOf(req) {
  if (req.method !== 'POST' || !COUNTED.test(req.url ?? '')) return undefined;
  const account = req.headers['x-account'];
  return { account: typeof account === 'string' ? account : 'anonymous' };
}

/**
 * Builds the service on a Redis client.
 * @param {import('ioredis').Redis} redis
 * @param {typeof SEED_002} config
 * @param {{ onAlert?: (e: import('limits-core').QuotaAlertEvent) => void, workers?: number, work?: () => Promise<void> }} [hooks]
 *   `onAlert`: the global axis' alert; `workers`: the limiter's limit (seed 002: 8); `work`: what a
 *   parse job waits for before it answers (default: nothing).
 */
export function createService(redis, config, hooks = {}) {
  const store = new RedisQuotaStore(redis, { onFailure: 'closed', timeoutMs: 200 });
  /** @type {Quota<{ account: string }>} */
  const quota = new Quota({
    name: 'item-parse',
    windowMs: config.windowMs,
    store,
    axes: [
      {
        name: 'account',
        key: (c) => c.account,
        limit: config.accountLimit,
        status: 429,
        alertAt: 1,
      },
      {
        name: 'global',
        key: () => 'all',
        limit: config.globalLimit,
        status: 503,
        alertAt: config.alertAt,
      },
    ],
  });
  // Seed 002 alerts on the global cap only (its 66 % line is the real defence).
  quota.on('alert', (e) => {
    if (e.axis === 'global') hooks.onAlert?.(e);
  });
  // 8 parse workers, queueCapacity 0 (seed 002): a ninth parse at once is the limiter's 503.
  const limiter = new Limiter({ limit: hooks.workers ?? 8, maxQueued: 0 });
  const shed = loadShed({ limiter, quota, quotaContext: parseJobOf });
  const server = createServer(
    shed.wrap(async (req, res) => {
      const counted = parseJobOf(req) !== undefined;
      // The parse job itself (a worker holds its permit meanwhile); instant unless `hooks.work` says.
      if (counted && hooks.work) await hooks.work();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(counted ? { queued: true } : { ok: true }));
    }),
  );
  return { server, quota, limiter, store };
}
