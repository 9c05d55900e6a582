// Clock reads per guard call in breaker-overhead.mjs's burst rows: 10,000 `fire()` at once on a guard
// of limit 64 (with `timeoutMs: 10000` and with `timeoutMs: false`), then awaited, three bursts each.
// It counts calls of `performance.now()`, the system clock of limits-core and limits-breaker (and of
// opossum's latency stats), wrapped before the build is loaded; "during fire()" counts the reads of the
// synchronous run that fires the 10,000 calls, "per call" every read until they all settled.
//
//   node bench/clock-reads.mjs                                                  this checkout's build
//   node bench/clock-reads.mjs --breaker=/tmp/old/packages/limits-breaker       another build
//
// Another build: a worktree of the commit, built (see instructions.mjs); its limits-breaker package
// resolves its own limits-core.
import { breakerDirArg, guardOfAnyBuild, packageEntryUrl } from './harness.mjs';

const breakerDir = breakerDirArg();

let reads = 0;
const now = performance.now.bind(performance);
performance.now = () => {
  reads++;
  return now();
};

const { guard } = await import(packageEntryUrl(breakerDir));
const BURST = 10_000;
console.log(`clock reads per guard call, 10,000 fired at once, limit 64 (${breakerDir})`);
for (const timeoutMs of [10_000, false]) {
  const g = guardOfAnyBuild(guard, async () => 1, timeoutMs, { limit: 64, maxQueued: 20_000 });
  const rows = [];
  for (let round = 0; round < 3; round++) {
    const before = reads;
    const all = new Array(BURST);
    for (let i = 0; i < BURST; i++) all[i] = g.fire();
    const during = reads - before;
    await Promise.all(all);
    rows.push(`${during} during fire(), ${((reads - before) / BURST).toFixed(2)} per call`);
  }
  console.log(`timeoutMs ${timeoutMs}: ${rows.join('; ')}`);
  await g.shutdown();
}
