// Per-call overhead of running a trivial async function through a circuit breaker:
// limits-breaker's guard() vs bare opossum 9 vs cockatiel 3 (circuit breaker + bulkhead).
//
//   node bench/breaker-overhead.mjs              full run (about 2.5–3 minutes)
//   node bench/breaker-overhead.mjs --quick      smoke test (about 8 s; rough numbers, no 64-workers mode)
//   node bench/breaker-overhead.mjs --json=out.json   also write the raw samples as JSON
//   node bench/breaker-overhead.mjs --only=opossum-timeout,guard-timeout --modes=burst
//                                                a subset of contenders (ids below) and modes (seq, burst, workers)
//   node bench/breaker-overhead.mjs --reps=5 --no-gc   5 rounds (default 9, --quick 3), no forced GC
//   node bench/breaker-overhead.mjs --sustained  sequential, each contender 12 s without pause, last
//                                                3 s timed (opossum's rolling window full); ~5 min
//                                                (--reps=n rounds, default 3; --quick 1)
//   node --cpu-prof --cpu-prof-dir=/tmp/prof bench/breaker-overhead.mjs --profile=guard:seq [--seconds=3]
//                                                one cell, in this process, for profiling
//   LIMITS_BENCH_OTHER_BREAKER=/tmp/old/packages/limits-breaker node bench/breaker-overhead.mjs \
//     --only=guard,guard-timeout,other-guard,other-guard-timeout --modes=seq,burst
//                                                another build of limits-breaker (a worktree of an
//                                                older commit, built) measured in the same run,
//                                                interleaved: contenders other-guard, other-guard-timeout
//
// Needs the built packages: npx -y pnpm@12.4.2 -r --filter "./packages/**" run build
//
// The method (task, batch shapes, checks, one child process per cell, warm-up, round-robin rounds,
// medians) is harness.mjs's, shared with overhead.mjs; bench/README.md explains it. Here the check
// right after launching expects min(capacity, launched) calls in flight: 64 for the limited
// contenders, all of them for opossum; and idle afterwards includes a closed circuit. Between batches
// the loop yields a macrotask turn, so opossum's rolling window and the guard's timeout timer run.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  BATCH,
  BURST_LABEL,
  buildState,
  cellStats,
  contender,
  cpuInfo,
  cpuMicros,
  fmt,
  gitState,
  guardOfAnyBuild,
  headerLines,
  LIMIT,
  machineBusy,
  measureCells,
  median,
  packageEntryUrl,
  packageInfo,
  plan,
  runBatches,
  SEMAPHORES,
  SHAPES,
  serveCells,
  task,
  writeJson,
} from './harness.mjs';

// The contenders' libraries are imported lazily, by the child processes that need them (faster start).
const load = {
  cockatiel: () => import('cockatiel'),
  guard: async () => (await import('limits-breaker')).guard,
  otherGuard: async () => (await import(packageEntryUrl(path.resolve(OTHER_BREAKER)))).guard,
  opossum: async () => (await import('opossum')).default,
};

/** Another build's limits-breaker package directory (env: the forked cell processes inherit it). */
const OTHER_BREAKER = process.env.LIMITS_BENCH_OTHER_BREAKER;

/** The other build's guard with a timeout of `timeoutMs` (or none), limit 64. */
async function otherGuardContender(timeoutMs) {
  const limit = { limit: LIMIT, maxQueued: MAX_QUEUED };
  return guardCell(guardOfAnyBuild(await load.otherGuard(), task, timeoutMs, limit));
}

/** maxQueued of the guard's limiter and queue of cockatiel's bulkhead (room for 10,000 − 64 waiters). */
const MAX_QUEUED = 20_000;
const TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------------------------------------
// Contenders. `create(mode)` returns (see `contender` in harness.mjs; the breakers are bound to
// harness.mjs's `task` at creation, so `run` ignores its argument):
//   run(task)    → promise of task's value, through the contender;
//   inflight()   → calls running right now (null when the contender does not track them);
//   capacity()   → how many may run at once (Infinity: no limit);
//   idle()       → '' when nothing is held or queued and the circuit is closed, else what is wrong;
//   info()       → optional details for the report; close() → optional clean-up.

const MODES = {
  seq: 'sequential',
  burst: BURST_LABEL,
  workers: '64 workers',
};

async function guardContender(options) {
  const guard = await load.guard();
  return guardCell(guard(task, options));
}

/** The cell of guard `g`. */
function guardCell(g) {
  let fallbacks = 0;
  g.on('fallback', () => fallbacks++); // only reached on a failure; proves there was none
  return {
    run: () => g.fire(),
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
    run: () => b.fire(),
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
  // The timeout goes inside the bulkhead: it times the execution, not the wait (the guard's
  // `timeoutMs` covers both; calls here do not wait for a permit long enough to tell).
  const policy = withTimeout
    ? wrap(cb, bh, timeout(TIMEOUT_MS, TimeoutStrategy.Cooperative))
    : wrap(cb, bh);
  return {
    run: (fn) => policy.execute(fn), // cockatiel passes `{ signal }`; the task ignores it
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
    create: () => ({
      run: (fn) => fn(),
      inflight: () => null,
      capacity: () => Infinity,
      idle: () => '',
    }),
  },
  ...SEMAPHORES,
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
    name: 'guard() `timeoutMs: false`, limit 64',
    create: () =>
      guardContender({ timeoutMs: false, limiter: { limit: LIMIT, maxQueued: MAX_QUEUED } }),
  },
  {
    id: 'guard-vegas',
    name: 'guard() `timeoutMs: false`, default VegasLimit',
    create: () => guardContender({ timeoutMs: false, limiter: { maxQueued: MAX_QUEUED } }),
  },
  {
    id: 'guard-timeout',
    name: 'guard() `timeoutMs: 10000`, limit 64',
    create: () =>
      guardContender({ timeoutMs: TIMEOUT_MS, limiter: { limit: LIMIT, maxQueued: MAX_QUEUED } }),
  },
  ...(OTHER_BREAKER === undefined
    ? []
    : [
        {
          id: 'other-guard',
          name: `other build's guard() timeout off, limit 64 (${OTHER_BREAKER})`,
          create: () => otherGuardContender(false),
        },
        {
          id: 'other-guard-timeout',
          name: `other build's guard() timeout 10000, limit 64 (${OTHER_BREAKER})`,
          create: () => otherGuardContender(TIMEOUT_MS),
        },
      ]),
];
const REFERENCES = [
  { id: 'opossum', label: '× opossum (no timeout)' },
  { id: 'opossum-timeout', label: '× opossum (default timeout)' },
  { id: SEMAPHORES[0].id, label: '× semaphore (then)' },
  { id: SEMAPHORES[1].id, label: '× semaphore (async)' },
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

async function createCell(id, mode) {
  const x = CONTENDERS.find((x) => x.id === id);
  if (x === undefined) throw new Error(`unknown contender ${id}`);
  return x.create(mode);
}

// ---------------------------------------------------------------------------------------------
// Profile mode: one cell in this process, for `node --cpu-prof`.

async function profile(cellId, seconds, tailSeconds) {
  const [id, mode] = cellId.split(':');
  if (SHAPES[mode] === undefined) throw new Error(`unknown mode in cell ${cellId}`);
  const c = contender(await createCell(id, mode));
  const shape = SHAPES[mode];
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
  'semaphore-async:seq',
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
// Parent.

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
function breakerHeader(title, command, others) {
  const { core, breaker, opossum, cockatiel } = versions();
  return headerLines(
    title,
    command,
    others,
    `limits-breaker ${breaker.version} (${gitState(breaker.dir)}; ${buildState(breaker.dir)}; uses opossum ${breakerOpossum(breaker.dir)}), ` +
      `limits-core ${core.version} (${gitState(core.dir)}; ${buildState(core.dir)}), opossum ${opossum.version}, cockatiel ${cockatiel.version}`,
  );
}

async function parentSustained(reps, command, jsonPath) {
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
  const out = breakerHeader(
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
  if (jsonPath) {
    writeJson(jsonPath, {
      command,
      node: process.version,
      othersCpuCores: others,
      runs: Object.fromEntries(runs),
    });
  }
}

async function parent(args) {
  const script = fileURLToPath(import.meta.url);
  const { opts, cfg, modes, cells, command, selfTestLine } = await plan({
    script,
    args,
    extra: ['sustained'],
    quickConfig: { warmupMs: 0, warmupBatches: 1, probes: 0, targetMs: 0, reps: 3 },
    modeNames: Object.keys(MODES),
    quickModes: ['seq', 'burst'], // --quick skips the 64-workers mode to stay under 10 s
    contenders: CONTENDERS,
  });
  const quick = opts.quick;
  if (opts.flag('sustained')) {
    return parentSustained(opts.reps ?? (quick ? 1 : 3), command, opts.json);
  }
  const { wallS, others } = await measureCells(script, cells, cfg, { progress: !quick });

  // Report.
  const out = breakerHeader(
    `# Breaker overhead benchmark${quick ? ' (--quick: smoke test, rough numbers)' : ''}`,
    command,
    others,
  );
  out.push(
    `- task: \`async () => { taskCalls++; return 1; }\`, limit/bulkhead ${LIMIT}, queue ${MAX_QUEUED}, batches of ${BATCH} calls, ` +
      `warm-up ${cfg.warmupMs} ms per cell, ${cfg.reps} round-robin measurements of ~${cfg.targetMs} ms (at least ${cfg.minMs} ms) each, ` +
      `one child process per ${cfg.processPer}; wall time ${fmt(wallS)} s`,
  );
  if (selfTestLine) out.push(`- ${selfTestLine}`);
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
      const { med, lo, hi, spread } = cellStats(cell);
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
        `| ${MODES[mode]} | ${x.name} | ${fmt(med)} | ${REFERENCES.map((r) => fmt(ratios[r.id], 2)).join(' | ')} | ${fmt(lo)}–${fmt(hi)} | ${fmt(spread * 100, 0)}% | ${fmt(Math.min(...cell.onCpu) * 100, 0)}% |`,
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

  if (opts.json) {
    const { core, breaker, opossum, cockatiel } = versions();
    writeJson(opts.json, {
      command,
      node: process.version,
      ...cpuInfo(),
      versions: {
        limitsBreaker: breaker.version,
        limitsCore: core.version,
        opossum: opossum.version,
        cockatiel: cockatiel.version,
      },
      othersCpuCores: others,
      config: cfg,
      rows,
    });
  }
}

const cellsArg = process.argv.find((a) => a.startsWith('--cells='));
const profileArg = process.argv.find((a) => a.startsWith('--profile='));
if (cellsArg) {
  serveCells(cellsArg.slice('--cells='.length).split(','), createCell).catch((error) => {
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
