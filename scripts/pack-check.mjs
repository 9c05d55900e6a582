// Installs the packed tarballs the way a user would and uses them (run by `check`, so by `npm test`
// and by .ci/run on Node 20 and Node 24).
//
// 1. `pnpm pack` every package (which rewrites their `workspace:` ranges) into a temp dir, and checks
//    each tarball: LICENSE, README.md and dist/ are in it, no source map, no `workspace:` range, and
//    limits-core is a peer with a range of the others, never a dependency.
// 2. A scratch project in another temp dir: `npm install <the tarballs> opossum@9 prom-client@15
//    undici@7 ioredis@5 @grpc/grpc-js@1.14.7 @types/node@20 typescript@7.0.2`.
// 3. `tsc` typechecks an index.ts that imports limits-core and limits-breaker and uses their types,
//    WITHOUT @types/node (`"types": []`) and without skipLibCheck, so their published .d.ts files must
//    stand on their own; then a node.ts that uses limits-node-http, limits-redis and limits-grpc (Node-only
//    packages: their types name node:http's and ioredis's, so this one has @types/node).
// 4. Node runs an .mjs that imports every package (ESM), makes one guarded call and one limited fetch
//    of a data: URL, then `require()`s them (ESM-only packages: works where Node has require(esm),
//    20.19+ / 22.12+; see the READMEs).
//
// Needs the packages built (`pnpm run build`) and the npm registry. Temp dirs are removed at the end.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const packages = [
  'limits-core',
  'limits-breaker',
  'limits-node-http',
  'limits-redis',
  'limits-lab',
  'limits-grpc',
];
const started = performance.now();
const isWindows = process.platform === 'win32';

function sh(cmd, args, cwd) {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: 'pipe', shell: isWindows });
  } catch (error) {
    console.error(`pack-check: \`${cmd} ${args.join(' ')}\` failed in ${cwd}`);
    console.error(String(error.stdout ?? ''));
    console.error(String(error.stderr ?? ''));
    throw error;
  }
}

function fail(message) {
  throw new Error(`pack-check: ${message}`);
}

const work = mkdtempSync(join(tmpdir(), 'limits-pack-'));
try {
  // 1. Pack.
  const tarDir = join(work, 'tarballs');
  mkdirSync(tarDir);
  const tarballs = {};
  for (const name of packages) {
    const before = new Set(readdirSync(tarDir));
    sh(
      'npx',
      ['-y', 'pnpm@12.4.2', 'pack', '--pack-destination', tarDir],
      join(root, 'packages', name),
    );
    const made = readdirSync(tarDir).filter((f) => !before.has(f));
    if (made.length !== 1) fail(`expected one tarball for ${name}, got ${made.join(', ')}`);
    tarballs[name] = join(tarDir, made[0]);
    const files = sh('tar', ['-tzf', tarballs[name]], tarDir).split('\n').filter(Boolean);
    for (const wanted of [
      'package/LICENSE',
      'package/README.md',
      'package/dist/index.js',
      'package/dist/index.d.ts',
    ]) {
      if (!files.includes(wanted)) fail(`${name}'s tarball lacks ${wanted}`);
    }
    const maps = files.filter((f) => f.endsWith('.map'));
    if (maps.length > 0)
      fail(`${name}'s tarball ships source maps to a src/ it does not ship: ${maps[0]}`);
    const manifest = sh('tar', ['-xOzf', tarballs[name], 'package/package.json'], tarDir);
    if (manifest.includes('workspace:'))
      fail(`${name}'s packed package.json keeps a workspace: range`);
    const pkg = JSON.parse(manifest);
    if (name !== 'limits-core') {
      // One copy of limits-core, the application's: a peer with a range, not a pinned dependency.
      const peer = pkg.peerDependencies?.['limits-core'];
      if (!/^\^\d/.test(peer ?? '')) fail(`${name}'s peer range for limits-core is ${peer}`);
      if (pkg.dependencies?.['limits-core'] !== undefined) fail(`${name} depends on limits-core`);
    }
  }

  // 2. A scratch project that installs the tarballs.
  const app = join(work, 'app');
  mkdirSync(app);
  writeFileSync(
    join(app, 'package.json'),
    `${JSON.stringify({ name: 'scratch', private: true, type: 'module' }, null, 2)}\n`,
  );
  sh(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      '--loglevel=error',
      ...packages.map((name) => tarballs[name]),
      'opossum@9',
      'prom-client@15',
      'undici@7',
      'ioredis@5',
      '@grpc/grpc-js@1.14.7',
      '@types/node@20',
      'typescript@7.0.2',
    ],
    app,
  );

  // 3. Typecheck against the published .d.ts files, with no @types/node.
  writeFileSync(
    join(app, 'tsconfig.json'),
    `${JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: [],
        },
        include: ['index.ts'],
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(
    join(app, 'index.ts'),
    `import {
  type LimitAlgorithm,
  LimitExceededError,
  Limiter,
  type LimiterSnapshot,
  type Permit,
  type Sample,
  VegasLimit,
} from 'limits-core';
import { CircuitOpenError, type Guard, type GuardStats, guard } from 'limits-breaker';

const halving: LimitAlgorithm = {
  limit: 10,
  update(sample: Sample) {
    return sample.dropped ? this.limit / 2 : this.limit;
  },
};
const limiter = new Limiter({ algorithm: new VegasLimit({ maxLimit: 50 }), probeSlots: 2, maxQueued: 10 });
const fixed = new Limiter({ algorithm: halving });

export async function once(): Promise<number> {
  const permit: Permit = await limiter.acquire({ timeoutMs: 100 });
  try {
    return permit.cost;
  } finally {
    permit.success();
  }
}

const g: Guard<[string], number> = guard<[string], number>(async (ctx, id: string) => (ctx.signal.aborted ? 0 : id.length), {
  limiter: fixed,
  fallback: () => -1,
});
export async function call(): Promise<[number, GuardStats, LimiterSnapshot]> {
  try {
    return [await g.fire('42'), g.stats(), limiter.snapshot()];
  } catch (error) {
    if (error instanceof LimitExceededError || error instanceof CircuitOpenError) throw error;
    throw new Error('unexpected', { cause: error });
  }
}
`,
  );
  sh(process.execPath, [join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], app);

  // 3b. The Node-only packages, with @types/node.
  writeFileSync(
    join(app, 'tsconfig.node.json'),
    `${JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
        include: ['node.ts'],
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(
    join(app, 'node.ts'),
    `import { createServer } from 'node:http';
import { Limiter, MemoryQuotaStore, Quota, type QuotaResult } from 'limits-core';
import { limitFetch, limitInterceptor, loadShed, registerMetrics, retryAfterMs } from 'limits-node-http';
import { RedisQuotaStore } from 'limits-redis';
import { Server, type Interceptor } from '@grpc/grpc-js';
import { limitGrpcClient, loadShedGrpc } from 'limits-grpc';
import { Agent } from 'undici';
import { Registry } from 'prom-client';

const limiter = new Limiter({ limit: 10, maxQueued: 5 });
const api: typeof fetch = limitFetch(fetch, { limiter, timeoutMs: 1000 });
export async function get(): Promise<number | undefined> {
  return retryAfterMs(await api('https://example.com/'));
}
export const agent = new Agent().compose(limitInterceptor({ limiter }));
const shed = loadShed({ limiter });
export const server = createServer(shed.wrap((_req, res) => res.end('ok')));
export const metrics = registerMetrics(new Registry(), limiter, { limiter: 'app' });
const quota = new Quota({
  windowMs: 60_000,
  store: new MemoryQuotaStore(),
  axes: [{ name: 'account', key: (id: string) => id, limit: 30, status: 429 }],
});
export const judged: Promise<QuotaResult> = quota.consume('acct-1');
export type Store = RedisQuotaStore;
export const grpcClient: Interceptor = limitGrpcClient({ limiter, criticality: 'sheddable' });
export const grpcServer = new Server({ interceptors: [loadShedGrpc({ limiter })] });
`,
  );
  sh(
    process.execPath,
    [join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(app, 'tsconfig.node.json')],
    app,
  );

  // 4. Run: ESM import and one guarded call, then require().
  writeFileSync(
    join(app, 'run.mjs'),
    `import { Limiter, LimitExceededError } from 'limits-core';
import { guard } from 'limits-breaker';
import { limitFetch, loadShed, limitInterceptor, registerMetrics } from 'limits-node-http';
import { RedisQuotaStore } from 'limits-redis';
import { renderTimelineSvg, TimelineRecorder } from 'limits-lab';
import { limitGrpcClient, loadShedGrpc, grpcGuard } from 'limits-grpc';
import { createRequire } from 'node:module';

for (const [name, f] of Object.entries({ loadShed, limitInterceptor, registerMetrics, RedisQuotaStore, TimelineRecorder, renderTimelineSvg, limitGrpcClient, loadShedGrpc, grpcGuard })) {
  if (typeof f !== 'function') throw new Error(name + ' is not exported');
}
{
  const local = new Limiter({ limit: 1 });
  const api = limitFetch(fetch, { limiter: local });
  const res = await api('data:text/plain,hello');
  if ((await res.text()) !== 'hello' || local.inflight !== 0) throw new Error('limitFetch of a data: URL');
}

if (typeof limitGrpcClient({ limiter: new Limiter({ limit: 1 }) }) !== 'function') throw new Error('limitGrpcClient');

const limiter = new Limiter({ limit: 2 });
const g = guard(async (_ctx, x) => x * 2, { limiter, timeoutMs: 1000 });
const answer = await g.fire(21);
if (answer !== 42) throw new Error('guarded call answered ' + answer);
const held = limiter.tryAcquire();
if (!(held && limiter.inflight === 1)) throw new Error('tryAcquire did not grant');
held.success();
await g.shutdown();
await limiter.close();
if (typeof LimitExceededError !== 'function') throw new Error('LimitExceededError missing');

const require = createRequire(import.meta.url);
let required = 'no';
try {
  required = typeof require('limits-core').Limiter === 'function' && typeof require('limits-breaker').guard === 'function' && typeof require('limits-node-http').limitFetch === 'function' && typeof require('limits-redis').RedisQuotaStore === 'function' ? 'yes' : 'wrong';
} catch (error) {
  required = error.code;
}
console.log(required);
`,
  );
  const out = sh(process.execPath, [join(app, 'run.mjs')], app).trim();
  // require(esm) is on by default from Node 20.19 / 22.12; older Nodes say ERR_REQUIRE_ESM.
  const [major, minor] = process.versions.node.split('.').map(Number);
  const hasRequireEsm =
    major > 22 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19);
  const expected = hasRequireEsm ? 'yes' : 'ERR_REQUIRE_ESM';
  if (out !== expected) fail(`require() of the packages gave ${out}, expected ${expected}`);

  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `pack-check: ${packages.join(', ')} packed, installed, typechecked (core and breaker without @types/node) and run ` +
      `on Node ${process.versions.node} (require: ${out}) in ${seconds} s`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
