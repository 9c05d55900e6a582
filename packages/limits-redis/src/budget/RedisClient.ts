/**
 * The part of an ioredis client (v5 or v6, `Redis` or `Cluster`) the budget uses. Any client with
 * these methods works; limits-redis never imports ioredis itself.
 */
export interface RedisClient {
  /** `EVALSHA sha numkeys key... arg...`. */
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  /** `EVAL script numkeys key... arg...` (also caches the script on the server). */
  eval(script: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  /** A new connection with the same options: the budget subscribes to release messages on it. */
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

/** Runs a script by EVALSHA, and by EVAL when the server answers NOSCRIPT (after `SCRIPT FLUSH`, a restart, a new Cluster node). */
export async function evalScript(
  redis: RedisClient,
  script: { readonly source: string; readonly sha: string },
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return redis.eval(script.source, keys.length, ...keys, ...args);
  }
}

function isNoScript(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.startsWith('NOSCRIPT');
}
