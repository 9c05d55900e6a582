// Heap bytes per call waiting in a guard's queue: what 10,000 calls fired at once keep alive while
// they wait, and so what every young-generation collection during such a burst copies.
//
//   node bench/guard-queue-memory.mjs              this build, timeout off and `timeoutMs: 10000`
//   LIMITS_BENCH_OTHER_BREAKER=/tmp/old/packages/limits-breaker node bench/guard-queue-memory.mjs
//                                                  the same for another build (a worktree), alternated
//
// Each (build, timeout, repetition) runs in a fresh `node --expose-gc` child: a guard with limit 1 and
// an action that waits on one shared promise; one call takes the permit, heapUsed is read after two
// forced collections, 100,000 more calls are fired (each queued; their promises go into an array
// allocated beforehand), heapUsed is read again the same way. Bytes per queued call = the difference /
// 100,000: the guard's record of the call, the limiter's waiter, the caller's promise and what they
// hold. Three repetitions per cell, median reported.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { guardOfAnyBuild, median, packageEntryUrl } from './harness.mjs';

const N = 100_000;
const REPS = 3;
const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '..');

async function child(dir, timeoutMs) {
  const { guard } = await import(packageEntryUrl(dir));
  let open;
  const gate = new Promise((resolve) => {
    open = resolve;
  });
  const g = guardOfAnyBuild(guard, () => gate, timeoutMs, { limit: 1, maxQueued: 2 * N });
  const promises = new Array(N + 1);
  promises[0] = g.fire();
  globalThis.gc();
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 1; i <= N; i++) promises[i] = g.fire();
  globalThis.gc();
  globalThis.gc();
  const after = process.memoryUsage().heapUsed;
  if (g.limiter.queued !== N) throw new Error(`expected ${N} queued, saw ${g.limiter.queued}`);
  open(1);
  await Promise.all(promises);
  await g.shutdown();
  process.stdout.write(String((after - before) / N));
}

const childArg = process.argv.find((a) => a.startsWith('--child='));
if (childArg !== undefined) {
  const [dir, timeout] = childArg.slice(8).split('|');
  await child(dir, timeout === 'off' ? false : Number(timeout));
} else {
  const builds = [['this build', path.join(ROOT, 'packages', 'limits-breaker')]];
  const other = process.env.LIMITS_BENCH_OTHER_BREAKER;
  if (other !== undefined) builds.push([`other build (${other})`, path.resolve(other)]);
  const cells = [];
  for (const [name, dir] of builds) {
    for (const timeout of ['off', '10000']) cells.push({ name, dir, timeout, samples: [] });
  }
  for (let rep = 0; rep < REPS; rep++) {
    for (const cell of cells) {
      const out = execFileSync(
        process.execPath,
        ['--expose-gc', SELF, `--child=${cell.dir}|${cell.timeout}`],
        { encoding: 'utf8' },
      );
      cell.samples.push(Number(out));
    }
  }
  console.log(
    `Heap bytes per queued guard call (${N.toLocaleString('en-US')} queued, median of ${REPS}), Node ${process.version}\n`,
  );
  console.log('| build | timeout | bytes per queued call | repetitions |');
  console.log('|---|---|---:|---|');
  for (const c of cells) {
    const t = c.timeout === 'off' ? 'off' : `timeoutMs: ${c.timeout}`;
    console.log(
      `| ${c.name} | ${t} | ${median(c.samples).toFixed(0)} | ${c.samples.map((s) => s.toFixed(0)).join(', ')} |`,
    );
  }
}
