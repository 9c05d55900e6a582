import type { Clock } from 'limits-core';
import { connectionLost } from '../connectionLost.js';
import { evalScript, type LuaScript } from '../luaScript.js';
import { RedisDownError, RedisTimeoutError } from './errors.js';
import type { RedisClient } from './RedisClient.js';

/**
 * @internal Runs the pool's scripts on its keys, each call bounded by a timeout, and tracks
 * whether Redis is down. A client that says it lost its connection (ioredis `status`
 * `"reconnecting"`, `"close"` or `"end"`) fails the call at once. While it is down, one call at a time, at most one per `probeEveryMs`, goes
 * to Redis (the probe); the others fail at once with {@link RedisDownError} instead of each waiting
 * out its timeout, so an outage adds little latency to calls that `onFailure: 'open'` lets through. The first
 * call that answers after a failure ends the outage and reports its length.
 */
export class ScriptCaller {
  readonly #redis: RedisClient;
  readonly #keys: readonly string[];
  readonly #channel: string;
  readonly #clock: Clock;
  readonly #onRecovered: (downMs: number) => void;
  #downSince = Number.NaN;
  #probing = false;
  #nextProbeAt = 0;
  readonly #probeEveryMs: number;
  #lastError: unknown;

  constructor(
    redis: RedisClient,
    keys: readonly string[],
    channel: string,
    clock: Clock,
    probeEveryMs: number,
    onRecovered: (downMs: number) => void,
  ) {
    this.#probeEveryMs = probeEveryMs;
    this.#redis = redis;
    this.#keys = keys;
    this.#channel = channel;
    this.#clock = clock;
    this.#onRecovered = onRecovered;
  }

  /** A call failed with `error`: Redis counts as down from now (if it was not already). */
  failed(error: unknown): void {
    if (error instanceof RedisDownError) return;
    this.#lastError = error;
    if (!Number.isNaN(this.#downSince)) return;
    this.#downSince = this.#clock.now();
    this.#nextProbeAt = this.#downSince + this.#probeEveryMs;
  }

  /**
   * Runs `script` with `[channel, ...args]`; rejects with a `RedisTimeoutError` after `timeoutMs`.
   * `onLate` gets the reply of a call that answered after its timeout (ioredis may still send a
   * queued command once Redis is back).
   */
  call(
    script: LuaScript,
    args: readonly (string | number)[],
    timeoutMs: number,
    onLate?: (reply: unknown) => void,
  ): Promise<unknown> {
    // Disconnected: answer at once rather than park the call in ioredis' offline queue. (A client
    // still making its first connection, or a lazy one, gets the call: the timeout bounds it.)
    const lost = connectionLost(this.#redis.status);
    if (lost !== undefined) return Promise.reject(lost);
    const probe = !Number.isNaN(this.#downSince);
    if (probe) {
      const now = this.#clock.now();
      if (this.#probing || now < this.#nextProbeAt) {
        return Promise.reject(new RedisDownError(this.#lastError));
      }
      this.#probing = true;
      this.#nextProbeAt = now + this.#probeEveryMs;
    }
    return new Promise((resolve, reject) => {
      let done = false;
      const end = () => {
        done = true;
        if (probe) this.#probing = false;
      };
      const timer = this.#clock.setTimeout(() => {
        end();
        reject(new RedisTimeoutError(timeoutMs));
      }, timeoutMs);
      evalScript(this.#redis, script, this.#keys.length, [
        ...this.#keys,
        this.#channel,
        ...args,
      ]).then(
        (reply) => {
          if (done) return onLate?.(reply);
          end();
          this.#clock.clearTimeout(timer);
          if (!Number.isNaN(this.#downSince)) {
            const downMs = this.#clock.now() - this.#downSince;
            this.#downSince = Number.NaN;
            this.#onRecovered(downMs);
          }
          resolve(reply);
        },
        (error) => {
          if (done) return;
          end();
          this.#clock.clearTimeout(timer);
          reject(error);
        },
      );
    });
  }
}
