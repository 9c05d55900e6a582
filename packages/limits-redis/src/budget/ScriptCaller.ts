import type { Clock } from 'limits-core';
import { RedisTimeoutError } from './errors.js';
import { evalScript, type RedisClient } from './RedisClient.js';
import type { Script } from './scripts.js';

/**
 * @internal Runs the budget's scripts on its keys, each call bounded by a timeout, and tracks
 * whether Redis is down: the first call that answers after a failure reports the outage's length.
 */
export class ScriptCaller {
  readonly #redis: RedisClient;
  readonly #keys: readonly string[];
  readonly #channel: string;
  readonly #clock: Clock;
  readonly #onRecovered: (downMs: number) => void;
  #downSince = Number.NaN;

  constructor(
    redis: RedisClient,
    keys: readonly string[],
    channel: string,
    clock: Clock,
    onRecovered: (downMs: number) => void,
  ) {
    this.#redis = redis;
    this.#keys = keys;
    this.#channel = channel;
    this.#clock = clock;
    this.#onRecovered = onRecovered;
  }

  /** A call failed: Redis counts as down from now (if it was not already). */
  failed(): void {
    if (Number.isNaN(this.#downSince)) this.#downSince = this.#clock.now();
  }

  /**
   * Runs `script` with `[channel, ...args]`; rejects with a `RedisTimeoutError` after `timeoutMs`.
   * `onLate` gets the reply of a call that answered after its timeout (ioredis may still send a
   * queued command once Redis is back).
   */
  call(
    script: Script,
    args: readonly (string | number)[],
    timeoutMs: number,
    onLate?: (reply: unknown) => void,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let done = false;
      const timer = this.#clock.setTimeout(() => {
        done = true;
        reject(new RedisTimeoutError(timeoutMs));
      }, timeoutMs);
      evalScript(this.#redis, script, this.#keys, [this.#channel, ...args]).then(
        (reply) => {
          if (done) return onLate?.(reply);
          done = true;
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
          done = true;
          this.#clock.clearTimeout(timer);
          reject(error);
        },
      );
    });
  }
}
