// Per-call overhead of running a trivial async function through a circuit breaker:
// limits-breaker's guard() vs bare opossum 9 vs cockatiel 3 (circuit breaker + bulkhead).
//
//   node bench/breaker-overhead.mjs              full run (about 2.5–3 minutes)
//   node bench/breaker-overhead.mjs --quick      smoke test (about 8 s; rough numbers, no 64-workers mode)
//   node bench/breaker-overhead.mjs --json=out.json   also write the raw samples as JSON
//   node bench/breaker-overhead.mjs --only=opossum-timeout,guard-timeout --modes=burst
//                                                a subset of contenders (ids below) and modes (seq, burst, workers)
//   node bench/breaker-overhead.mjs --sustained  sequential, each contender 12 s without pause, last
//                                                3 s timed (opossum's rolling window full); ~4.5 min
//   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/breaker-overhead.mjs --profile=guard:seq [--seconds=3]
//                                                one cell, in this process, for profiling
//
// Needs the built packages: npx -y pnpm@12.4.2 -r --filter "./packages/**" run build
//
// Same method as overhead.mjs:
// - Every contender runs the same `task` (an async function resolving to 1) and must return its
//   value; each measurement checks the sum, the number of task calls, how many calls were in flight
//   right after launching (64 for the limited contenders, all of them for opossum), and that the
//   contender is idle and its circuit closed afterwards, and throws if anything is off.
// - Each (contender, mode) cell lives in its own child process (with --quick, one per contender), so
//   its call sites only ever see one contender. The parent warms every cell up, then measures them
//   round-robin, `reps` times, so they share machine noise, and reports medians and ratios.
// - Calls are issued in batches of 10,000; between batches the loop yields one macrotask turn
//   (setImmediate), as a service would, so timers (opossum's rolling window, limits-core's stall
//   detector, the guard's timeout timer) run normally.

import { execFileSync, fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  cpuMicros,
  createSemaphore,
  gitState,
  median,
  newestMtime,
  request,
  yieldToLoop,
} from './harness.mjs';

// The contenders' libraries are imported lazily, by the child processes that need them (faster start).
const load = {
  cockatiel: () => import('cockatiel'),
  guard: async () => (await import('limits-breaker')).guard,
  opossum: async () => (await import('opossum')).default,
};

const LIMIT = 64;
const BATCH = 10_000;
/** maxQueued of the guard's limiter and queue of cockatiel's bulkhead (room for 10,000 − 64 waiters). */
const MAX_QUEUED = 20_000;
const TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------------------------------------
// The task. One function for every contender (the guard passes it a ctx it ignores, cockatiel a
// context it ignores). The counter proves each contender really called it.

let taskCalls = 0;
const task = async () => {
  taskCalls++;
  return 1;
};

// ---------------------------------------------------------------------------------------------
// Contenders. `create(mode)` returns:
//   call()       → promise of task's value, through the contender;
//   inflight()   → calls running right now (null when the contender does not track them);
//   capacity()   → how many may run at once (Infinity: no limit);
//   idle()       → '' when nothing is held or queued and the circuit is closed, else what is wrong;
//   info()       → optional details for the report; close() → optional clean-up.

const MODES = {
  seq: 'sequential',
  burst: '10,000 at once',
  workers: '64 workers',
};

async function guardContender(options) {
  const guard = await load.guard();
  const g = guard(task, options);
  let fallbacks = 0;
  g.on('fallback', () => fallbacks++); // only reached on a failure; proves there was none
  return {
    call: () => g.fire(),
    inflight: () => g.limiter.inflight,
    capacity: () => g.limiter.limit,
    idle: () => {
      const problems = [];
      if (g.limiter.inflight !== 0 || g.limiter.queued !== 0) {
        problems.push(`inflight=${g.limiter.inflight} queued=${g.limiter.queued}`);
      }
      if (g.state !== 'CLOSED') problems.push(`state=${g.state}`);
      if (fallbacks !== 0) problems.push(`fallbacks=${fallbacks}`);
      return problems.join(' ');
    },
    info: () => ({ limit: g.limiter.limit, stalledSamples: g.limiter.snapshot().stalledSamples }),
    close: () => g.shutdown(),
  };
}

async function opossumContender(options) {
  const CircuitBreaker = await load.opossum();
  const b = new CircuitBreaker(task, options);
  const capacity = b.options.capacity;
  // Count failures by event (only emitted on a failure): reading `b.stats` would sort every latency
  // sample of the rolling window.
  let failures = 0;
  for (const event of ['failure', 'timeout', 'reject', 'semaphoreLocked'])
    b.on(event, () => failures++);
  return {
    call: () => b.fire(),
    inflight: () => capacity - b.semaphore.count,
    capacity: () => Infinity,
    idle: () => {
      const problems = [];
      if (b.semaphore.count !== capacity) problems.push(`inflight=${capacity - b.semaphore.count}`);
      if (!b.closed) problems.push('circuit not closed');
      if (failures > 0) problems.push(`failures/timeouts/rejects=${failures}`);
      return problems.join(' ');
    },
    close: () => b.shutdown(),
  };
}

async function cockatielContender(withTimeout) {
  const {
    bulkhead,
    CircuitState,
    ConsecutiveBreaker,
    circuitBreaker,
    handleAll,
    TimeoutStrategy,
    timeout,
    wrap,
  } = await load.cockatiel();
  const cb = circuitBreaker(handleAll, {
    halfOpenAfter: 10_000,
    breaker: new ConsecutiveBreaker(5),
  });
  const bh = bulkhead(LIMIT, MAX_QUEUED);
  // The timeout goes inside the bulkhead: like the guard's, it times the execution, not the wait.
  const policy = withTimeout
    ? wrap(cb, bh, timeout(TIMEOUT_MS, TimeoutStrategy.Cooperative))
    : wrap(cb, bh);
  return {
    call: () => policy.execute(task),
    inflight: () => LIMIT - bh.executionSlots,
    capacity: () => LIMIT,
    idle: () => {
      const problems = [];
      if (bh.executionSlots !== LIMIT || bh.queueSlots !== MAX_QUEUED) {
        problems.push(`executionSlots=${bh.executionSlots} queueSlots=${bh.queueSlots}`);
      }
      if (cb.state !== CircuitState.Closed) problems.push(`state=${cb.state}`);
      return problems.join(' ');
    },
  };
}

const CONTENDERS = [
  {
    id: 'bare',
    name: 'bare call',
    create: () => ({ call: task, inflight: () => null, capacity: () => Infinity, idle: () => '' }),
  },
  {
    id: 'semaphore',
    name: 'hand-written semaphore (64)',
    create: () => {
      const sem = createSemaphore(LIMIT);
      return {
        call: () => sem.run(task),
        inflight: () => sem.active,
        capacity: () => LIMIT,
        idle: () =>
          sem.active === 0 && sem.waiting === 0
            ? ''
            : `active=${sem.active} waiting=${sem.waiting}`,
      };
    },
  },
  {
    id: 'opossum',
    name: 'opossum 9 `{ timeout: false }`',
    create: () => opossumContender({ timeout: false }),
  },
  {
    id: 'opossum-timeout',
    name: 'opossum 9 default (timeout 10000: a setTimeout per call)',
    create: () => opossumContender({}),
  },
  {
    id: 'opossum-lean',
    name: 'opossum 9 as configured inside guard() (no timeout, no rolling percentiles, no snapshots)',
    create: () =>
      opossumContender({
        timeout: false,
        rollingPercentilesEnabled: false,
        enableSnapshots: false,
      }),
  },
  {
    id: 'cockatiel',
    name: 'cockatiel 3 wrap(circuitBreaker, bulkhead(64, 20000))',
    create: () => cockatielContender(false),
  },
  {
    id: 'cockatiel-timeout',
    name: 'cockatiel 3 wrap(circuitBreaker, bulkhead(64, 20000), timeout(10000, Cooperative))',
    create: () => cockatielContender(true),
  },
  {
    id: 'guard',
    name: 'guard() `timeout: false`, limit 64',
    create: () =>
      guardContender({ timeout: false, limit: { limit: LIMIT, maxQueued: MAX_QUEUED } }),
  },
  {
    id: 'guard-vegas',
    name: 'guard() `timeout: false`, default VegasLimit',
    create: () => guardContender({ timeout: false, limit: { maxQueued: MAX_QUEUED } }),
  },
  {
    id: 'guard-timeout',
    name: 'guard() `timeout: 10000`, limit 64',
    create: () =>
      guardContender({ timeout: TIMEOUT_MS, limit: { limit: LIMIT, maxQueued: MAX_QUEUED } }),
  },
];
const REFERENCES = [
  { id: 'opossum', label: '× opossum (no timeout)' },
  { id: 'opossum-timeout', label: '× opossum (default timeout)' },
  { id: 'semaphore', label: '× semaphore' },
];
const TARGETS = [
  {
    id: 'guard',
    ref: 'opossum',
    max: 1.25,
    text: 'guard() timeout off ≤ 1.25× opossum (no timeout)',
  },
  {
    id: 'guard-timeout',
    ref: 'opossum-timeout',
    max: 1.0,
    text: 'guard() timeout 10000 ≤ 1.0× opossum (default timeout)',
  },
];

// ---------------------------------------------------------------------------------------------
// Shapes. Each runs one batch of BATCH calls and returns the sum of the values. Right after
// launching, `checkLaunched` asserts that min(capacity, launched) calls are running.

function checkLaunched(c, launched, capacityBefore) {
  const n = c.inflight();
  const expected = Math.min(capacityBefore, launched);
  if (n !== null && n !== expected) {
    throw new Error(`expected ${expected} calls in flight after launching ${launched}, saw ${n}`);
  }
}

async function seqBatch(c) {
  const call = c.call;
  let sum = 0;
  for (let i = 0; i < BATCH; i++) {
    const v = await call();
    sum += v;
  }
  return sum;
}

async function burstBatch(c) {
  const call = c.call;
  const cap = c.capacity();
  const promises = new Array(BATCH);
  for (let i = 0; i < BATCH; i++) promises[i] = call();
  checkLaunched(c, BATCH, cap);
  const values = await Promise.all(promises);
  let sum = 0;
  for (let i = 0; i < BATCH; i++) sum += values[i];
  return sum;
}

async function workersBatch(c) {
  const call = c.call;
  const cap = c.capacity();
  let started = 0;
  let sum = 0;
  const worker = async () => {
    while (started < BATCH) {
      started++;
      const v = await call();
      sum += v;
    }
  };
  const workers = new Array(LIMIT);
  for (let i = 0; i < LIMIT; i++) workers[i] = worker();
  checkLaunched(c, LIMIT, cap);
  await Promise.all(workers);
  return sum;
}

const SHAPES = { seq: seqBatch, burst: burstBatch, workers: workersBatch };

/** Runs at least `minBatches` batches and for at least `minMs`; returns `{ ms, calls }`. */
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

async function createCell(cellId) {
  const [id, mode] = cellId.split(':');
  const contender = CONTENDERS.find((x) => x.id === id);
  if (contender === undefined || SHAPES[mode] === undefined)
    throw new Error(`unknown cell ${cellId}`);
  return { c: await contender.create(mode), shape: SHAPES[mode] };
}

// ---------------------------------------------------------------------------------------------
// Profile mode: one cell in this process, for `node --cpu-prof`.

async function profile(cellId, seconds, tailSeconds) {
  const { c, shape } = await createCell(cellId);
  await runBatches(c, shape, 5); // warm up
  if (tailSeconds === undefined) {
    const { ms, calls } = await runBatches(c, shape, 1, seconds * 1000);
    await c.close?.();
    console.log(`${cellId}: ${calls} calls, ${((ms * 1e6) / calls).toFixed(1)} ns/call`);
    return;
  }
  // Sustained: run without pause for `seconds`, report the cost over the last `tailSeconds`.
  const head = await runBatches(c, shape, 1, (seconds - tailSeconds) * 1000);
  const tail = await runBatches(c, shape, 1, tailSeconds * 1000);
  await c.close?.();
  console.log(
    JSON.stringify({
      cell: cellId,
      headNs: (head.ms * 1e6) / head.calls,
      tailNs: (tail.ms * 1e6) / tail.calls,
      tailCalls: tail.calls,
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// --sustained: the main run measures each cell for ~250 ms at a time, then leaves it idle while the
// others run, so opossum's 10-second rolling window (every latency sample of it, sorted once a
// second when rolling percentiles are on) stays nearly empty. Here each contender runs without a
// pause for SUSTAINED_S seconds in a fresh process and the last TAIL_S seconds are timed, so the
// window is full. Contenders take turns, `reps` rounds.

const SUSTAINED_S = 12;
const TAIL_S = 3;
const SUSTAINED_CELLS = [
  'semaphore:seq',
  'opossum:seq',
  'opossum-timeout:seq',
  'opossum-lean:seq',
  'cockatiel:seq',
  'guard:seq',
  'guard-timeout:seq',
];

async function sustained(reps) {
  const script = fileURLToPath(import.meta.url);
  const runs = new Map(SUSTAINED_CELLS.map((cell) => [cell, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (let k = 0; k < SUSTAINED_CELLS.length; k++) {
      const cell = SUSTAINED_CELLS[(k + rep) % SUSTAINED_CELLS.length];
      try {
        const out = execFileSync(
          process.execPath,
          [script, `--profile=${cell}`, `--seconds=${SUSTAINED_S}`, `--tail=${TAIL_S}`],
          { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
        );
        runs.get(cell).push(JSON.parse(out.trim().split('\n').pop()));
      } catch (error) {
        process.stderr.write(`${cell} failed: ${error.message.split('\n')[0]}\n`);
        runs.get(cell).push({ cell, headNs: Number.NaN, tailNs: Number.NaN, tailCalls: 0 });
      }
    }
    process.stderr.write(`sustained round ${rep + 1}/${reps} done\n`);
  }
  return runs;
}

// ---------------------------------------------------------------------------------------------
// Child: cells driven by the parent over IPC.

async function child(cellIds) {
  const cells = new Map();
  for (const cellId of cellIds) cells.set(cellId, await createCell(cellId));
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
      const t0 = performance.now();
      let batches = 0;
      while (performance.now() - t0 < msg.warmupMs || batches < msg.warmupBatches) {
        await runBatches(c, shape, 1);
        batches++;
      }
      if (msg.probes === 0) return { batches: 1 };
      const times = [];
      for (let i = 0; i < msg.probes; i++) times.push((await runBatches(c, shape, 1)).ms);
      return { batches: Math.max(1, Math.ceil(msg.targetMs / median(times))) };
    }
    if (msg.cmd === 'measure') {
      if (msg.rewarm) await runBatches(c, shape, 1);
      if (msg.gc) gc();
      await yieldToLoop();
      const cpu0 = process.cpuUsage();
      const { ms, calls } = await runBatches(c, shape, msg.batches, msg.minMs);
      const onCpu = cpuMicros(process.cpuUsage(cpu0)) / 1000 / ms;
      return { ns: (ms * 1e6) / calls, ms, calls, onCpu, info: c.info?.() };
    }
    throw new Error(`unknown command ${msg.cmd}`);
  }
  process.send({ ready: true });
}

// ---------------------------------------------------------------------------------------------
// Parent.

/** Version and folder of a package as resolved from `fromUrl` (walks up from its entry point). */
function packageInfo(name, fromUrl = import.meta.url) {
  let dir;
  try {
    dir = path.dirname(fileURLToPath(import.meta.resolve(name, fromUrl)));
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

/** The opossum limits-breaker loads (its own resolution, not the bench's). */
function breakerOpossum(breakerDir) {
  try {
    const pkg = JSON.parse(
      readFileSync(path.join(breakerDir, 'node_modules', 'opossum', 'package.json'), 'utf8'),
    );
    return pkg.version;
  } catch {
    return 'unknown';
  }
}

/** Newest modification time (ms) of the files under `dir`, or 0. */

/** Warns when a package's src changed after its dist was built (the bench runs dist). */
function buildState(dir) {
  const src = newestMtime(path.join(dir, 'src'));
  const dist = newestMtime(path.join(dir, 'dist'));
  if (dist === 0) return 'dist missing';
  return src > dist
    ? `WARNING: src is newer than dist (built ${new Date(dist).toISOString()}), rebuild first`
    : 'dist newer than src';
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
    return { busyS: (total - idle) / 100 };
  } catch {
    return undefined;
  }
}

const fmt = (x, digits = 1) => x.toFixed(digits);

function versions() {
  return {
    core: packageInfo('limits-core'),
    breaker: packageInfo('limits-breaker'),
    opossum: packageInfo('opossum'),
    cockatiel: packageInfo('cockatiel'),
  };
}

/** CPU seconds used by this process's waited-for children (Linux /proc/self/stat), or 0. */
function childrenCpuS() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100; // cutime + cstime, USER_HZ 100
  } catch {
    return 0;
  }
}

/** The report's title and machine/version lines. `others`: cores used by other processes. */
function headerLines(title, command, others) {
  const { core, breaker, opossum, cockatiel } = versions();
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
    `- limits-breaker ${breaker.version} (${gitState(breaker.dir)}; ${buildState(breaker.dir)}; uses opossum ${breakerOpossum(breaker.dir)}), ` +
      `limits-core ${core.version} (${gitState(core.dir)}; ${buildState(core.dir)}), opossum ${opossum.version}, cockatiel ${cockatiel.version}`,
  ];
}

async function parentSustained(reps, command, jsonArg) {
  const started = performance.now();
  const machine0 = machineBusy();
  const cpu0 = process.cpuUsage();
  const children0 = childrenCpuS();
  const runs = await sustained(reps);
  const wallS = (performance.now() - started) / 1000;
  const ownS = cpuMicros(process.cpuUsage(cpu0)) / 1e6 + childrenCpuS() - children0;
  const machine = machineBusy();
  const others =
    machine === undefined || machine0 === undefined
      ? undefined
      : (machine.busyS - machine0.busyS - ownS) / wallS;
  const out = headerLines(
    `# Breaker overhead benchmark, sustained (${SUSTAINED_S} s without pause per contender, last ${TAIL_S} s timed)`,
    command,
    others,
  );
  out.push(
    `- task: \`async () => { taskCalls++; return 1; }\`, sequential, one fresh process per contender and round, ` +
      `${reps} round(s), contenders take turns; wall time ${fmt(wallS)} s`,
  );
  out.push('');
  out.push(
    `| contender | last ${TAIL_S} s ns/call, per round | median | ${REFERENCES.map((r) => r.label).join(' | ')} | first ${SUSTAINED_S - TAIL_S} s ns/call (median) |`,
  );
  out.push(`|---|---:|---:|${REFERENCES.map(() => '---:').join('|')}|---:|`);
  const finite = (xs) => xs.filter(Number.isFinite);
  const tailMedian = (id) => median(finite(runs.get(`${id}:seq`).map((r) => r.tailNs)));
  for (const [cell, rs] of runs) {
    const id = cell.split(':')[0];
    const name = CONTENDERS.find((x) => x.id === id).name;
    const m = tailMedian(id);
    out.push(
      `| ${name} | ${rs.map((r) => fmt(r.tailNs, 0)).join(' / ')} | ${fmt(m)} | ${REFERENCES.map((r) => fmt(m / tailMedian(r.id), 2)).join(' | ')} | ${fmt(median(finite(rs.map((r) => r.headNs))))} |`,
    );
  }
  out.push('');
  out.push('Targets (sustained, sequential):');
  for (const t of TARGETS) {
    const ratio = tailMedian(t.id) / tailMedian(t.ref);
    out.push(`- ${t.text}: ${fmt(ratio, 2)}× ${ratio <= t.max ? 'met' : 'MISSED'}`);
  }
  console.log(out.join('\n'));
  if (jsonArg) {
    writeFileSync(
      jsonArg.slice('--json='.length),
      `${JSON.stringify({ command, node: process.version, othersCpuCores: others, runs: Object.fromEntries(runs) }, null, 2)}\n`,
    );
  }
}

async function parent(args) {
  const quick = args.includes('--quick');
  const jsonArg = args.find((a) => a.startsWith('--json='));
  const sustainedMode = args.includes('--sustained');
  const onlyArg = args.find((a) => a.startsWith('--only='))?.slice('--only='.length);
  const modesArg = args.find((a) => a.startsWith('--modes='))?.slice('--modes='.length);
  const unknown = args.filter(
    (a) =>
      a !== '--quick' &&
      a !== '--sustained' &&
      !a.startsWith('--json=') &&
      a !== '--no-gc' &&
      !a.startsWith('--only=') &&
      !a.startsWith('--modes='),
  );
  if (unknown.length > 0) throw new Error(`unknown arguments: ${unknown.join(' ')}`);
  const cfg = quick
    ? { warmupMs: 0, warmupBatches: 1, probes: 0, targetMs: 0, minMs: 0, reps: 3 }
    : { warmupMs: 300, warmupBatches: 5, probes: 7, targetMs: 250, minMs: 200, reps: 9 };
  cfg.rewarm = !quick;
  cfg.gc = !quick && !args.includes('--no-gc');
  cfg.processPer = quick ? 'contender' : 'cell';

  const script = fileURLToPath(import.meta.url);
  const command = [
    'node',
    ...process.execArgv,
    path.relative(process.cwd(), script) || script,
    ...args,
  ].join(' ');
  const { core, breaker, opossum, cockatiel } = versions();
  const cpus = os.cpus();
  const started = performance.now();
  const machine0 = machineBusy();
  const parentCpu0 = process.cpuUsage();
  let ownCpuUs = 0;

  // --quick skips the 64-workers mode to stay under 10 s.
  const modes = modesArg?.split(',') ?? (quick ? ['seq', 'burst'] : Object.keys(MODES));
  const only = onlyArg?.split(',');
  for (const m of modes) if (!(m in MODES)) throw new Error(`unknown mode ${m}`);
  for (const id of only ?? []) {
    if (!CONTENDERS.some((x) => x.id === id)) throw new Error(`unknown contender ${id}`);
  }
  if (sustainedMode) return parentSustained(quick ? 1 : 3, command, jsonArg);
  const cells = [];
  for (const mode of modes) {
    for (const x of CONTENDERS) {
      if (only === undefined || only.includes(x.id)) {
        cells.push({ id: `${x.id}:${mode}`, contender: x, mode });
      }
    }
  }
  const groups = new Map();
  for (const cell of cells) {
    const key = cfg.processPer === 'cell' ? cell.id : cell.contender.id;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(cell);
    Object.assign(cell, { samples: [], ms: [], calls: [], onCpu: [], info: undefined });
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
        const cell = cells[(k + rep) % cells.length];
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
  const wallS = (performance.now() - started) / 1000;
  const machine = machineBusy();
  const others =
    machine === undefined || machine0 === undefined
      ? undefined
      : (machine.busyS - machine0.busyS - ownCpuUs / 1e6) / wallS;

  // Report.
  const out = headerLines(
    `# Breaker overhead benchmark${quick ? ' (--quick: smoke test, rough numbers)' : ''}`,
    command,
    others,
  );
  out.push(
    `- task: \`async () => { taskCalls++; return 1; }\`, limit/bulkhead ${LIMIT}, queue ${MAX_QUEUED}, batches of ${BATCH} calls, ` +
      `warm-up ${cfg.warmupMs} ms per cell, ${cfg.reps} round-robin measurements of ~${cfg.targetMs} ms (at least ${cfg.minMs} ms) each, ` +
      `one child process per ${cfg.processPer}; wall time ${fmt(wallS)} s`,
  );
  out.push('');
  out.push(
    `| mode | contender | median ns/call | ${REFERENCES.map((r) => r.label).join(' | ')} | min–max ns/call | spread | lowest on-CPU |`,
  );
  out.push(`|---|---|---:|${REFERENCES.map(() => '---:').join('|')}|---:|---:|---:|`);
  const rows = [];
  const medianOf = (id, mode) => {
    const cell = cells.find((c) => c.mode === mode && c.contender.id === id);
    return cell === undefined ? Number.NaN : median(cell.samples);
  };
  for (const mode of modes) {
    for (const x of CONTENDERS) {
      const cell = cells.find((c) => c.mode === mode && c.contender === x);
      if (cell === undefined) continue; // left out by --only
      const med = median(cell.samples);
      const lo = Math.min(...cell.samples);
      const hi = Math.max(...cell.samples);
      const ratios = Object.fromEntries(REFERENCES.map((r) => [r.id, med / medianOf(r.id, mode)]));
      rows.push({
        mode,
        contender: x.id,
        name: x.name,
        medianNs: med,
        ratios,
        samplesNs: cell.samples,
        calls: cell.calls,
        msPerMeasurement: cell.ms,
        onCpu: cell.onCpu,
        info: cell.info,
      });
      out.push(
        `| ${MODES[mode]} | ${x.name} | ${fmt(med)} | ${REFERENCES.map((r) => fmt(ratios[r.id], 2)).join(' | ')} | ${fmt(lo)}–${fmt(hi)} | ${fmt(((hi - lo) / med) * 100, 0)}% | ${fmt(Math.min(...cell.onCpu) * 100, 0)}% |`,
      );
    }
  }
  out.push('');
  out.push(
    quick
      ? 'Targets (--quick: one barely warmed-up batch per measurement, so these are no verdict):'
      : 'Targets:',
  );
  for (const t of TARGETS) {
    if (
      !cells.some((c) => c.contender.id === t.id) ||
      !cells.some((c) => c.contender.id === t.ref)
    ) {
      continue;
    }
    const parts = modes.map((mode) => {
      const ratio = medianOf(t.id, mode) / medianOf(t.ref, mode);
      return `${MODES[mode]} ${fmt(ratio, 2)}× ${ratio <= t.max ? 'met' : 'MISSED'}`;
    });
    out.push(`- ${t.text}: ${parts.join('; ')}`);
  }
  const vegas = rows.filter((r) => r.contender === 'guard-vegas' && r.info);
  if (vegas.length > 0) {
    out.push('');
    out.push(
      `guard() Vegas rows, limit at the end: ${vegas.map((r) => `${MODES[r.mode]} ${r.info.limit} (stalled samples ${r.info.stalledSamples})`).join('; ')}`,
    );
  }
  console.log(out.join('\n'));

  if (jsonArg) {
    writeFileSync(
      jsonArg.slice('--json='.length),
      `${JSON.stringify(
        {
          command,
          node: process.version,
          cpu: cpus[0]?.model,
          cpus: cpus.length,
          versions: {
            limitsBreaker: breaker.version,
            limitsCore: core.version,
            opossum: opossum.version,
            cockatiel: cockatiel.version,
          },
          othersCpuCores: others,
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
const profileArg = process.argv.find((a) => a.startsWith('--profile='));
if (cellsArg) {
  child(cellsArg.slice('--cells='.length).split(',')).catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else if (profileArg) {
  const secondsArg = process.argv.find((a) => a.startsWith('--seconds='));
  const tailArg = process.argv.find((a) => a.startsWith('--tail='));
  profile(
    profileArg.slice('--profile='.length),
    secondsArg ? Number(secondsArg.slice(10)) : 3,
    tailArg ? Number(tailArg.slice('--tail='.length)) : undefined,
  ).catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
} else {
  parent(process.argv.slice(2)).catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
