// What ensure-redis.mjs and ensure-postgres.mjs share: installing a missing server from Debian's
// packages, which a fresh CI image (root, apt) allows.
import { execFileSync, spawnSync } from 'node:child_process';

/** Whether this process may install Debian packages: root, with apt-get. */
export function canAptInstall() {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  return isRoot && spawnSync('apt-get', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * `apt-get update` and `apt-get install -y --no-install-recommends <pkg>`, output shown, after one
 * line that says what is installed and `why` (both prefixed with `who`); on failure prints why and
 * exits with code 1.
 */
export function aptInstall(pkg, who, why) {
  console.log(`${who}: installing the Debian package ${pkg} with apt-get (as root): ${why}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    execFileSync('apt-get', ['update'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', pkg], {
      stdio: 'inherit',
      env,
    });
  } catch (err) {
    console.error(`${who}: apt-get failed (${err.message})`);
    process.exit(1);
  }
}
