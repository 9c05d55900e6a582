import type { ScriptClient } from '../luaScript.js';

/**
 * The part of an ioredis client (v5 or v6, `Redis` or `Cluster`) the pool uses. Any client with
 * these methods works; limits-redis never imports ioredis itself.
 */
export interface RedisClient extends ScriptClient {
  /** A new connection with the same options: the pool subscribes to release messages on it. */
  duplicate(): RedisSubscriber;
  /**
   * ioredis' connection state, when present: `"reconnecting"`, `"close"` or `"end"` fails a call at
   * once (by the failure policy) instead of parking it in the client's offline queue.
   */
  readonly status?: string;
}

/** The part of a duplicated ioredis connection used to wait for release messages. */
export interface RedisSubscriber {
  subscribe(...channels: string[]): Promise<unknown>;
  on(event: string, listener: (channel: string, message: string) => void): unknown;
  disconnect(): void;
}
