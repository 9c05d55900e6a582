// Per-call overhead of running a trivial async function through a concurrency limiter.
//
//   node bench/overhead.mjs            full run (about 2 minutes)
//   node bench/overhead.mjs --quick    smoke test (about 5 s; numbers are rough, barely warmed up;
//                                      checks the floor semaphores first, see harness.mjs --self-test)
//   node bench/overhead.mjs --json=out.json   also write the raw samples as JSON
//   node bench/overhead.mjs --only=semaphore,limiter,cockatiel --modes=seq,burst --reps=15 --no-gc
//                                      a subset of contenders (ids below) and modes (seq, burst,
//                                      workers), another number of rounds, no forced GC
//
// The method (task, batch shapes, checks, one child process per cell, warm-up, round-robin rounds,
// medians) is harness.mjs's, shared with breaker-overhead.mjs; bench/README.md explains it. This file
// declares the contenders and prints the table: median ns/call and its ratio to the floor, the
// hand-written semaphore (then) in the same mode; the limits-core rows also to the semaphore (async),
// a second floor, an `async` function semaphore.

import { fileURLToPath } from 'node:url';
import { bulkhead } from 'cockatiel';
import { Limiter, VegasLimit } from 'limits-core';
import pLimit from 'p-limit';
import {
  BATCH,
  BURST_LABEL,
  buildState,
  cellStats,
  cpuInfo,
  fmt,
  gitState,
  headerLines,
  LIMIT,
  limiterContender,
  measureCells,
  median,
  packageInfo,
  pinnedVegas,
  plan,
  SEMAPHORES,
  serveCells,
  writeJson,
} from './harness.mjs';

/** maxQueued of the limits-core rows, and queue of cockatiel's bulkhead, in the 10,000-at-once shape. */
const MAX_QUEUED = 100_000;

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
// Contenders. `create(mode)` returns `{ run, inflight, idle }` (see `contender` in harness.mjs):
//   run(fn)     → promise of fn's value, through the contender;
//   inflight()  → calls holding a slot right now (null when the contender does not limit);
//   idle()      → '' when nothing is held or queued, else what is wrong.
// `modes` lists the shapes the contender can run in (default: all). To add a row, add one entry.

const MODES = {
  seq: 'sequential (await one at a time)',
  burst: `concurrent: ${BURST_LABEL}, Promise.all`,
  workers: 'concurrent: 64 workers loop until 10,000 done',
};

const limiterModes = LIMITER_QUEUE.available ? ['seq', 'burst', 'workers'] : ['seq', 'workers'];
// With a queue, the 10,000-at-once shape needs room for 10,000 − 64 waiters.
const queueOpts = (mode) => (mode === 'burst' ? { maxQueued: MAX_QUEUED } : {});

const CONTENDERS = [
  {
    id: 'bare',
    name: 'bare call (no limiter)',
    create: () => ({ run: (fn) => fn(), inflight: () => null, idle: () => '' }),
  },
  ...SEMAPHORES,
  {
    id: 'p-limit',
    name: 'p-limit pLimit(64)',
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
    id: 'cockatiel',
    name: 'cockatiel bulkhead(64, 100000)',
    create: () => {
      const bh = bulkhead(LIMIT, MAX_QUEUED);
      return {
        run: (fn) => bh.execute(fn), // cockatiel passes `{ signal }`; the task ignores it
        inflight: () => LIMIT - bh.executionSlots,
        idle: () =>
          bh.executionSlots === LIMIT && bh.queueSlots === MAX_QUEUED
            ? ''
            : `executionSlots=${bh.executionSlots} queueSlots=${bh.queueSlots}`,
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
    id: 'limiter-shedding',
    name: 'limits-core Limiter({ limit: 64, shedding: {} })',
    modes: limiterModes,
    create: (mode) =>
      limiterContender(new Limiter({ limit: LIMIT, shedding: {}, ...queueOpts(mode) })),
  },
  {
    id: 'limiter-vegas',
    name: 'limits-core Limiter(VegasLimit 64..64)',
    modes: limiterModes,
    create: (mode) =>
      limiterContender(new Limiter({ algorithm: pinnedVegas(VegasLimit), ...queueOpts(mode) })),
  },
  {
    id: 'limiter-vegas-sampled',
    name: 'limits-core Limiter(VegasLimit 64..64, sampleEvery: 8)',
    modes: limiterModes,
    create: (mode) =>
      limiterContender(
        new Limiter({ algorithm: pinnedVegas(VegasLimit), sampleEvery: 8, ...queueOpts(mode) }),
      ),
  },
];
/** Ratios are to the floor (SEMAPHORES[0]); the limits-core rows also to the async semaphore. */
const REFERENCE = SEMAPHORES[0].id;
const OLD_REFERENCE = SEMAPHORES[1].id;
const runsIn = (x, mode) => (x.modes ?? Object.keys(MODES)).includes(mode);

function createCell(id, mode) {
  const x = CONTENDERS.find((x) => x.id === id);
  if (x === undefined || !runsIn(x, mode)) throw new Error(`unknown cell ${id}:${mode}`);
  return x.create(mode);
}

// ---------------------------------------------------------------------------------------------
// Parent.

async function parent(args) {
  const script = fileURLToPath(import.meta.url);
  const { opts, cfg, modes, cells, command, selfTestLine } = await plan({
    script,
    args,
    quickConfig: { warmupMs: 10, warmupBatches: 1, probes: 1, targetMs: 10, reps: 5 },
    modeNames: Object.keys(MODES),
    contenders: CONTENDERS,
  });
  const quick = opts.quick;
  const core = packageInfo('limits-core');
  const plimit = packageInfo('p-limit');
  const cockatiel = packageInfo('cockatiel');

  const { wallS, others } = await measureCells(script, cells, cfg, { progress: !quick });

  // Report.
  const out = headerLines(
    `# limits-core overhead benchmark${quick ? ' (--quick: smoke test, rough numbers)' : ''}`,
    command,
    others,
    `limits-core ${core.version} (${gitState(core.dir)}; ${buildState(core.dir)}), p-limit ${plimit.version}, cockatiel ${cockatiel.version}`,
  );
  out.push(
    `- limits-core waiting queue: ${LIMITER_QUEUE.available ? 'available' : 'not available'} (${LIMITER_QUEUE.reason})`,
  );
  out.push(
    `- task: \`async () => { taskCalls++; return 1; }\`, limit ${LIMIT}, batches of ${BATCH} calls, ` +
      `warm-up ${cfg.warmupMs} ms per cell, ${cfg.reps} round-robin measurements of ~${cfg.targetMs} ms (at least ${cfg.minMs} ms) each, ` +
      `one child process per ${cfg.processPer}; wall time ${fmt(wallS)} s`,
  );
  if (selfTestLine) out.push(`- ${selfTestLine}`);
  out.push('');
  out.push(
    '| mode | contender | median ns/call | × semaphore (then) | × semaphore (async) | min–max ns/call | spread | calls/measurement | shortest measurement | lowest on-CPU |',
  );
  out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  const rows = [];
  const medianOf = (id, mode) => {
    const cell = cells.find((c) => c.mode === mode && c.contender.id === id);
    return cell === undefined ? Number.NaN : median(cell.samples);
  };
  for (const mode of modes) {
    const refMedian = medianOf(REFERENCE, mode);
    const oldRefMedian = medianOf(OLD_REFERENCE, mode);
    for (const x of CONTENDERS) {
      if (opts.only !== undefined && !opts.only.includes(x.id)) continue;
      const cell = cells.find((c) => c.mode === mode && c.contender === x);
      if (cell === undefined) {
        out.push(
          `| ${MODES[mode]} | ${x.name} | skipped: no queue in limits-core yet | | | | | | | |`,
        );
        continue;
      }
      const { med, lo, hi, spread } = cellStats(cell);
      const row = {
        mode,
        contender: x.id,
        name: x.name,
        medianNs: med,
        ratio: med / refMedian,
        // The async semaphore (an `await`-based one), for the limits-core rows only.
        ratioAsync: x.id.startsWith('limiter') ? med / oldRefMedian : undefined,
        samplesNs: cell.samples,
        calls: median(cell.calls),
        msPerMeasurement: cell.ms,
        onCpu: cell.onCpu,
        info: cell.info,
      };
      rows.push(row);
      out.push(
        `| ${MODES[mode]} | ${x.name} | ${fmt(med)} | ${fmt(row.ratio, 2)} | ${row.ratioAsync === undefined ? '' : fmt(row.ratioAsync, 2)} | ${fmt(lo)}–${fmt(hi)} | ${fmt(spread * 100, 0)}% | ${row.calls.toLocaleString('en-US')} | ${fmt(Math.min(...cell.ms), 0)} ms | ${fmt(Math.min(...cell.onCpu) * 100, 0)}% |`,
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

  if (opts.json) {
    writeJson(opts.json, {
      command,
      node: process.version,
      ...cpuInfo(),
      limitsCore: core.version,
      pLimit: plimit.version,
      cockatiel: cockatiel.version,
      limiterQueue: LIMITER_QUEUE,
      reference: REFERENCE,
      config: cfg,
      rows,
    });
  }
}

const cellsArg = process.argv.find((a) => a.startsWith('--cells='));
if (cellsArg) {
  serveCells(cellsArg.slice('--cells='.length).split(','), createCell).catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  parent(process.argv.slice(2)).catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
