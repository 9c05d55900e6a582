/**
 * Vitest global setup: a directory where `redis.ts` records the pid of every `redis-server` it starts,
 * and a teardown that kills whatever is still listed there, so a test worker that dies before its
 * afterAll leaves no Redis behind.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'limits-redis-pids-'));
  process.env.LIMITS_REDIS_PID_DIR = dir;
  return () => {
    for (const name of readdirSync(dir)) {
      const pid = Number(readFileSync(join(dir, name), 'utf8'));
      try {
        if (Number.isInteger(pid) && pid > 0) process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
}
