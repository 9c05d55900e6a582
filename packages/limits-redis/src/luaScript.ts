import { createHash } from 'node:crypto';

/** @internal A Lua script with its SHA-1, for EVALSHA. */
export interface LuaScript {
  readonly source: string;
  readonly sha: string;
}

/** @internal A script from its source. */
export function luaScript(source: string): LuaScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

/** What running a script needs of an ioredis client (v5 or v6, `Redis` or `Cluster`). */
export interface ScriptClient {
  /** `EVALSHA sha numkeys key... arg...`. */
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  /** `EVAL script numkeys key... arg...` (also caches the script on the server). */
  eval(script: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
}

/**
 * @internal Runs `script` by EVALSHA, and by EVAL (which caches it again) when the server answers
 * NOSCRIPT: after `SCRIPT FLUSH`, a restart, a new Cluster node. The quota store and the pool both
 * run their scripts through it.
 * @param keysAndArgs - the first `numKeys` are KEYS, the rest ARGV.
 */
export async function evalScript(
  redis: ScriptClient,
  script: LuaScript,
  numKeys: number,
  keysAndArgs: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha, numKeys, ...keysAndArgs);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return redis.eval(script.source, numKeys, ...keysAndArgs);
  }
}

function isNoScript(error: unknown): boolean {
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message.startsWith('NOSCRIPT');
}
