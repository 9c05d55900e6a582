/**
 * Real Redis servers for the tests: one standalone `redis-server`, or a 3-master Redis Cluster, each on
 * free 127.0.0.1 ports in a temporary directory, with no persistence (`--save '' --appendonly no`).
 *
 * Every process started here is killed by `stop()`, by the exit hook below when a test file ends
 * without calling it, and by `globalSetup.ts`'s teardown (it reads the pid files written here) when a
 * test worker dies: no `redis-server` outlives the test run, even when a test fails.
 *
 *   const redis = await startRedis();          // in beforeAll
 *   new Redis(redis.port, '127.0.0.1');
 *   await redis.stop(); await redis.restart(); // "Redis stopped mid-run", then back on the same port
 *   await redis.close();                       // in afterAll
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 10_000;
/** How long `redis-cli --cluster create` may wait for the nodes to join (see `startCluster`). */
const CLUSTER_JOIN_TIMEOUT_MS = 30_000;

/** Processes started by this module and not yet known to have exited (the exit hook kills them). */
const live = new Set<ChildProcess>();
let hooked = false;

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const child of live) child.kill('SIGKILL');
  });
}

/** A TCP port free on 127.0.0.1 right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Sends one inline command over a raw socket and resolves with the reply text (no client library). */
export function rawCommand(port: number, command: string, timeoutMs = 1_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: HOST, port });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply from ${HOST}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk: string) => {
      data += chunk;
      // A simple or error reply ends at its first CRLF; a bulk reply's header says its length.
      const m = /^\$(\d+)\r\n/.exec(data);
      const done = m
        ? data.length >= m[0].length + Number(m[1]) + 2
        : data.includes('\r\n') && !data.startsWith('$');
      if (!done) return;
      clearTimeout(timer);
      socket.end();
      resolve(data);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** Resolves once `probe` resolves true, polling every 25 ms; rejects after `timeoutMs`. */
async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs = READY_TIMEOUT_MS,
) {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      if (await probe()) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end)
      throw new Error(`${what}: not ready after ${timeoutMs} ms (${last ?? ''})`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function pidDir(): string | undefined {
  return process.env.LIMITS_REDIS_PID_DIR;
}

/** Starts `redis-server` with `args` in `dir` and records its pid for the global teardown. */
function spawnServer(dir: string, args: string[]): ChildProcess {
  hookExit();
  const child = spawn('redis-server', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  live.add(child);
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (s: string) => {
    stderr += s;
  });
  child.once('error', (err) => {
    stderr += String(err);
  });
  const pd = pidDir();
  const pidFile = pd !== undefined && child.pid !== undefined ? join(pd, `${child.pid}.pid`) : '';
  if (pidFile) writeFileSync(pidFile, String(child.pid));
  child.once('exit', () => {
    live.delete(child);
    if (pidFile) rmSync(pidFile, { force: true });
  });
  Object.defineProperty(child, 'stderrText', { get: () => stderr });
  return child;
}

/** Kills `child` (SIGKILL: a crash, and fast) and resolves once it has exited. */
function killAndWait(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

async function waitForPing(port: number, child: ChildProcess): Promise<void> {
  await waitUntil(`redis-server on port ${port}`, async () => {
    if (child.exitCode !== null)
      throw new Error(
        `redis-server exited with ${child.exitCode}: ${(child as unknown as { stderrText: string }).stderrText}`,
      );
    return (await rawCommand(port, 'PING', 500)).startsWith('+PONG');
  });
}

/** A standalone Redis server started by {@link startRedis}. */
export interface TestRedis {
  readonly host: string;
  readonly port: number;
  /** `redis://127.0.0.1:<port>` */
  readonly url: string;
  /** True while the server process runs. */
  readonly running: boolean;
  /** Kills the server (as a crash would); the port stays reserved for {@link TestRedis.restart}. */
  stop(): Promise<void>;
  /** Starts the server again on the same port (empty: no persistence) and waits for PING. */
  restart(): Promise<void>;
  /** Stops the server for good and removes its directory (call in afterAll). */
  close(): Promise<void>;
}

/** Starts a standalone `redis-server` on a free loopback port and waits until it answers PING. */
export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'limits-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
  ];
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawnServer(dir, args);
    await waitForPing(port, child);
  };
  try {
    await start();
  } catch (err) {
    await killAndWait(child);
    throw err;
  }
  return {
    host: HOST,
    port,
    url: `redis://${HOST}:${port}`,
    get running() {
      return child !== undefined && child.exitCode === null && child.signalCode === null;
    },
    stop: () => killAndWait(child),
    async restart() {
      await killAndWait(child);
      await start();
    },
    async close() {
      await killAndWait(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A 3-master Redis Cluster started by {@link startCluster}. */
export interface TestCluster {
  /** The masters' addresses, for `new Cluster(nodes)`. */
  readonly nodes: { host: string; port: number }[];
  /** Stops every node and removes their directories (call in afterAll). */
  close(): Promise<void>;
}

function run(cmd: string, args: string[], timeoutMs = READY_TIMEOUT_MS): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err)
        reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * Starts a Redis Cluster of 3 masters (no replicas) on free loopback ports: `redis-server
 * --cluster-enabled yes` ×3, then `redis-cli --cluster create`, then waits until every node reports
 * `cluster_state:ok`.
 */
export async function startCluster(): Promise<TestCluster> {
  // Joining takes a second or two, but under load (the test files run in parallel, two of them with a
  // cluster, on a 2-CPU CI machine) `redis-cli --cluster create` once waited past its timeout for the
  // nodes to agree: one more attempt on fresh nodes before failing.
  try {
    return await startClusterOnce();
  } catch {
    return await startClusterOnce();
  }
}

async function startClusterOnce(): Promise<TestCluster> {
  const children: ChildProcess[] = [];
  const dirs: string[] = [];
  const nodes: { host: string; port: number }[] = [];
  const close = async () => {
    await Promise.all(children.map(killAndWait));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      // The bus port is chosen too: the default (port + 10000) may be taken or above 65535.
      const busPort = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'limits-redis-cluster-'));
      dirs.push(dir);
      const child = spawnServer(dir, [
        '--port',
        String(port),
        '--cluster-port',
        String(busPort),
        '--bind',
        HOST,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        '5000',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--daemonize',
        'no',
        '--loglevel',
        'warning',
      ]);
      children.push(child);
      nodes.push({ host: HOST, port });
      await waitForPing(port, child);
    }
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `${n.host}:${n.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      CLUSTER_JOIN_TIMEOUT_MS,
    );
    for (const n of nodes)
      await waitUntil(`cluster node ${n.port}`, async () =>
        (await rawCommand(n.port, 'CLUSTER INFO')).includes('cluster_state:ok'),
      );
  } catch (err) {
    await close();
    throw err;
  }
  return { nodes, close };
}
