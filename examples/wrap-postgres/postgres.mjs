// The example's setup: a throwaway PostgreSQL server in a temp dir, on a free loopback port, stopped
// and deleted by `stop()`. Not part of the pattern to copy — in your service the database exists.
//
// PostgreSQL refuses to run as root. When this process is root, initdb and postgres run as the
// `postgres` OS user (made by Debian's package), or else `nobody`, through Node's own `uid`/`gid`
// spawn options (no su/sudo needed); the temp dir is handed to that user.
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findPostgresBin } from '../../scripts/ensure-postgres.mjs';

const ensureScript = fileURLToPath(new URL('../../scripts/ensure-postgres.mjs', import.meta.url));

/** The server binaries' directory, installing them through the project's script when missing. */
function postgresBin() {
  let bin = findPostgresBin();
  if (bin === undefined) {
    const r = spawnSync(process.execPath, [ensureScript], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('PostgreSQL is not installed (see the message above)');
    bin = findPostgresBin();
  }
  return bin;
}

/** `{ uid, gid }` of an unprivileged user to run the server as when we are root; `{}` otherwise. */
function serverUser() {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return {};
  for (const name of ['postgres', 'nobody']) {
    const uid = spawnSync('id', ['-u', name], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', name], { encoding: 'utf8' });
    if (uid.status === 0 && gid.status === 0) {
      return { uid: Number(uid.stdout), gid: Number(gid.stdout), name };
    }
  }
  throw new Error(
    'running as root and found neither a "postgres" nor a "nobody" user to run PostgreSQL as',
  );
}

/** A port nobody listens on right now (the server takes it a moment later). */
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer().once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts a PostgreSQL server. Resolves `{ host, port, user, database, pid, dir, stop }` once it
 * accepts connections; `stop()` shuts it down and removes its directory.
 */
export async function startPostgres() {
  const bin = postgresBin();
  const { name: runAs, ...ids } = serverUser();
  const dir = mkdtempSync(join(tmpdir(), 'limits-pg-'));
  let child;
  let stopped;
  const stop = () => {
    stopped ??= (async () => {
      if (child !== undefined && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        // "Smart" shutdown: lets sessions still closing (pg's pool.end() does not wait for its sockets)
        // end on their own; then "fast" (ends sessions) after 3 s and "immediate" after 10 s if stuck.
        child.kill('SIGTERM');
        const fast = setTimeout(() => child.kill('SIGINT'), 3_000);
        const immediate = setTimeout(() => child.kill('SIGQUIT'), 10_000);
        await exited;
        clearTimeout(fast);
        clearTimeout(immediate);
      }
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopped;
  };
  // Last resort when the process exits without calling stop() (an uncaught error): no async work is
  // possible any more, so ask for an immediate shutdown and remove what we can.
  const onExit = () => {
    if (child !== undefined && child.exitCode === null) child.kill('SIGQUIT');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  try {
    if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid);
    const data = join(dir, 'data');
    const init = spawnSync(
      join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C'],
      { ...ids, cwd: dir, encoding: 'utf8' },
    );
    if (init.status !== 0) {
      throw new Error(`initdb failed${runAs ? ` (as user ${runAs})` : ''}:\n${init.stderr}`);
    }
    const port = await freePort();
    child = spawn(
      join(bin, 'postgres'),
      // No durability needed for a throwaway database: fsync off keeps it light.
      [
        '-D',
        data,
        '-p',
        String(port),
        '-k',
        dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=off',
      ],
      { ...ids, cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`PostgreSQL did not start in 30 s:\n${log}`)),
        30_000,
      );
      child.stderr.setEncoding('utf8').on('data', (chunk) => {
        log += chunk;
        if (log.includes('database system is ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`PostgreSQL exited with ${code} while starting:\n${log}`));
      });
    });
    child.stderr.removeAllListeners('data').resume(); // keep draining its log so it never blocks
    return {
      host: '127.0.0.1',
      port,
      user: 'postgres',
      database: 'postgres',
      pid: child.pid,
      dir,
      runAs,
      stop: async () => {
        await stop();
        process.removeListener('exit', onExit);
      },
    };
  } catch (error) {
    await stop();
    process.removeListener('exit', onExit);
    throw error;
  }
}
