// What the S4 scripts (s4-quota.mjs, s4-lease-pool.mjs) share: a throwaway redis-server on a free
// loopback port, and the closed-loop measurement of one operation.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts `redis-server` on a free 127.0.0.1 port (no persistence, in a temp dir) and waits until it
 * answers PING; `REDIS_PORT` uses a running server instead. `stop()` kills it and removes the dir; it
 * is killed on exit too, even when the run fails.
 */
export async function startRedis() {
  if (process.env.REDIS_PORT) return { port: Number(process.env.REDIS_PORT), stop() {} };
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'limits-s4-'));
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    { stdio: 'ignore' },
  );
  const stop = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  for (let i = 0; ; i++) {
    const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return { port, stop };
    } catch (e) {
      probe.disconnect();
      if (i > 100) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const percentile = (sorted, p) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

/**
 * Runs `callers` closed-loop callers of `op(callerId, i)` for `ms`: operations per second and the
 * p50 / p99 latency (ms) of the operations that succeeded; failed ones are counted apart (`errors`).
 */
export async function measure(op, callers, ms) {
  const latencies = [];
  let errors = 0;
  const end = performance.now() + ms;
  const caller = async (id) => {
    for (let i = 0; performance.now() < end; i++) {
      const t = performance.now();
      try {
        await op(id, i);
        latencies.push(performance.now() - t);
      } catch {
        errors++;
      }
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: callers }, (_, id) => caller(id)));
  const elapsed = performance.now() - start;
  latencies.sort((a, b) => a - b);
  return {
    opsPerSec: (latencies.length / elapsed) * 1000,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    errors,
  };
}
