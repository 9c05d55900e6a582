// A throwaway `redis-server` for the example: on a free 127.0.0.1 port, no persistence, killed when this
// process exits. When `redis-server` is not installed, scripts/ensure-redis.mjs installs it (as root on
// Debian/Ubuntu) or says what to install.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const HOST = '127.0.0.1';
const ensureRedis = fileURLToPath(new URL('../../scripts/ensure-redis.mjs', import.meta.url));

/** A TCP port free on 127.0.0.1 right now (the OS picks it). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts `redis-server` and resolves once it answers PING.
 * @returns {Promise<{ host: string, port: number, stop(): Promise<void> }>}
 */
export async function startRedis() {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    const ensured = spawnSync(process.execPath, [ensureRedis], { stdio: 'inherit' });
    if (ensured.status !== 0) throw new Error('redis-server is not installed (see above)');
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'limits-redis-quota-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const stop = async () => {
    process.off('exit', kill);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis(port, HOST, { lazyConnect: true, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') break;
    } catch {
      // not listening yet
    } finally {
      probe.disconnect();
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not start on ${HOST}:${port}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return { host: HOST, port, stop };
}
