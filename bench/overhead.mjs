// Per-call overhead of running a trivial async function through a concurrency limiter.
//
//   node bench/overhead.mjs            full run (about 1 minute)
//   node bench/overhead.mjs --quick    smoke test (about 5 s; numbers are rough, barely warmed up)
//   node bench/overhead.mjs --json=out.json   also write the raw samples as JSON
//
// Design (see bench/README.md for details):
// - Every contender runs the same `task` (an async function resolving to 1) and must return its
//   value; each measurement checks the sum, the number of task calls and that the limiter is idle
//   afterwards, and throws if anything is off.
// - Each (contender, mode) cell lives in its own child process (with --quick, one per contender),
//   so its call sites only ever see one contender (no megamorphic loop shared by all contenders, no
//   JIT feedback or garbage leaking from one contender into the next). The parent warms every cell
//   up, then measures them round-robin, `reps` times, so they share machine noise, and reports the
//   median ns/call and its ratio to the hand-written semaphore in the same mode.
// - Calls are issued in batches of 10,000; between batches the loop yields one macrotask turn
//   (setImmediate), as a service would, so timers (limits-core's stall detector) run normally.

import { fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Limiter, VegasLimit } from 'limits-core';
import pLimit from 'p-limit';
import {
  cpuMicros,
  createSemaphore,
  gitState,
  median,
  newestMtime,
  request,
  yieldToLoop,
} from './harness.mjs';

const LIMIT = 64;
const BATCH = 10_000;
/** maxQueued of the limits-core rows in the 10,000-at-once shape (once the queue exists). */
const MAX_QUEUED = 100_000;

// ---------------------------------------------------------------------------------------------
// The task. One function for every contender. The counter proves each contender really called it
// (it costs about a nanosecond and is paid identically by every row, the bare call included).

let taskCalls = 0;
const task = async () => {
  taskCalls++;
  return 1;
};

// ---------------------------------------------------------------------------------------------
// Does limits-core's Limiter have a waiting queue yet? (Before the queue lands, maxQueued must be 0
// and any other value throws a RangeError.) When it does, the limits-core rows also run in the
// 10,000-calls-at-once shape; until then that shape would just reject with LimitExceededError.

function detectLimiterQueue() {
  try {
    new Limiter({ limit: LIMIT, maxQueued: 20_000 });
    return { available: true, reason: 'new Limiter({ limit: 64, maxQueued: 20000 }) accepted' };
  } catch (error) {
    if (error instanceof RangeError) {
      return { available: false, reason: `RangeError: ${error.message}` };
    }
    throw error;
  }
}
const LIMITER_QUEUE = detectLimiterQueue();

// ---------------------------------------------------------------------------------------------
// Contenders. `create(mode)` returns `{ run, inflight, idle }`:
//   run(fn)     → promise of fn's value, through the contender;
//   inflight()  → calls holding a slot right now (null when the contender does not limit);
//   idle()      → '' when nothing is held or queued, else what is wrong.
// `modes` lists the shapes the contender can run in. To add a row, add one entry.

const MODES = {
  seq: 'sequential (await one at a time)',
  burst: 'concurrent: 10,000 at once, Promise.all',
  workers: 'concurrent: 64 workers loop until 10,000 done',
};

function limiterContender(limiter) {
  return {
    run: (fn) => limiter.run(fn),
    inflight: () => limiter.inflight,
    idle: () =>
      limiter.inflight === 0 && limiter.queued === 0
        ? ''
        : `inflight=${limiter.inflight} queued=${limiter.queued}`,
    info: () => ({ limit: limiter.limit, stalledSamples: limiter.snapshot().stalledSamples }),
  };
}

const pinnedVegas = () => new VegasLimit({ initialLimit: LIMIT, minLimit: LIMIT, maxLimit: LIMIT });
const limiterModes = LIMITER_QUEUE.available ? ['seq', 'burst', 'workers'] : ['seq', 'workers'];
// With a queue, the 10,000-at-once shape needs room for 10,000 − 64 waiters.
const queueOpts = (mode) => (mode === 'burst' ? { maxQueued: MAX_QUEUED } : {});

const CONTENDERS = [
  {
    id: 'bare',
    name: 'bare call (no limiter)',
    modes: ['seq', 'burst', 'workers'],
    create: () => ({ run: (fn) => fn(), inflight: () => null, idle: () => '' }),
  },
  {
    id: 'semaphore',
    name: 'hand-written semaphore (64)',
    modes: ['seq', 'burst', 'workers'],
    create: () => {
      const sem = createSemaphore(LIMIT);
      return {
        run: (fn) => sem.run(fn),
        inflight: () => sem.active,
        idle: () =>
          sem.active === 0 && sem.waiting === 0
            ? ''
            : `active=${sem.active} waiting=${sem.waiting}`,
      };
    },
  },
  {
    id: 'p-limit',
    name: 'p-limit pLimit(64)',
    modes: ['seq', 'burst', 'workers'],
    create: () => {
      const limit = pLimit(LIMIT);
      return {
        run: (fn) => limit(fn),
        inflight: () => limit.activeCount,
        idle: () =>
          limit.activeCount === 0 && limit.pendingCount === 0
            ? ''
            : `activeCount=${limit.activeCount} pendingCount=${limit.pendingCount}`,
      };
    },
  },
  {
    id: 'limiter',
    name: 'limits-core Limiter({ limit: 64 })',
    modes: limiterModes,
    create: (mode) => limiterContender(new Limiter({ limit: LIMIT, ...queueOpts(mode) })),
  },
  {
    id: 'limiter-vegas',
    name: 'limits-core Limiter(VegasLimit 64..64)',
    modes: limiterModes,
    create: (mode) => limiterContender(new Limiter({ limit: pinnedVegas(), ...queueOpts(mode) })),
  },
  {
    id: 'limiter-vegas-sampled',
    name: 'limits-core Limiter(VegasLimit 64..64, sampleEvery: 8)',
    modes: limiterModes,
    create: (mode) =>
      limiterContender(new Limiter({ limit: pinnedVegas(), sampleEvery: 8, ...queueOpts(mode) })),
  },
];
const REFERENCE = 'semaphore';

// ---------------------------------------------------------------------------------------------
// Shapes. Each runs one batch of BATCH calls and returns the sum of the values. `checkLaunched`
// asserts that exactly LIMIT calls hold a slot once the concurrent shapes have launched theirs.
// The limits-core rows run the 10,000-at-once shape only when detectLimiterQueue() says the
// Limiter can queue (see limiterModes / queueOpts above).

function checkLaunched(c) {
  const n = c.inflight();
  if (n !== null && n !== LIMIT) throw new Error(`expected ${LIMIT} calls in flight, saw ${n}`);
}

async function seqBatch(c) {
  const run = c.run;
  let sum = 0;
  for (let i = 0; i < BATCH; i++) {
    const v = await run(task);
    sum += v;
  }
  return sum;
}

async function burstBatch(c) {
  const run = c.run;
  const promises = new Array(BATCH);
  for (let i = 0; i < BATCH; i++) promises[i] = run(task);
  checkLaunched(c);
  const values = await Promise.all(promises);
  let sum = 0;
  for (let i = 0; i < BATCH; i++) sum += values[i];
  return sum;
}

async function workersBatch(c) {
  const run = c.run;
  let started = 0;
  let sum = 0;
  const worker = async () => {
    while (started < BATCH) {
      started++;
      const v = await run(task); // not `sum += await …`: that reads `sum` before the await
      sum += v;
    }
  };
  const workers = new Array(LIMIT);
  for (let i = 0; i < LIMIT; i++) workers[i] = worker();
  checkLaunched(c);
  await Promise.all(workers);
  return sum;
}

const SHAPES = { seq: seqBatch, burst: burstBatch, workers: workersBatch };

/**
 * Runs at least `minBatches` batches and for at least `minMs`; returns `{ ms, calls }`.
 * Throws if any call was lost or faked, or the contender is not idle afterwards.
 */
async function runBatches(c, shape, minBatches, minMs = 0) {
  const callsBefore = taskCalls;
  let sum = 0;
  let batches = 0;
  const t0 = performance.now();
  let ms = 0;
  while (batches < minBatches || ms < minMs) {
    sum += await shape(c);
    await yieldToLoop();
    batches++;
    ms = performance.now() - t0;
  }
  const expected = batches * BATCH;
  if (sum !== expected) throw new Error(`sum of results ${sum}, expected ${expected}`);
  if (taskCalls - callsBefore !== expected) {
    throw new Error(`task called ${taskCalls - callsBefore} times, expected ${expected}`);
  }
  await yieldToLoop(); // let releases that trail the callers' promises land
  const busy = c.idle();
  if (busy !== '') throw new Error(`not idle after the batch: ${busy}`);
  return { ms, calls: expected };
}

// ---------------------------------------------------------------------------------------------
// Child: one (contender, mode) cell, driven by the parent over IPC.

async function child(cellIds) {
  const cells = new Map();
  for (const cellId of cellIds) {
    const [id, mode] = cellId.split(':');
    const contender = CONTENDERS.find((x) => x.id === id);
    if (contender === undefined || !contender.modes.includes(mode)) {
      throw new Error(`unknown cell ${cellId}`);
    }
    cells.set(cellId, { c: contender.create(mode), shape: SHAPES[mode] });
  }
  const gc = typeof globalThis.gc === 'function' ? globalThis.gc : () => {};
  process.on('message', (msg) => {
    handle(msg).then(
      (reply) => process.send(reply),
      (error) => {
        process.send({ error: `${msg.cell ?? cellIds.join(',')}: ${error?.stack ?? error}` });
      },
    );
  });
  async function handle(msg) {
    if (msg.cmd === 'exit') {
      setImmediate(() => process.disconnect());
      return { ok: true, cpuUs: cpuMicros(process.cpuUsage()) };
    }
    const cell = cells.get(msg.cell);
    if (cell === undefined) throw new Error(`cell ${msg.cell} is not hosted here`);
    const { c, shape } = cell;
    if (msg.cmd === 'warmup') {
      // Warm up for msg.warmupMs, then size a measurement to last about msg.targetMs.
      const t0 = performance.now();
      let batches = 0;
      while (performance.now() - t0 < msg.warmupMs || batches < msg.warmupBatches) {
        await runBatches(c, shape, 1);
        batches++;
      }
      // Re-time single batches now that the code is hot; the median resists a preempted one.
      const times = [];
      for (let i = 0; i < msg.probes; i++) times.push((await runBatches(c, shape, 1)).ms);
      return { batches: Math.max(1, Math.ceil(msg.targetMs / median(times))) };
    }
    if (msg.cmd === 'measure') {
      if (msg.rewarm) await runBatches(c, shape, 1); // re-warm caches after idling while others ran
      if (msg.gc) gc();
      await yieldToLoop();
      const cpu0 = process.cpuUsage();
      const { ms, calls } = await runBatches(c, shape, msg.batches, msg.minMs);
      // Own CPU time over wall time: well under 1 means the process was descheduled (contention).
      const onCpu = cpuMicros(process.cpuUsage(cpu0)) / 1000 / ms;
      return { ns: (ms * 1e6) / calls, ms, calls, onCpu, info: c.info?.() };
    }
    throw new Error(`unknown command ${msg.cmd}`);
  }
  process.send({ ready: true });
}

// ---------------------------------------------------------------------------------------------
// Parent.

function packageInfo(name) {
  // The packages' export maps hide package.json, so walk up from the resolved entry point
  // (import.meta.resolve is synchronous from Node 20.6; older: bench/node_modules/<name>).
  let dir;
  try {
    dir = path.dirname(fileURLToPath(import.meta.resolve(name)));
  } catch {
    dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules', name);
  }
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      if (pkg.name === name) return { version: pkg.version, dir };
    } catch {}
    const up = path.dirname(dir);
    if (up === dir) return { version: 'unknown', dir: '' };
    dir = up;
  }
}

/** Newest modification time (ms) of the files under `dir`, or 0. */

/** Warns when limits-core's src changed after its dist was built (the bench runs dist). */
function buildState(dir) {
  const src = newestMtime(path.join(dir, 'src'));
  const dist = newestMtime(path.join(dir, 'dist'));
  if (dist === 0) return 'dist missing';
  return src > dist
    ? `WARNING: src is newer than dist (built ${new Date(dist).toISOString()}), rebuild first`
    : `dist built ${new Date(dist).toISOString()}, newer than src`;
}

/** CPU-seconds all cores have been busy since boot (Linux /proc/stat), or undefined. */
function machineBusy() {
  try {
    const f = readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const total = f.reduce((a, b) => a + b, 0);
    const idle = f[3] + (f[4] ?? 0);
    return { busyS: (total - idle) / 100 }; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

function fmt(x, digits = 1) {
  return x.toFixed(digits);
}

async function parent(args) {
  const quick = args.includes('--quick');
  const jsonArg = args.find((a) => a.startsWith('--json='));
  const unknown = args.filter((a) => a !== '--quick' && !a.startsWith('--json='));
  if (unknown.length > 0) throw new Error(`unknown arguments: ${unknown.join(' ')}`);
  // warmupMs/warmupBatches: warm-up per cell (both minimums); probes: timed batches that size a
  // measurement to ~targetMs; minMs: a measurement runs at least this long whatever the sizing said;
  // rewarm: one untimed batch before each measurement; gc: a forced GC before each measurement;
  // processPer: 'cell' or 'contender'.
  const cfg = quick
    ? { warmupMs: 10, warmupBatches: 1, probes: 1, targetMs: 10, minMs: 0, reps: 5 }
    : { warmupMs: 300, warmupBatches: 5, probes: 7, targetMs: 250, minMs: 200, reps: 9 };
  cfg.rewarm = !quick;
  cfg.gc = !quick;
  cfg.processPer = quick ? 'contender' : 'cell';

  const script = fileURLToPath(import.meta.url);
  const command = [
    'node',
    ...process.execArgv,
    path.relative(process.cwd(), script) || script,
    ...args,
  ].join(' ');
  const core = packageInfo('limits-core');
  const plimit = packageInfo('p-limit');
  const cpus = os.cpus();
  const started = performance.now();
  const machine0 = machineBusy();
  const parentCpu0 = process.cpuUsage();
  let ownCpuUs = 0;

  const cells = [];
  for (const mode of Object.keys(MODES)) {
    for (const x of CONTENDERS) {
      if (x.modes.includes(mode)) cells.push({ id: `${x.id}:${mode}`, contender: x, mode });
    }
  }

  // One process per cell (per contender with --quick, to start fewer); all start in parallel,
  // then sit idle unless it is their turn.
  const groups = new Map();
  for (const cell of cells) {
    const key = cfg.processPer === 'cell' ? cell.id : cell.contender.id;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(cell);
    cell.samples = [];
    cell.ms = [];
    cell.calls = [];
    cell.onCpu = [];
    cell.info = undefined;
  }
  const procs = [];
  for (const group of groups.values()) {
    const proc = fork(script, [`--cells=${group.map((cell) => cell.id).join(',')}`], {
      execArgv: [...process.execArgv, '--expose-gc'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    proc.ready = new Promise((resolve, reject) => {
      proc.once('message', resolve);
      proc.once('exit', (code) => reject(new Error(`cell process exited early (code ${code})`)));
    });
    procs.push(proc);
    for (const cell of group) cell.proc = proc;
  }
  try {
    // Wait until every process has booted, so no warm-up or calibration competes with start-ups.
    await Promise.all(procs.map((proc) => proc.ready));
    for (const cell of cells) {
      const reply = await request(cell.proc, {
        cmd: 'warmup',
        cell: cell.id,
        warmupMs: cfg.warmupMs,
        targetMs: cfg.targetMs,
        probes: cfg.probes,
        warmupBatches: cfg.warmupBatches,
      });
      cell.batches = reply.batches;
    }
    for (let rep = 0; rep < cfg.reps; rep++) {
      for (let k = 0; k < cells.length; k++) {
        const cell = cells[(k + rep) % cells.length]; // rotate the start so no cell always goes first
        const reply = await request(cell.proc, {
          cmd: 'measure',
          cell: cell.id,
          batches: cell.batches,
          minMs: cfg.minMs,
          rewarm: cfg.rewarm,
          gc: cfg.gc,
        });
        cell.samples.push(reply.ns);
        cell.ms.push(reply.ms);
        cell.calls.push(reply.calls);
        cell.onCpu.push(reply.onCpu);
        cell.info = reply.info;
      }
      if (!quick) process.stderr.write(`round ${rep + 1}/${cfg.reps} done\n`);
    }
  } finally {
    for (const proc of procs) {
      if (!proc.connected) continue;
      try {
        ownCpuUs += (await request(proc, { cmd: 'exit' })).cpuUs;
      } catch {}
    }
  }
  ownCpuUs += cpuMicros(process.cpuUsage(parentCpu0));
  const machine = machineBusy();
  const others =
    machine === undefined || machine0 === undefined
      ? undefined
      : (machine.busyS - machine0.busyS - ownCpuUs / 1e6) / ((performance.now() - started) / 1000);

  // Report.
  const out = [];
  out.push(
    `# limits-core overhead benchmark${quick ? ' (--quick: smoke test, rough numbers)' : ''}`,
  );
  out.push('');
  out.push(`- command: \`${command}\` (cwd ${process.cwd()})`);
  out.push(
    `- node ${process.version} (V8 ${process.versions.v8}), ${process.platform}/${process.arch}`,
  );
  out.push(
    `- CPU: ${cpus[0]?.model ?? 'unknown'} × ${cpus.length}; load average at end ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}; other processes used ${
      others === undefined ? 'unknown' : `${fmt(Math.max(0, others) * 100, 0)}% of a core`
    } on average during the run`,
  );
  out.push(
    `- limits-core ${core.version} (${gitState(core.dir)}; ${buildState(core.dir)}), p-limit ${plimit.version}`,
  );
  out.push(
    `- limits-core waiting queue: ${LIMITER_QUEUE.available ? 'available' : 'not available'} (${LIMITER_QUEUE.reason})`,
  );
  out.push(
    `- task: \`async () => { taskCalls++; return 1; }\`, limit ${LIMIT}, batches of ${BATCH} calls, ` +
      `warm-up ${cfg.warmupMs} ms per cell, ${cfg.reps} round-robin measurements of ~${cfg.targetMs} ms (at least ${cfg.minMs} ms) each, ` +
      `one child process per ${cfg.processPer}; wall time ${fmt((performance.now() - started) / 1000)} s`,
  );
  out.push('');
  out.push(
    '| mode | contender | median ns/call | × semaphore | min–max ns/call | spread | calls/measurement | shortest measurement | lowest on-CPU |',
  );
  out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|');
  const rows = [];
  for (const mode of Object.keys(MODES)) {
    const ref = cells.find((c) => c.mode === mode && c.contender.id === REFERENCE);
    const refMedian = median(ref.samples);
    for (const x of CONTENDERS) {
      const cell = cells.find((c) => c.mode === mode && c.contender === x);
      if (cell === undefined) {
        out.push(
          `| ${MODES[mode]} | ${x.name} | skipped: no queue in limits-core yet | | | | | | |`,
        );
        continue;
      }
      const med = median(cell.samples);
      const lo = Math.min(...cell.samples);
      const hi = Math.max(...cell.samples);
      const row = {
        mode,
        contender: x.id,
        name: x.name,
        medianNs: med,
        ratio: med / refMedian,
        samplesNs: cell.samples,
        calls: median(cell.calls),
        msPerMeasurement: cell.ms,
        onCpu: cell.onCpu,
        info: cell.info,
      };
      rows.push(row);
      out.push(
        `| ${MODES[mode]} | ${x.name} | ${fmt(med)} | ${fmt(row.ratio, 2)} | ${fmt(lo)}–${fmt(hi)} | ${fmt(((hi - lo) / med) * 100, 0)}% | ${row.calls.toLocaleString('en-US')} | ${fmt(Math.min(...cell.ms), 0)} ms | ${fmt(Math.min(...cell.onCpu) * 100, 0)}% |`,
      );
    }
  }
  const vegas = rows.filter((r) => r.contender === 'limiter-vegas' && r.info);
  if (vegas.length > 0) {
    out.push('');
    out.push(
      `Vegas rows, at the end (stalled samples counted since the process started): ${vegas.map((r) => `${r.mode}: limit ${r.info.limit}, stalled samples ${r.info.stalledSamples}`).join('; ')}`,
    );
  }
  console.log(out.join('\n'));

  if (jsonArg) {
    const file = jsonArg.slice('--json='.length);
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          command,
          node: process.version,
          cpu: cpus[0]?.model,
          cpus: cpus.length,
          limitsCore: core.version,
          pLimit: plimit.version,
          limiterQueue: LIMITER_QUEUE,
          config: cfg,
          rows,
        },
        null,
        2,
      )}\n`,
    );
  }
}

const cellsArg = process.argv.find((a) => a.startsWith('--cells='));
if (cellsArg) {
  child(cellsArg.slice('--cells='.length).split(',')).catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  parent(process.argv.slice(2)).catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
