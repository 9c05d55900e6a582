// What the per-call overhead benchmarks share (bench/overhead.mjs, bench/breaker-overhead.mjs):
// the floor (two hand-written semaphores), the task, the three batch shapes, the measurement loop
// (batches, warm-up and sizing, one child process per cell, round-robin rounds, medians) and the
// report's environment lines. A script only declares its contenders and prints its table.
//
//   node bench/harness.mjs --self-test   checks both semaphores (also run by the scripts' --quick)
//
// Method, in short (bench/README.md has the long form):
// - every contender runs the same `task` and must return its value; each measurement checks the sum,
//   the number of task calls, how many calls were in flight right after launching, and that the
//   contender is idle afterwards, and throws if anything is off;
// - each (contender, mode) cell lives in its own child process (with --quick, one per contender), so
//   its call sites only ever see one contender; the parent warms every cell up, then measures them
//   round-robin, `reps` times, so they share the machine's noise;
// - calls are issued in batches of BATCH; between batches the loop yields one macrotask turn
//   (setImmediate), as a service would, so timers (stall detector, rolling windows) run normally.

import { execFileSync, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Concurrency of every limited contender, and the number of workers in the workers mode. */
export const LIMIT = 64;
/**
 * Calls per batch (and calls issued at once in the burst mode): 10,000, or `LIMITS_BENCH_BATCH` (an
 * integer from 1,000 to 20,000; the child processes inherit it). A burst's cost depends on where V8's
 * young-generation collections fall within it, which the burst's size moves: timing a few sizes
 * around 10,000 tells a build's cost from that phase.
 */
export const BATCH = batchSize(process.env.LIMITS_BENCH_BATCH);

function batchSize(value) {
  if (value === undefined || value === '') return 10_000;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1_000 || n > 20_000) {
    throw new RangeError(`LIMITS_BENCH_BATCH must be an integer from 1000 to 20000, got ${value}`);
  }
  return n;
}

/** The burst mode's name in the reports, e.g. "10,000 at once". */
export const BURST_LABEL = `${BATCH.toLocaleString('en-US')} at once`;

// ---------------------------------------------------------------------------------------------
// The floor.

/**
 * The floor: the cheapest correct semaphore. A call that gets a slot returns the task's own promise
 * and releases with `p.then(release, release)`; no async function, no await. Waiters sit in a FIFO
 * linked list; a release hands its slot straight to the oldest waiter and starts its task (so
 * `active` never overshoots and nobody can overtake the queue), else frees it. A task that throws
 * synchronously releases at once (and the caller's promise rejects); one that returns a non-promise
 * value is treated as resolved. Release happens exactly once per call.
 */
export function createSemaphore(limit) {
  let active = 0;
  let waiting = 0;
  let head = null;
  let tail = null;
  // Starts `fn`; its release is attached to the promise it returns. Throws if `fn` throws.
  const start = (fn) => {
    const p = Promise.resolve(fn()); // the same promise when fn returns a native one
    p.then(release, release);
    return p;
  };
  const release = () => {
    // Hand the slot over; a waiter whose task throws synchronously passes it to the next one.
    while (head !== null) {
      const waiter = head;
      head = waiter.next;
      if (head === null) tail = null;
      waiting--;
      let p;
      try {
        p = start(waiter.fn);
      } catch (error) {
        waiter.reject(error);
        continue;
      }
      p.then(waiter.resolve, waiter.reject);
      return;
    }
    active--;
  };
  const run = (fn) => {
    if (active < limit) {
      active++;
      try {
        return start(fn);
      } catch (error) {
        release();
        return Promise.reject(error);
      }
    }
    return new Promise((resolve, reject) => {
      const waiter = { fn, resolve, reject, next: null };
      if (tail === null) head = waiter;
      else tail.next = waiter;
      tail = waiter;
      waiting++;
    });
  };
  return {
    run,
    get active() {
      return active;
    },
    get waiting() {
      return waiting;
    },
  };
}

/**
 * A second floor, an `async` function semaphore, kept as a reference row: an
 * `async` function that waits for a slot (FIFO linked list of resolvers, direct hand-over), then
 * `return await fn()` inside try/finally.
 */
export function createAsyncSemaphore(limit) {
  let active = 0;
  let head = null;
  let tail = null;
  let waiting = 0;
  const release = () => {
    if (head !== null) {
      const waiter = head;
      head = waiter.next;
      if (head === null) tail = null;
      waiting--;
      waiter.resolve();
    } else {
      active--;
    }
  };
  const run = async (fn) => {
    if (active < limit) {
      active++;
    } else {
      await new Promise((resolve) => {
        const waiter = { resolve, next: null };
        if (tail === null) head = waiter;
        else tail.next = waiter;
        tail = waiter;
        waiting++;
      });
    }
    try {
      return await fn();
    } finally {
      release();
    }
  };
  return {
    run,
    get active() {
      return active;
    },
    get waiting() {
      return waiting;
    },
  };
}

/** Wraps a semaphore as a contender (`run`, `inflight`, `idle`). */
function semaphoreContender(sem) {
  return {
    run: (fn) => sem.run(fn), // the same wrapper as every other row
    inflight: () => sem.active,
    idle: () =>
      sem.active === 0 && sem.waiting === 0 ? '' : `active=${sem.active} waiting=${sem.waiting}`,
  };
}

/** The two floor rows, as contender entries; the first is the reference. */
export const SEMAPHORES = [
  {
    id: 'semaphore',
    name: 'hand-written semaphore (then), 64',
    create: () => semaphoreContender(createSemaphore(LIMIT)),
  },
  {
    id: 'semaphore-async',
    name: 'hand-written semaphore (async), 64',
    create: () => semaphoreContender(createAsyncSemaphore(LIMIT)),
  },
];

/**
 * Checks a semaphore factory: the caller gets the task's value or error (a synchronous throw becomes
 * a rejection), each call releases exactly once whether its task resolves, rejects, throws or
 * returns a plain value, at most `limit` tasks run at once, waiters start in FIFO order, and nothing
 * is held afterwards. Throws on the first violation.
 */
export async function checkSemaphore(name, create) {
  const fail = (what) => {
    throw new Error(`${name}: ${what}`);
  };
  const settle = (p) =>
    p.then(
      (value) => ({ value }),
      (error) => ({ error }),
    );
  const idle = (sem, when) => {
    if (sem.active !== 0 || sem.waiting !== 0) {
      fail(`${when}: active=${sem.active} waiting=${sem.waiting}, expected 0/0`);
    }
  };
  const flush = () => new Promise((resolve) => setImmediate(resolve));
  const boom = new Error('boom');

  // Each outcome once with a free slot, then with the slot taken (the call waits in the queue).
  const kinds = {
    resolves: async () => 7,
    rejects: async () => {
      throw boom;
    },
    throws: () => {
      throw boom;
    },
    'returns a plain value': () => 7,
  };
  for (const [kind, fn] of Object.entries(kinds)) {
    for (const queued of [false, true]) {
      const sem = create(1);
      let unblock;
      const blocker = queued ? sem.run(() => new Promise((r) => (unblock = r))) : undefined;
      const result = settle(sem.run(fn));
      if (queued) {
        if (sem.waiting !== 1) fail(`a task that ${kind} did not wait behind a held slot`);
        unblock(0);
        await blocker;
      }
      const r = await result;
      const want = kind === 'rejects' || kind === 'throws' ? 'error' : 'value';
      if (want === 'error' ? r.error !== boom : r.value !== 7) {
        fail(`a task that ${kind}${queued ? ' (queued)' : ''}: caller got ${JSON.stringify(r)}`);
      }
      await flush();
      // Released more than once: active < 0 (or a later call would get a second slot); never: > 0.
      idle(sem, `after a task that ${kind}${queued ? ' (queued)' : ''}`);
      const a = sem.run(() => new Promise(() => {}));
      const b = sem.run(async () => 1);
      if (sem.active !== 1 || sem.waiting !== 1) {
        fail(`after a task that ${kind}: the next two calls saw active=${sem.active}`);
      }
      void a;
      void b;
    }
  }

  // FIFO and the bound: limit 3, 40 queued tasks of every kind, finished in a shuffled order.
  const sem = create(3);
  const started = [];
  const pending = [];
  let running = 0;
  let maxRunning = 0;
  const results = [];
  for (let i = 0; i < 40; i++) {
    const kind = i % 4;
    results.push(
      settle(
        sem.run(() => {
          started.push(i);
          if (kind === 2) throw boom; // synchronous: never "running"
          if (kind === 3) return i; // plain value: done at once
          running++;
          maxRunning = Math.max(maxRunning, running);
          return new Promise((resolve, reject) => {
            pending.push(() => {
              running--;
              if (kind === 1) reject(boom);
              else resolve(i);
            });
          });
        }),
      ),
    );
  }
  while (started.length < 40 || pending.length > 0) {
    if (pending.length === 0) fail(`stalled after ${started.length} of 40 tasks started`);
    // Finish the newest running task first, so completion order differs from start order.
    pending.pop()();
    await flush();
  }
  const out = await Promise.all(results);
  for (let i = 0; i < 40; i++) {
    const bad = i % 4 === 1 || i % 4 === 2 ? out[i].error !== boom : out[i].value !== i;
    if (bad) fail(`task ${i}: caller got ${JSON.stringify(out[i])}`);
  }
  if (started.join() !== [...Array(40).keys()].join()) fail(`start order ${started.join(' ')}`);
  if (maxRunning > 3) fail(`${maxRunning} tasks ran at once with limit 3`);
  await flush();
  idle(sem, 'after 40 mixed tasks');
}

/**
 * The VegasLimit of the benchmarks' Vegas rows: pinned to LIMIT, so every row compares the per-call
 * work of the algorithm at the same capacity. `VegasLimit`: the class of the build under test.
 */
export function pinnedVegas(VegasLimit) {
  return new VegasLimit({ initialLimit: LIMIT, minLimit: LIMIT, maxLimit: LIMIT });
}

/** A limits-core `Limiter` as a contender: `run` is `limiter.run`; `info` reports its limit and stalled samples. */
export function limiterContender(limiter) {
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

/** Checks both floor semaphores; resolves with a one-line summary or throws. */
export async function selfTest() {
  await checkSemaphore('semaphore (then)', createSemaphore);
  await checkSemaphore('semaphore (async)', createAsyncSemaphore);
  return 'self-test passed: both semaphores release exactly once (resolve, reject, sync throw, plain value; free or queued), keep FIFO order and the bound';
}

// ---------------------------------------------------------------------------------------------
// The task and the batch shapes. Every contender's `run(fn)` gets `task` (contenders bound to a
// task at creation, like a breaker, ignore the argument and call `task` themselves).

let taskCalls = 0;
/** The task: one function for every contender. The counter proves each contender really called it. */
export const task = async () => {
  taskCalls++;
  return 1;
};

// Right after launching, min(capacity, launched) calls must hold a slot.
function checkLaunched(c, launched, capacity) {
  const n = c.inflight();
  const expected = Math.min(capacity, launched);
  if (n !== null && n !== expected) {
    throw new Error(`expected ${expected} calls in flight after launching ${launched}, saw ${n}`);
  }
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
  const capacity = c.capacity();
  const promises = new Array(BATCH);
  for (let i = 0; i < BATCH; i++) promises[i] = run(task);
  checkLaunched(c, BATCH, capacity);
  const values = await Promise.all(promises);
  let sum = 0;
  for (let i = 0; i < BATCH; i++) sum += values[i];
  return sum;
}

async function workersBatch(c) {
  const run = c.run;
  const capacity = c.capacity();
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
  checkLaunched(c, LIMIT, capacity);
  await Promise.all(workers);
  return sum;
}

/** The batch shapes, by mode. */
export const SHAPES = { seq: seqBatch, burst: burstBatch, workers: workersBatch };

/**
 * Completes a contender: `run(fn)` → promise of the task's value; `inflight()` → calls holding a slot
 * (null: not tracked); `capacity()` → how many may run at once (default LIMIT; Infinity: unlimited);
 * `idle()` → '' when nothing is held or queued, else what is wrong; optional `info()`, `close()`.
 */
export function contender(c) {
  return { capacity: () => LIMIT, ...c };
}

/**
 * Runs at least `minBatches` batches and for at least `minMs`; returns `{ ms, calls }`.
 * Throws if any call was lost or faked, or the contender is not idle afterwards.
 */
export async function runBatches(c, shape, minBatches, minMs = 0) {
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
// Command line.

/**
 * The flags every overhead script takes: --quick, --json=path, --only=id,id, --modes=m,m, --no-gc,
 * --reps=n; `extra` lists a script's own flags (names with a trailing '=' take a value). Throws on
 * anything else.
 */
export function parseArgs(args, extra = []) {
  const value = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const known = ['quick', 'no-gc', 'json=', 'only=', 'modes=', 'reps=', ...extra];
  const unknown = args.filter(
    (a) => !known.some((k) => (k.endsWith('=') ? a.startsWith(`--${k}`) : a === `--${k}`)),
  );
  if (unknown.length > 0) throw new Error(`unknown arguments: ${unknown.join(' ')}`);
  const reps = value('reps');
  if (reps !== undefined && !(Number.isInteger(Number(reps)) && Number(reps) > 0)) {
    throw new Error(`--reps must be a positive integer, got ${reps}`);
  }
  return {
    quick: args.includes('--quick'),
    noGc: args.includes('--no-gc'),
    json: value('json'),
    only: value('only')?.split(','),
    modes: value('modes')?.split(','),
    reps: reps === undefined ? undefined : Number(reps),
    value,
    flag: (name) => args.includes(`--${name}`),
  };
}

/**
 * The measurement settings. warmupMs/warmupBatches: warm-up per cell (both minimums); probes: timed
 * single batches that size a measurement to ~targetMs (0: one batch); minMs: a measurement runs at
 * least this long whatever the sizing said; reps: round-robin rounds; rewarm: one untimed batch
 * before each measurement; gc: a forced GC before each; processPer: 'cell' or 'contender'.
 * `quick` is the script's --quick setting.
 */
export function measureConfig(opts, quick) {
  const cfg = opts.quick
    ? { minMs: 0, ...quick }
    : { warmupMs: 300, warmupBatches: 5, probes: 7, targetMs: 250, minMs: 200, reps: 9 };
  if (opts.reps !== undefined) cfg.reps = opts.reps;
  cfg.rewarm = !opts.quick;
  cfg.gc = !opts.quick && !opts.noGc;
  cfg.processPer = opts.quick ? 'contender' : 'cell';
  return cfg;
}

/**
 * What a script's parent needs before measuring: its flags (`parseArgs`, plus `extra`), the settings
 * (`measureConfig`, `quickConfig` for --quick), the modes (--modes, else `quickModes` with --quick,
 * else all of `modeNames`), the cells (every contender in `contenders` that --only keeps, in every
 * chosen mode its optional `modes` lists), the command line, and with --quick the self-test's line.
 * Throws on an unknown mode or contender.
 */
export async function plan({
  script,
  args,
  extra,
  quickConfig,
  modeNames,
  quickModes,
  contenders,
}) {
  const opts = parseArgs(args, extra);
  const cfg = measureConfig(opts, quickConfig);
  const modes = opts.modes ?? (opts.quick && quickModes ? quickModes : modeNames);
  for (const m of modes) if (!modeNames.includes(m)) throw new Error(`unknown mode ${m}`);
  for (const id of opts.only ?? []) {
    if (!contenders.some((x) => x.id === id)) throw new Error(`unknown contender ${id}`);
  }
  const cells = [];
  for (const mode of modes) {
    for (const x of contenders) {
      const kept = opts.only === undefined || opts.only.includes(x.id);
      if (kept && (x.modes ?? modeNames).includes(mode)) {
        cells.push({ id: `${x.id}:${mode}`, group: x.id, contender: x, mode });
      }
    }
  }
  const selfTestLine = opts.quick ? await selfTest() : undefined;
  return { opts, cfg, modes, cells, command: commandLine(script, args), selfTestLine };
}

/** The command line that started this process, for the report. */
export function commandLine(script, args) {
  return [
    'node',
    ...process.execArgv,
    path.relative(process.cwd(), script) || script,
    ...args,
  ].join(' ');
}

// ---------------------------------------------------------------------------------------------
// The measurement loop. A script calls `serveCells` in its child processes and `measureCells` in
// the parent; they talk over IPC.

/**
 * Child side: hosts the cells `cellIds` ("id:mode"), built by `createCell(id, mode)` (may be async,
 * returns a contender), and answers the parent's warmup / measure / exit requests.
 */
export async function serveCells(cellIds, createCell) {
  const cells = new Map();
  for (const cellId of cellIds) {
    const [id, mode] = cellId.split(':');
    if (SHAPES[mode] === undefined) throw new Error(`unknown mode in cell ${cellId}`);
    cells.set(cellId, { c: contender(await createCell(id, mode)), shape: SHAPES[mode] });
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
      for (const { c } of cells.values()) await c.close?.();
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
      if (msg.probes === 0) return { batches: 1 };
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

/**
 * Parent side: forks `script --cells=…` (one process per cell, or per contender), waits until all
 * have booted, warms every cell up, then runs `cfg.reps` round-robin rounds (the starting cell
 * rotates). `cells` are `{ id: 'contender:mode', group }` (group: the contender's id); each gets
 * `samples` (ns/call), `ms`, `calls`, `onCpu` and `info`. Resolves with `{ wallS, others }`
 * (others: cores other processes used on average, or undefined).
 */
export async function measureCells(script, cells, cfg, { progress = true } = {}) {
  const started = performance.now();
  const machine0 = machineBusy();
  const parentCpu0 = process.cpuUsage();
  let ownCpuUs = 0;
  const groups = new Map();
  for (const cell of cells) {
    const key = cfg.processPer === 'cell' ? cell.id : cell.group;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(cell);
    Object.assign(cell, { samples: [], ms: [], calls: [], onCpu: [], info: undefined });
  }
  // All processes start in parallel, then sit idle unless it is their turn.
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
    // Wait until every process has booted, so no warm-up or sizing competes with start-ups.
    await Promise.all(procs.map((proc) => proc.ready));
    for (const cell of cells) {
      const reply = await request(cell.proc, {
        cmd: 'warmup',
        cell: cell.id,
        warmupMs: cfg.warmupMs,
        warmupBatches: cfg.warmupBatches,
        probes: cfg.probes,
        targetMs: cfg.targetMs,
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
      if (progress) process.stderr.write(`round ${rep + 1}/${cfg.reps} done\n`);
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
  const wallS = (performance.now() - started) / 1000;
  const machine = machineBusy();
  const others =
    machine === undefined || machine0 === undefined
      ? undefined
      : (machine.busyS - machine0.busyS - ownCpuUs / 1e6) / wallS;
  return { wallS, others };
}

/** A cell's median, extremes and spread (ns/call). */
export function cellStats(cell) {
  const med = median(cell.samples);
  const lo = Math.min(...cell.samples);
  const hi = Math.max(...cell.samples);
  return { med, lo, hi, spread: (hi - lo) / med };
}

/** Sends `msg` to a forked cell process and resolves with its reply (rejects if it exits first). */
export function request(proc, msg) {
  return new Promise((resolve, reject) => {
    const onExit = (code) => reject(new Error(`cell process exited early (code ${code})`));
    proc.once('exit', onExit);
    proc.once('message', (reply) => {
      proc.off('exit', onExit);
      if (reply.error) reject(new Error(reply.error));
      else resolve(reply);
    });
    proc.send(msg);
  });
}

// ---------------------------------------------------------------------------------------------
// Small helpers and the report's environment lines.

/** Median of a list of numbers. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** `x` with `digits` decimals. */
export const fmt = (x, digits = 1) => x.toFixed(digits);

/**
 * The limits-breaker package directory to measure: `--breaker=<dir>` from the command line (another
 * build's `packages/limits-breaker`), else this checkout's.
 */
export function breakerDirArg() {
  const a = process.argv.find((x) => x.startsWith('--breaker='));
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  return path.resolve(
    a?.slice('--breaker='.length) ?? path.join(root, 'packages', 'limits-breaker'),
  );
}

/**
 * The file URL of the ESM entry (its `exports`) of the package in directory `dir`: for importing
 * another build of a package (a worktree of an older commit).
 */
export function packageEntryUrl(dir) {
  const { exports } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const main = typeof exports === 'string' ? exports : (exports['.'].import ?? exports['.']);
  return pathToFileURL(path.join(dir, typeof main === 'string' ? main : main.default)).href;
}

/**
 * `guard(task, …)` of any build of limits-breaker, with `limiter` (its own limiter's options) and a
 * timeout of `timeoutMs` (or `false`). Builds that name those options `limit` and `timeout` refuse
 * `limiter` options, and are then called with those names.
 */
export function guardOfAnyBuild(guard, task, timeoutMs, limiter) {
  for (const options of [
    { timeoutMs, limiter },
    { timeoutMs, limit: limiter },
    { timeout: timeoutMs, limit: limiter },
  ]) {
    try {
      return guard(task, options);
    } catch {}
  }
  throw new Error('guardOfAnyBuild: no option shape is accepted by this guard()');
}

/** Yields one macrotask turn, as a server would between batches. */
export const yieldToLoop = () => new Promise((resolve) => setImmediate(resolve));

/** User + system CPU time of a `process.cpuUsage()` reading, in µs. */
export const cpuMicros = (u) => u.user + u.system;

/**
 * The all-cores line of Linux's /proc/stat, in ticks (USER_HZ, 100 per second): user, nice, system,
 * idle, iowait, irq, softirq, steal, …; `undefined` elsewhere.
 */
export function procStatTicks() {
  try {
    return readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
  } catch {
    return undefined;
  }
}

/**
 * CPU-seconds all cores have been busy (`busyS`) and have existed (`totalS`) since boot, from Linux's
 * /proc/stat (user..steal; guest time is already inside user), or undefined elsewhere.
 */
export function machineBusy() {
  const f = procStatTicks();
  if (f === undefined) return undefined;
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = f[3] + (f[4] ?? 0); // idle + iowait
  return { busyS: (total - idle) / 100, totalS: total / 100 }; // USER_HZ is 100 on Linux
}

/** The short commit of `dir`'s repository and whether its `src` has uncommitted changes. */
export function gitState(dir) {
  try {
    const git = (...args) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
    const head = git('rev-parse', '--short', 'HEAD');
    const dirty = git('status', '--porcelain', '--', 'src').length > 0;
    return `commit ${head}${dirty ? ', src has uncommitted changes' : ', src clean'}`;
  } catch {
    return 'git state unknown';
  }
}

/** The newest modification time (ms) of any file below `dir`, or 0. */
export function newestMtime(dir) {
  let newest = 0;
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      const t = entry.isDirectory() ? newestMtime(file) : statSync(file).mtimeMs;
      if (t > newest) newest = t;
    }
  } catch {}
  return newest;
}

/** Warns when a package's src changed after its dist was built (the benchmarks run dist). */
export function buildState(dir) {
  const src = newestMtime(path.join(dir, 'src'));
  const dist = newestMtime(path.join(dir, 'dist'));
  if (dist === 0) return 'dist missing';
  return src > dist
    ? `WARNING: src is newer than dist (built ${new Date(dist).toISOString()}), rebuild first`
    : `dist built ${new Date(dist).toISOString()}, newer than src`;
}

/** A short hash of the `.js` files below `dist`: which build ran (a rebuild during the run would change it). */
export function distFingerprint(dist) {
  const h = createHash('sha256');
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    )) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) h.update(e.name).update(readFileSync(p));
    }
  };
  try {
    walk(dist);
    return h.digest('hex').slice(0, 12);
  } catch {
    return 'unknown';
  }
}

/**
 * Version and folder of a package as the bench resolves it. The packages' export maps hide
 * package.json, so this walks up from the resolved entry point (import.meta.resolve is synchronous
 * from Node 20.6; older: bench/node_modules/<name>).
 */
export function packageInfo(name) {
  const bench = path.dirname(fileURLToPath(import.meta.url));
  let dir;
  try {
    dir = path.dirname(fileURLToPath(import.meta.resolve(name)));
  } catch {
    dir = path.join(bench, 'node_modules', name);
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

/**
 * The report's first lines: title, command, Node/V8, CPU, load and the other processes' CPU use
 * (`others`, in cores), then `packages` (one line, already formatted).
 */
export function headerLines(title, command, others, packages) {
  const cpus = os.cpus();
  return [
    title,
    '',
    `- command: \`${command}\` (cwd ${process.cwd()})`,
    `- node ${process.version} (V8 ${process.versions.v8}), ${process.platform}/${process.arch}`,
    `- CPU: ${cpus[0]?.model ?? 'unknown'} × ${cpus.length}; load average at end ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}; other processes used ${
      others === undefined ? 'unknown' : `${fmt(Math.max(0, others) * 100, 0)}% of a core`
    } on average during the run`,
    `- ${packages}`,
  ];
}

/** Writes `data` as indented JSON to `file`. */
export const writeJson = (file, data) => writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);

/** CPU model and count, for the JSON output. */
export const cpuInfo = () => ({ cpu: os.cpus()[0]?.model, cpus: os.cpus().length });

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--self-test')) {
    selfTest().then(
      (line) => console.log(line),
      (error) => {
        console.error(error);
        process.exitCode = 1;
      },
    );
  } else {
    console.error('usage: node bench/harness.mjs --self-test');
    process.exitCode = 2;
  }
}
