// The installers the test command may run as root (scripts/apt-install.mjs and its callers), against a
// stand-in `apt-get` on PATH that only prints how it was called: nothing is installed.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const scripts = fileURLToPath(new URL('..', import.meta.url));
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
const bins = [];
afterEach(() => {
  for (const dir of bins.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A folder holding an `apt-get` that echoes its arguments and, on `install`, runs `then(bin)` (shell
 * code given the folder's path).
 */
function fakeAptGet(then = () => ':') {
  const bin = mkdtempSync(join(tmpdir(), 'limits-fake-apt-'));
  bins.push(bin);
  writeFileSync(
    join(bin, 'apt-get'),
    `#!/bin/sh\necho "apt-get $*"\nif [ "$1" = install ]; then\n${then(bin)}\nfi\n`,
  );
  chmodSync(join(bin, 'apt-get'), 0o755);
  return bin;
}

describe.skipIf(process.platform === 'win32')('installing a missing server with apt-get', () => {
  it('says which package it installs and why, in one line, before apt-get runs', () => {
    const bin = fakeAptGet();
    const r = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { aptInstall } from ${JSON.stringify(join(scripts, 'apt-install.mjs'))};
         aptInstall('redis-server', 'ensure-redis', 'the tests start a real Redis');`,
      ],
      { encoding: 'utf8', env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH}` } },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.split('\n')).toEqual([
      'ensure-redis: installing the Debian package redis-server with apt-get (as root): the tests start a real Redis',
      'apt-get update',
      'apt-get install -y --no-install-recommends redis-server',
      '',
    ]);
  });

  it.runIf(isRoot)(
    'ensure-redis.mjs, as root without redis-server, announces the install and its reason before running apt-get',
    () => {
      // The stand-in "installs" redis-server and redis-cli as scripts that answer --version.
      const bin = fakeAptGet((dir) =>
        ['redis-server', 'redis-cli']
          .map((c) => `printf '#!/bin/sh\\nexit 0\\n' > '${dir}/${c}'; /bin/chmod +x '${dir}/${c}'`)
          .join('\n'),
      );
      const r = spawnSync(process.execPath, [join(scripts, 'ensure-redis.mjs')], {
        encoding: 'utf8',
        env: { PATH: bin },
      });
      expect(r.status, r.stderr).toBe(0);
      const lines = r.stdout.split('\n');
      expect(lines[0]).toMatch(
        /^ensure-redis: installing the Debian package redis-server with apt-get \(as root\): limits-redis's tests start a real Redis and redis-server is not on PATH/,
      );
      expect(lines.slice(1, 3)).toEqual([
        'apt-get update',
        'apt-get install -y --no-install-recommends redis-server',
      ]);
    },
  );
});
