// Makes sure `redis-server` and `redis-cli` are on PATH before limits-redis's tests run (they start a
// real Redis on a loopback port). On a fresh Debian/Ubuntu machine run as root (a CI image), installs
// the `redis-server` Debian package (which brings redis-cli); anywhere else prints what to install and
// exits non-zero, so the test command fails with a clear message instead of a spawn error.
//
//   node scripts/ensure-redis.mjs
//   LIMITS_REDIS_NO_INSTALL=1 node scripts/ensure-redis.mjs   only check, never install
import { spawnSync } from 'node:child_process';
import { aptInstall, canAptInstall } from './apt-install.mjs';

/** True when `cmd` runs (`--version` exits 0). */
function has(cmd) {
  const r = spawnSync(cmd, ['--version'], { stdio: 'ignore' });
  return r.status === 0;
}

if (has('redis-server') && has('redis-cli')) process.exit(0);

if (canAptInstall() && !process.env.LIMITS_REDIS_NO_INSTALL) {
  aptInstall(
    'redis-server',
    'ensure-redis',
    "limits-redis's tests start a real Redis and redis-server is not on PATH (LIMITS_REDIS_NO_INSTALL=1 only checks)",
  );
  if (has('redis-server') && has('redis-cli')) process.exit(0);
  console.error('ensure-redis: redis-server was installed but is still not on PATH');
  process.exit(1);
}

console.error(
  [
    'ensure-redis: limits-redis tests need `redis-server` and `redis-cli` (Redis 6.2 or later) on PATH.',
    '  Debian/Ubuntu: sudo apt-get install -y redis-server',
    '  macOS:         brew install redis',
    '  (run as root on a Debian-based CI image and this script installs it itself)',
  ].join('\n'),
);
process.exit(1);
