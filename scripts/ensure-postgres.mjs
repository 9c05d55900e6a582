// Makes sure the PostgreSQL server binaries (`initdb`, `postgres`) are on this machine before the
// wrap-postgres example (and its test) start a throwaway server with them. On a Debian/Ubuntu machine
// run as root (a CI image), installs the `postgresql` Debian package when they are missing; anywhere
// else prints what to install and exits non-zero, so the command fails with a clear message instead of
// a spawn error.
//
//   node scripts/ensure-postgres.mjs      prints the directory holding the binaries
//   LIMITS_POSTGRES_NO_INSTALL=1 node scripts/ensure-postgres.mjs   only check, never install
//
// `findPostgresBin()` is exported for the example's setup: the directory with `initdb` and `postgres`,
// or `undefined`. Debian keeps them off PATH (in /usr/lib/postgresql/<major>/bin), so it looks at
// `pg_config --bindir`, then PATH, then /usr/lib/postgresql/*/bin, newest major first.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { aptInstall, canAptInstall } from './apt-install.mjs';

/** True when `dir` holds both server binaries. */
function holdsServer(dir) {
  return existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres'));
}

/** The directory holding `initdb` and `postgres`, or `undefined` when there is none. */
export function findPostgresBin() {
  const config = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (config.status === 0 && holdsServer(config.stdout.trim())) return config.stdout.trim();
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    // A symlink on PATH (e.g. /usr/local/bin/initdb) points at the real bin directory.
    const initdb = join(dir, 'initdb');
    if (dir !== '' && existsSync(initdb)) {
      const real = dirname(realpathSync(initdb));
      if (holdsServer(real)) return real;
    }
  }
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const majors = readdirSync(debian)
      .filter((v) => /^\d+(\.\d+)?$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    for (const v of majors) if (holdsServer(join(debian, v, 'bin'))) return join(debian, v, 'bin');
  }
  return undefined;
}

/** Finds the binaries, installing them first when that is possible here; exits non-zero otherwise. */
function main() {
  let bin = findPostgresBin();
  if (bin !== undefined) {
    console.log(`ensure-postgres: PostgreSQL server binaries in ${bin}`);
    return;
  }
  if (canAptInstall() && !process.env.LIMITS_POSTGRES_NO_INSTALL) {
    aptInstall(
      'postgresql',
      'ensure-postgres',
      'the wrap-postgres example starts a throwaway PostgreSQL and initdb is not found (LIMITS_POSTGRES_NO_INSTALL=1 only checks)',
    );
    bin = findPostgresBin();
    if (bin !== undefined) {
      console.log(`ensure-postgres: PostgreSQL server binaries in ${bin}`);
      return;
    }
    console.error('ensure-postgres: postgresql was installed but initdb is still not found');
    process.exit(1);
  }
  console.error(
    [
      'ensure-postgres: the wrap-postgres example needs the PostgreSQL server binaries (initdb, postgres;',
      '  version 12 or later), found through `pg_config --bindir`, PATH or /usr/lib/postgresql/*/bin.',
      '  Debian/Ubuntu: sudo apt-get install -y postgresql',
      '  macOS:         brew install postgresql@16 (and put its bin directory on PATH)',
      '  (run as root on a Debian-based CI image and this script installs it itself)',
    ].join('\n'),
  );
  process.exit(1);
}

if (
  process.argv[1] !== undefined &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  main();
}
