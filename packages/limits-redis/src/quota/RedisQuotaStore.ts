import { createHash } from 'node:crypto';
import type { QuotaStore, QuotaStoreRequest, QuotaStoreVerdict } from 'limits-core';
import { MAX_QUOTA_KEY_LENGTH } from 'limits-core';
import { checkKeys, checkNumber, checkOneOf, checkString, formatValue } from 'limits-core/internal';
import { connectionLost } from '../connectionLost.js';
import { evalScript, type ScriptClient } from '../luaScript.js';
import { encodeKeyPart } from './encodeKeyPart.js';
import { QUOTA_SCRIPT } from './script.js';

/**
 * What a {@link RedisQuotaStore} needs of a client: `evalsha` and `eval` returning promises, as an
 * ioredis 5 or 6 `Redis` or `Cluster` has. `status` (ioredis' connection state), when present, is
 * read before each call: a lost connection (`"reconnecting"`, `"close"`, `"end"`) answers by the
 * failure policy at once, so calls are not parked in the client's offline queue to charge counters
 * long after their caller was answered. A client still making its first connection (`"connecting"`,
 * `"connect"`) or a `lazyConnect` one (`"wait"`, which connects on the first call) gets the call,
 * bounded by `timeoutMs`.
 */
export interface RedisScriptClient extends ScriptClient {
  readonly status?: string;
}

/** Options of a {@link RedisQuotaStore}. */
export interface RedisQuotaStoreOptions {
  /**
   * What a call answers when Redis cannot judge it within `timeoutMs` (down, slow, connection lost):
   * `'open'` lets it through uncharged, `'closed'` refuses it (the quota's `unavailableStatus`, 503).
   * Required: neither is a safe default for every service. Either way the quota emits `failure`.
   */
  onFailure: 'open' | 'closed';
  /**
   * Most time a call waits for Redis, in milliseconds, a client's first connection included; then the
   * failure policy answers. @default 200
   */
  timeoutMs?: number;
  /** Prefix of every key (no `{` or `}`: the hash tag is the quota's name). @default "limits:quota" */
  prefix?: string;
  /** `retryAfterMs` of a call refused by `onFailure: 'closed'`, in milliseconds. @default 1000 */
  failureRetryAfterMs?: number;
}

const OPTION_NAMES = ['onFailure', 'timeoutMs', 'prefix', 'failureRetryAfterMs'];

/**
 * A {@link QuotaStore} on Redis, shared by every instance of a fleet: one Lua script judges and
 * charges all axes of a call atomically (EVALSHA, reloaded with EVAL after `NOSCRIPT`, e.g. after a
 * `SCRIPT FLUSH` or a restart), on Redis `TIME`, so every instance shares one clock and one window.
 *
 * Keys: `<prefix>:{<quota>}:<axis>:<key>`, each part percent-encoded (no tenant id can collide with or
 * reach another key), each a small hash that expires at its window's end. A `<key>` whose encoded
 * form is longer than `MAX_QUOTA_KEY_LENGTH` (256) is stored as `#` and the SHA-256 of that form (65
 * characters; `#` is never in an encoded part, so no other key can spell it). All keys of a quota share
 * the hash tag `{<quota>}`, so each call touches one slot (Redis Cluster).
 *
 * @example
 * const store = new RedisQuotaStore(new Redis(process.env.REDIS_URL), { onFailure: 'closed', timeoutMs: 100 });
 * const quota = new Quota({ windowMs: 3_600_000, axes, store, name: 'item-parse' });
 */
export class RedisQuotaStore implements QuotaStore {
  readonly #client: RedisScriptClient;
  readonly #policy: 'open' | 'closed';
  readonly #timeoutMs: number;
  readonly #prefix: string;
  readonly #retryAfterMs: number;

  /**
   * @param client - an ioredis `Redis` or `Cluster` (5 or 6), or any {@link RedisScriptClient}.
   * @param options - see {@link RedisQuotaStoreOptions}; `onFailure` is required.
   * @throws TypeError/RangeError for a bad client or option.
   */
  constructor(client: RedisScriptClient, options: RedisQuotaStoreOptions) {
    if (
      client === null ||
      typeof client !== 'object' ||
      typeof client.evalsha !== 'function' ||
      typeof client.eval !== 'function'
    )
      throw new TypeError(
        `limits: RedisQuotaStore needs an ioredis client (with evalsha and eval), got ${formatValue(client)}`,
      );
    checkKeys('RedisQuotaStore', options, OPTION_NAMES);
    if (options?.onFailure === undefined)
      throw new TypeError(
        'limits: option "onFailure" is required: "open" (let calls through uncharged while Redis is unreachable) or "closed" (refuse them)',
      );
    this.#policy = checkOneOf('onFailure', options.onFailure, 'closed', ['open', 'closed']);
    this.#timeoutMs = checkNumber('timeoutMs', options.timeoutMs, 200, { min: 1 });
    const prefix = checkString('prefix', options.prefix) ?? 'limits:quota';
    if (prefix === '' || /[{}]/.test(prefix))
      throw new RangeError(
        `limits: option "prefix" must be a non-empty string without "{" or "}", got ${formatValue(prefix)}`,
      );
    this.#prefix = prefix;
    this.#retryAfterMs = checkNumber('failureRetryAfterMs', options.failureRetryAfterMs, 1_000, {
      min: 0,
    });
    this.#client = client;
  }

  /**
   * The Redis key of one counter (for inspection and tests): `<prefix>:{<quota>}:<axis>:<key>`, each
   * part percent-encoded, and a `<key>` longer than `MAX_QUOTA_KEY_LENGTH` once encoded replaced by
   * `#` and the SHA-256 (hex) of its encoded form.
   * @throws TypeError for a part with a lone surrogate.
   */
  key(quota: string, axis: string, key: string): string {
    let part = encodeKeyPart(key);
    if (part.length > MAX_QUOTA_KEY_LENGTH)
      part = `#${createHash('sha256').update(part).digest('hex')}`;
    return `${this.#prefix}:{${encodeKeyPart(quota)}}:${encodeKeyPart(axis)}:${part}`;
  }

  /**
   * Judges and charges `request` atomically in Redis; see `QuotaStore.consume`. Never rejects for a
   * Redis failure and never waits past `timeoutMs`: the failure policy answers instead, with `failure`
   * set. A call that timed out may still be charged if Redis runs it later.
   * @throws TypeError (as a rejection) for a key with a lone surrogate.
   */
  async consume(request: QuotaStoreRequest): Promise<QuotaStoreVerdict> {
    const { axes } = request;
    const n = axes.length;
    const args: (string | number)[] = new Array(2 * n + 2);
    for (let i = 0; i < n; i++) {
      const axis = axes[i] as (typeof axes)[number];
      args[i] = this.key(request.quota, axis.name, axis.key);
      args[n + 2 + i] = axis.limit;
    }
    args[n] = request.windowMs;
    args[n + 1] = request.amount;
    const lost = connectionLost(this.#client.status);
    if (lost !== undefined) return this.#failed(lost);
    let reply: unknown;
    try {
      reply = await this.#withTimeout(evalScript(this.#client, QUOTA_SCRIPT, n, args));
    } catch (error) {
      return this.#failed(error instanceof Error ? error : new Error(String(error)));
    }
    if (!Array.isArray(reply) || reply.length !== n + 2 || !reply.every(Number.isInteger))
      return this.#failed(
        new Error(`limits: unexpected reply from the quota script: ${formatValue(reply)}`),
      );
    return {
      refused: (reply[0] as number) - 1,
      resetInMs: reply[1] as number,
      counts: reply.slice(2) as number[],
    };
  }

  #withTimeout(call: Promise<unknown>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(`limits: Redis did not answer the quota script within ${this.#timeoutMs} ms`),
        );
      }, this.#timeoutMs);
      call.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  #failed(error: Error): QuotaStoreVerdict {
    return {
      refused: -1,
      counts: [],
      resetInMs: this.#retryAfterMs,
      failure: { policy: this.#policy, error },
    };
  }
}
