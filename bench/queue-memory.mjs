// Heap bytes per queued waiter, and the time to drain 100,000 queued waiters.
//
//   node --expose-gc bench/queue-memory.mjs            3 repetitions (about a minute)
//   node --expose-gc bench/queue-memory.mjs --quick    1 repetition, 20,000 waiters
//   node --expose-gc bench/queue-memory.mjs --reps=5 --only=semaphore,limits-acquire
//   LIMITS_CORE=/abs/path/dist/index.js node --expose-gc bench/queue-memory.mjs   another limits-core build
//
// Every (contender, mode, repetition) runs in a fresh `node --expose-gc` child process, so contenders
// never share a heap or JIT state; the parent runs them one at a time, round-robin, and reports medians.
//
// mode "mem": capacity 1, the one permit/slot is held, then N waiters are enqueued; the caller keeps
//   each returned promise in an array allocated before the baseline (so the array is not counted) and
//   attaches nothing to it. heapUsed is read after two global.gc() calls before and after;
//   bytes/waiter = delta / N. This is what the library (plus the promise it returns) costs per waiter.
// mode "drain": the same queue, but every waiter also has the caller's continuation attached (the
//   `then` that runs the trivial task and releases at once — for the run()-style APIs the task is
//   passed in, so the library holds it). After a warm-up (10,000, 10,000 and N waiters through the
//   same code path, not timed; the heap is measured in the third, the "with continuation" column),
//   N waiters are queued, the held permit is released and we time until all N tasks have run. Each
//   process does this 5 times and reports the median round; garbage-collection time inside the timed window
//   (from PerformanceObserver 'gc' entries) is reported next to it, because it is most of the spread.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { distFingerprint as fingerprint, median } from './harness.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const QUICK = flag('quick');
const N = Number(opt('n') ?? (QUICK ? 20_000 : 100_000));
const REPS = Number(opt('reps') ?? (QUICK ? 1 : 3));
const WARMUP_N = 10_000;
/** Timed drains per process (after the warm-up); the process reports their median. */
const ROUNDS = 5;

const CONTENDERS = {
  semaphore: 'hand-written: counter + array of resolve functions',
  'semaphore-run':
    'the same semaphore with `run(task)`: `await acquire(); try { return await task(); } finally { release(); }` (the reference for limits-run, which also awaits the task before releasing)',
  'p-limit': 'p-limit 7.3.3, `pLimit(1)`, `limit(task)`',
  'p-queue': 'p-queue 9.3.5, `new PQueue({ concurrency: 1 })`, `queue.add(task)`',
  'limits-acquire': 'limits-core `new Limiter({ limit: 1, maxQueued: 200000 })`, `acquire()`',
  'limits-run': 'limits-core, same limiter, `run(task)`',
  'limits-timeout':
    'limits-core `new Limiter({ limit: 1, maxQueued: 200000, initialServiceMs: 0 })`, `acquire({ timeoutMs: 60000 })` (waiter also in the expiry heap)',
  'limits-maxwait':
    'limits-core `new Limiter({ limit: 1, maxQueued: 200000, maxQueueWaitMs: 60000 })`, `acquire()` (expiry heap, no deadline admission)',
  'limits-acquire-noleaks':
    "limits-acquire with `trackLeaks: 'off'` (what leak detection, on by default, costs an `acquire()` caller)",
  'limits-maxwait-noleaks': "limits-maxwait with `trackLeaks: 'off'`",
};

// ---------------------------------------------------------------------------------------------
// Contenders. Each returns:
//   hold()            takes the single permit/slot (resolves once it is held)
//   enqueue(task)     queues one waiter; returns the caller's promise. With `task`, the waiter runs it
//                     and releases at once (the caller's continuation); without, nothing is attached.
//   release()         releases the held permit/slot
//   queued()          waiters currently queued (sanity check)

/**
 * A contender whose API is `run(task)` (semaphore-run, p-limit, p-queue, limits-run): the held slot is
 * a task that waits for `release()`; queued waiters are `run(task)` calls.
 */
function runContender(run, queued) {
  let releaseHeld;
  const noop = () => {};
  return {
    hold() {
      run(() => new Promise((r) => (releaseHeld = r)));
      return new Promise((r) => setImmediate(r));
    },
    enqueue: (task) => run(task ?? noop),
    release: () => releaseHeld(),
    queued,
  };
}

async function makeContender(name) {
  switch (name) {
    case 'semaphore':
    case 'semaphore-run': {
      let active = 0;
      let queue = [];
      let head = 0;
      const acquire = () => {
        if (active < 1) {
          active++;
          return Promise.resolve();
        }
        return new Promise((resolve) => queue.push(resolve));
      };
      const release = () => {
        if (head < queue.length) {
          const next = queue[head];
          queue[head++] = undefined;
          if (head === queue.length) {
            queue = [];
            head = 0;
          }
          next();
        } else {
          active--;
        }
      };
      if (name === 'semaphore-run') {
        const run = async (fn) => {
          await acquire();
          try {
            return await fn();
          } finally {
            release();
          }
        };
        return runContender(run, () => queue.length - head);
      }
      return {
        hold: () => acquire(),
        enqueue: (task) =>
          task
            ? acquire().then(() => {
                task();
                release();
              })
            : acquire(),
        release,
        queued: () => queue.length - head,
      };
    }
    case 'p-limit': {
      const { default: pLimit } = await import('p-limit');
      const limit = pLimit(1);
      return runContender(limit, () => limit.pendingCount);
    }
    case 'p-queue': {
      const { default: PQueue } = await import('p-queue');
      const queue = new PQueue({ concurrency: 1 });
      return runContender(
        (task) => queue.add(task),
        () => queue.size,
      );
    }
    case 'limits-acquire':
    case 'limits-timeout':
    case 'limits-maxwait':
    case 'limits-acquire-noleaks':
    case 'limits-maxwait-noleaks': {
      const { Limiter } = await importLimitsCore();
      const options = { limit: 1, maxQueued: 200_000 };
      if (name === 'limits-timeout') options.initialServiceMs = 0;
      if (name.startsWith('limits-maxwait')) options.maxQueueWaitMs = 60_000;
      if (name.endsWith('-noleaks')) options.trackLeaks = 'off';
      const limiter = new Limiter(options);
      const acquire =
        name === 'limits-timeout'
          ? () => limiter.acquire({ timeoutMs: 60_000 })
          : () => limiter.acquire();
      let held;
      return {
        async hold() {
          held = await limiter.acquire();
        },
        enqueue: (task) =>
          task
            ? acquire().then((permit) => {
                task();
                permit.success();
              })
            : acquire(),
        release: () => held.success(),
        queued: () => limiter.queued,
      };
    }
    case 'limits-run': {
      const { Limiter } = await importLimitsCore();
      const limiter = new Limiter({ limit: 1, maxQueued: 200_000 });
      return runContender(
        (task) => limiter.run(task),
        () => limiter.queued,
      );
    }
  }
  throw new Error(`unknown contender ${name}`);
}

async function importLimitsCore() {
  return process.env.LIMITS_CORE ? import(process.env.LIMITS_CORE) : import('limits-core');
}

const tick = () => new Promise((r) => setImmediate(r));

function heapAfterGc() {
  global.gc();
  global.gc();
  return process.memoryUsage().heapUsed;
}

async function childMem(name) {
  const held = new Array(N).fill(undefined);
  const c = await makeContender(name);
  await c.hold();
  await tick();
  const before = heapAfterGc();
  for (let i = 0; i < N; i++) held[i] = c.enqueue();
  await tick();
  const after = heapAfterGc();
  if (c.queued() !== N) throw new Error(`${name}: ${c.queued()} queued, expected ${N}`);
  return { bytesPerWaiter: (after - before) / N, held: held.length, dist: distFingerprint(name) };
}

async function childDrain(name) {
  const c = await makeContender(name);
  let ran = 0;
  let target = 0;
  let onDone;
  const task = () => {
    if (++ran === target) onDone();
  };
  const round = async (n, measure) => {
    const held = new Array(n).fill(undefined);
    ran = 0;
    target = n;
    const done = new Promise((r) => (onDone = r));
    await c.hold();
    await tick();
    const before = measure ? heapAfterGc() : 0;
    for (let i = 0; i < n; i++) held[i] = c.enqueue(task);
    await tick();
    if (c.queued() !== n) throw new Error(`${name}: ${c.queued()} queued, expected ${n}`);
    const after = measure ? heapAfterGc() : 0;
    const t0 = performance.now();
    c.release();
    await done;
    const t1 = performance.now();
    await Promise.all(held);
    await tick();
    if (ran !== n || c.queued() !== 0)
      throw new Error(`${name}: ran ${ran}/${n}, ${c.queued()} queued`);
    return { ms: t1 - t0, t0, t1, bytesPerWaiter: (after - before) / n };
  };
  const gcs = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push(e);
  });
  obs.observe({ entryTypes: ['gc'] });
  // Warm-up: JIT tier-up and heap growth happen here, not in the timed rounds. The heap is measured
  // (with forced GCs) in an untimed round: a forced full GC right before a timed drain throws away
  // optimized code that embeds objects it collected (V8 "weak objects" deopts), and the drain would
  // then time the re-optimization, not the steady state.
  await round(WARMUP_N, false);
  await round(WARMUP_N, false);
  const { bytesPerWaiter: bytesWithContinuation } = await round(N, true);
  await round(N, false);
  const rounds = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round(N, false));
  await new Promise((r) => setTimeout(r, 50)); // let the observer deliver
  obs.disconnect();
  for (const r of rounds) {
    r.gcMs = gcs
      .filter((e) => e.startTime < r.t1 && e.startTime + e.duration > r.t0)
      .reduce(
        (sum, e) => sum + Math.min(e.startTime + e.duration, r.t1) - Math.max(e.startTime, r.t0),
        0,
      );
  }
  const mid = [...rounds].sort((a, b) => a.ms - b.ms)[ROUNDS >> 1];
  return {
    nsPerWaiter: (mid.ms * 1e6) / N,
    drainMs: mid.ms,
    gcMs: mid.gcMs,
    roundsMs: rounds.map((r) => r.ms),
    roundsGcMs: rounds.map((r) => r.gcMs),
    bytesWithContinuation,
    dist: distFingerprint(name),
  };
}

function distFingerprint(name) {
  // Which build of limits-core ran (dist could be rebuilt while we run).
  if (!name.startsWith('limits')) return undefined;
  return fingerprint(
    process.env.LIMITS_CORE
      ? path.dirname(process.env.LIMITS_CORE)
      : path.join(HERE, 'node_modules', 'limits-core', 'dist'),
  );
}

// ---------------------------------------------------------------------------------------------

function runChild(name, mode) {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', SELF, `--child=${name}`, `--mode=${mode}`, `--n=${N}`],
    {
      encoding: 'utf8',
      timeout: 120_000,
    },
  );
  return JSON.parse(out.trim().split('\n').at(-1));
}

async function parent() {
  const names = opt('only')?.split(',') ?? Object.keys(CONTENDERS);
  const res = Object.fromEntries(names.map((n) => [n, { mem: [], drain: [] }]));
  const started = performance.now();
  for (let rep = 0; rep < REPS; rep++) {
    for (const name of names) {
      res[name].mem.push(runChild(name, 'mem'));
      res[name].drain.push(runChild(name, 'drain'));
    }
  }
  const pkg = (name) =>
    JSON.parse(readFileSync(path.join(HERE, 'node_modules', name, 'package.json'), 'utf8')).version;
  const cmd = `node --expose-gc bench/queue-memory.mjs${args.length ? ` ${args.join(' ')}` : ''}`;
  const lines = [];
  lines.push(
    `Command: \`${process.env.LIMITS_CORE ? `LIMITS_CORE=${process.env.LIMITS_CORE} ` : ''}${cmd}\``,
  );
  lines.push(
    `Node ${process.version}, ${os.cpus()[0].model} (${os.cpus().length} CPUs), ${os.platform()} ${os.arch()}; ` +
      `limits-core ${pkg('limits-core')}, p-limit ${pkg('p-limit')}, p-queue ${pkg('p-queue')}. ` +
      `${N.toLocaleString('en-US')} waiters, median of ${REPS} fresh processes per cell; wall ${((performance.now() - started) / 1000).toFixed(0)} s.`,
  );
  lines.push('');
  // Each contender is compared with the semaphore of the same shape: run() with the semaphore's run().
  const refOf = (name) =>
    name === 'limits-run' && res['semaphore-run'] ? 'semaphore-run' : 'semaphore';
  const drainNs = (name) => median(res[name]?.drain.map((d) => d.nsPerWaiter) ?? [Number.NaN]);
  lines.push(
    `| contender | heap bytes / waiter (bare) | runs (bare) | heap bytes / waiter with caller continuation | drain ms (${N.toLocaleString('en-US')} waiters) | of which GC ms | ns / waiter | vs semaphore (same API) | best round ms (vs semaphore) |`,
  );
  lines.push('|---|--:|---|--:|--:|--:|--:|--:|--:|');
  const best = (n) => Math.min(...res[n].drain.flatMap((d) => d.roundsMs));
  for (const name of names) {
    const mem = res[name].mem.map((m) => m.bytesPerWaiter);
    const drain = res[name].drain;
    const ns = median(drain.map((d) => d.nsPerWaiter));
    lines.push(
      `| ${name} | ${median(mem).toFixed(0)} | ${mem.map((m) => m.toFixed(0)).join(', ')} | ${median(drain.map((d) => d.bytesWithContinuation)).toFixed(0)} | ${median(drain.map((d) => d.drainMs)).toFixed(1)} | ${median(drain.map((d) => d.gcMs)).toFixed(1)} | ${ns.toFixed(0)} | ${(ns / drainNs(refOf(name))).toFixed(2)}× | ${best(name).toFixed(1)} (${res[refOf(name)] ? (best(name) / best(refOf(name))).toFixed(2) : '?'}×) |`,
    );
  }
  lines.push('');
  lines.push(
    'Drain, per process (median of its rounds, ns/waiter): ' +
      names
        .map((n) => `${n} ${res[n].drain.map((d) => d.nsPerWaiter.toFixed(0)).join('/')}`)
        .join('; '),
  );
  lines.push('');
  lines.push(
    'All timed rounds, ms (GC ms): ' +
      names
        .map(
          (n) =>
            `${n} ${res[n].drain.flatMap((d) => d.roundsMs.map((ms, i) => `${ms.toFixed(0)} (${d.roundsGcMs[i].toFixed(0)})`)).join(', ')}`,
        )
        .join('; '),
  );
  const dists = [
    ...new Set(
      names.flatMap((n) => [...res[n].mem, ...res[n].drain].map((r) => r.dist)).filter(Boolean),
    ),
  ];
  lines.push('');
  lines.push(
    `limits-core dist fingerprint(s): ${dists.join(', ')}${dists.length > 1 ? ' — WARNING: dist changed during the run, results mix builds' : ''}`,
  );
  lines.push('');
  lines.push('Contenders:');
  lines.push('');
  for (const name of names) lines.push(`- ${name}: ${CONTENDERS[name]}`);
  console.log(lines.join('\n'));
}

if (opt('child')) {
  if (typeof global.gc !== 'function') throw new Error('run with node --expose-gc');
  const name = opt('child');
  const r = opt('mode') === 'mem' ? await childMem(name) : await childDrain(name);
  console.log(JSON.stringify(r));
  process.exit(0);
} else {
  if (typeof global.gc !== 'function') {
    console.error('run with: node --expose-gc bench/queue-memory.mjs');
    process.exit(1);
  }
  await parent();
}
