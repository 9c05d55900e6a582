import { execFileSync, fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisQuotaStore } from '../src/index.js';
import { startRedis, type TestRedis } from './support/redis.js';

interface Verdict {
  user: string;
  refused: number;
  counts: number[];
  failed: boolean;
}

const pkg = fileURLToPath(new URL('..', import.meta.url));
const buildDir = `${pkg}node_modules/.quota-test-build`;
let redis: TestRedis;

beforeAll(async () => {
  // The child processes run plain Node: they load the store compiled from this source tree.
  execFileSync(`${pkg}node_modules/.bin/tsc`, ['-p', 'tsconfig.build.json', '--outDir', buildDir], {
    cwd: pkg,
  });
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

/** Runs `processes` consumer processes, released together, and returns every verdict. */
async function runFleet(quota: string, processes: string[][], callsPerUser: number) {
  const storeUrl = pathToFileURL(`${buildDir}/index.js`).href;
  const script = fileURLToPath(new URL('./quota.consumer.mjs', import.meta.url));
  const children = processes.map((users) =>
    fork(script, [storeUrl, String(redis.port), quota, users.join(','), String(callsPerUser)], {
      stdio: 'inherit',
    }),
  );
  try {
    const results = children.map(
      (child) =>
        new Promise<Verdict[]>((resolve, reject) => {
          child.on('message', (m: { verdicts?: Verdict[] }) => {
            if (m.verdicts) resolve(m.verdicts);
          });
          child.once('exit', (code) => reject(new Error(`consumer exited with ${code}`)));
        }),
    );
    await Promise.all(
      children.map((child) => new Promise((resolve) => child.once('message', resolve))),
    );
    for (const child of children) child.send('go');
    return (await Promise.all(results)).flat();
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  }
}

describe('RedisQuotaStore shared by several processes', () => {
  it('never lets three processes exceed the account cap (3) or the global cap (10), and never charges a refused call', async () => {
    const quota = `fleet-${Date.now()}`;
    // Three processes, eight users (some shared between processes), 4 calls per user per process.
    const verdicts = await runFleet(
      quota,
      [
        ['a', 'b', 'c'],
        ['c', 'd', 'e', 'f'],
        ['a', 'f', 'g', 'h'],
      ],
      4,
    );
    expect(verdicts).toHaveLength(44);
    expect(verdicts.some((v) => v.failed)).toBe(false);
    const accepted = verdicts.filter((v) => v.refused === -1);
    expect(accepted).toHaveLength(10); // demand is 44: the global cap is reached exactly
    const perUser = new Map<string, number>();
    for (const v of accepted) perUser.set(v.user, (perUser.get(v.user) ?? 0) + 1);
    for (const n of perUser.values()) expect(n).toBeLessThanOrEqual(3);
    // The counts each accepted call saw are 1..10 on the global axis: one charge each, none lost.
    expect(accepted.map((v) => v.counts[1]).sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ]);
    // One call crossed 66 % of the global cap (count 6 → 7): the alert fires once, fleet-wide.
    expect(
      accepted.filter((v) => (v.counts[1] ?? 0) - 1 < 6.6 && (v.counts[1] ?? 0) >= 6.6),
    ).toHaveLength(1);
    // Redis holds exactly what was accepted: refused calls (global or account) charged nothing.
    const client = new Redis(redis.port, '127.0.0.1');
    try {
      const store = new RedisQuotaStore(client, { onFailure: 'closed' });
      expect(Number(await client.hget(store.key(quota, 'global', 'all'), 'n'))).toBe(10);
      for (const user of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'])
        expect(Number((await client.hget(store.key(quota, 'account', user), 'n')) ?? 0)).toBe(
          perUser.get(user) ?? 0,
        );
    } finally {
      client.disconnect();
    }
  });
});
