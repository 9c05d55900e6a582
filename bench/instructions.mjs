// Machine instructions per call, counted by valgrind (cachegrind without its cache simulation): a
// before/after measure that does not drift with the machine's speed. On the shared VMs these benches
// run on, the same timing cell moved by 2× within hours; the instruction count of a cell repeats to
// within 0.2–0.6 % (sequential and queue cells) or about 2 % (bursts, whose garbage collection
// varies more). It counts work, not time (no cache misses, no stalls), so it locates a
// regression; the timing benches (breaker-overhead.mjs, overhead.mjs) remain what the targets use.
//
//   node bench/instructions.mjs                         every cell, this checkout's built packages
//   node bench/instructions.mjs --cells=guard-timeout:seq,queue:burst
//   node bench/instructions.mjs --breaker=/tmp/old/packages/limits-breaker   another build (below)
//   node bench/instructions.mjs --semi-space=64         V8's young generation fixed at 64 MB
//   node bench/instructions.mjs --burst=9000            bursts of 9,000 calls instead of 10,000
//   node bench/instructions.mjs --cells=guard:seq --cache-sim
//                                                       also data reads, writes, and simulated
//                                                       first-level and last-level data cache misses
//                                                       per call (cachegrind's model of this CPU's
//                                                       caches; slower)
//   node bench/instructions.mjs --cells=guard:burst --branch-sim
//                                                       also conditional and indirect branches and
//                                                       their simulated mispredictions per call
//   node bench/instructions.mjs --cells=guard:seq --functions=30
//                                                       also the 30 functions with the most
//                                                       instructions per call (callgrind; slower);
//                                                       with --cache-sim, the most first-level data
//                                                       cache misses per call; with --branch-sim,
//                                                       the most mispredicted branches per call
//
// Another commit's build: `git worktree add /tmp/old <commit>`, then in /tmp/old
// `npx -y pnpm@12.4.2 install --frozen-lockfile && npx -y pnpm@12.4.2 -r --filter "./packages/**" run build`;
// its limits-core is the one that limits-breaker package resolves. Needs valgrind
// (`apt-get install -y valgrind`). Each cell runs twice under valgrind, with 200,000 and 600,000 calls
// after the same start-up, and reports (count₂ − count₁) / 400,000: start-up, module loading and the
// first optimisations cancel out. Node runs `--single-threaded` (no background compiler or GC threads,
// whose share would vary). A cell takes 1–2 minutes.
//
// Cells (limit 64; burst: 10,000 calls at once (--burst), then await all, as in breaker-overhead.mjs):
//   guard:seq, guard:burst                  guard() without a timeout
//   guard-timeout:seq, guard-timeout:burst  guard() with a 10,000 ms timeout
//   vegas:seq                               limits-core alone: `Limiter.run` one call at a time with a
//                                           VegasLimit pinned to 64 (overhead.mjs's limiter-vegas row;
//                                           a clock that steps 0.25 ms per reading and
//                                           `stallThresholdMs: 600000`, see vegasCell)
//   queue:burst                             limits-core alone: 10,000 permit requests at once
//                                           (`acquireWith`; `_acquireFor` on builds before issue 10),
//                                           each permit released a microtask after its grant
// No opossum cell: opossum keeps 10 s of latency samples and sorts them for its snapshot each second,
// so its work per call depends on how many calls fit in 10 s of wall time, which valgrind slows ~50×.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  breakerDirArg,
  guardOfAnyBuild,
  packageEntryUrl,
  pinnedVegas,
  yieldToLoop,
} from './harness.mjs';

const CELLS = [
  'guard:seq',
  'guard-timeout:seq',
  'guard:burst',
  'guard-timeout:burst',
  'queue:burst',
  'vegas:seq',
];
const CALLS = [200_000, 600_000];

const TIMEOUT_MS = 10_000;

const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BURST = Number(arg('burst') ?? 10_000);
const CACHE_SIM = process.argv.includes('--cache-sim');
const BRANCH_SIM = process.argv.includes('--branch-sim');
const breakerDir = breakerDirArg();

/** The packages of the build under test: limits-breaker, and the limits-core it resolves. */
async function load() {
  const corePkg = realpathSync(path.join(breakerDir, 'node_modules', 'limits-core'));
  return {
    breaker: await import(packageEntryUrl(breakerDir)),
    core: await import(packageEntryUrl(corePkg)),
  };
}

/** `calls` calls of `fire`, one at a time (seq) or BURST at once, each burst awaited (burst). */
async function fireCalls(fire, shape, calls) {
  if (shape === 'seq') {
    for (let i = 0; i < calls; i++) await fire();
    return;
  }
  for (let done = 0; done < calls; done += BURST) {
    const all = new Array(BURST);
    for (let i = 0; i < BURST; i++) all[i] = fire();
    await Promise.all(all);
    await yieldToLoop();
  }
}

async function guardCell(breaker, timed, shape, calls) {
  const g = guardOfAnyBuild(breaker.guard, async () => 1, timed ? TIMEOUT_MS : false, {
    limit: 64,
    maxQueued: 20_000,
  });
  await fireCalls(() => g.fire(), shape, calls);
  if (g.limiter.inflight !== 0 || g.limiter.queued !== 0) throw new Error('guard not idle');
  await g.shutdown();
}

async function queueCell(core, calls) {
  const limiter = new core.Limiter({ limit: 64, maxQueued: 20_000 });
  let released = 0;
  const release = (permit) =>
    queueMicrotask(() => {
      permit.success();
      released++;
    });
  const request = {
    queued() {},
    granted: release,
    refused: (error) => {
      throw error;
    },
    _granted: release,
    _refused: (error) => {
      throw error;
    },
  };
  const take =
    typeof limiter.acquireWith === 'function'
      ? () => limiter.acquireWith(request)
      : () => limiter.tryAcquire() ?? limiter._acquireFor(request);
  for (let done = 0; done < calls; done += BURST) {
    released = 0;
    for (let i = 0; i < BURST; i++) {
      const permit = take();
      if (permit !== undefined) release(permit);
    }
    while (released < BURST) await yieldToLoop();
  }
  if (limiter.inflight !== 0 || limiter.queued !== 0) throw new Error('limiter not idle');
}

async function vegasCell(core, calls) {
  // A clock that advances 0.25 ms per reading (exact in binary): every call's sample is alike (an
  // RTT of 0.25 ms), so the algorithm takes the same path in every run and build. With the system
  // clock, under valgrind, the RTTs varied and so did its path: the count moved by ±10 % between
  // runs. And a stall threshold of 10 minutes: the default 50 ms would see stalls under valgrind,
  // and a sample overlapping one is discarded before it reaches the algorithm (until session 13
  // this cell measured mostly that path). Every call does the default's work (the stall detector
  // armed, the call tracked for late reports, the overlap check); only the detector's tick, every
  // 25 ms by default and not per call, never comes. Fails if any sample was discarded.
  let t = 0;
  const clock = {
    now: () => {
      t += 0.25;
      return t;
    },
    setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
    clearTimeout: (handle) => clearTimeout(handle),
  };
  const limiter = new core.Limiter({
    algorithm: pinnedVegas(core.VegasLimit),
    stallThresholdMs: 600_000,
    clock,
  });
  const task = async () => 1;
  await fireCalls(() => limiter.run(task), 'seq', calls);
  if (limiter.inflight !== 0) throw new Error('limiter not idle');
  const stalled = limiter.snapshot().stalledSamples;
  if (stalled !== 0) throw new Error(`${stalled} of ${calls} samples discarded as stalled`);
}

async function child(cell, calls) {
  const { breaker, core } = await load();
  const [name, shape] = cell.split(':');
  if (name === 'queue') await queueCell(core, calls);
  else if (name === 'vegas') await vegasCell(core, calls);
  else await guardCell(breaker, name === 'guard-timeout', shape, calls);
}

/**
 * One run of `cell` with `calls` calls under valgrind: its instruction count, and with `byFunction`
 * (callgrind, and Node's `--perf-basic-prof` map naming the compiled JavaScript) the self
 * instructions of each function.
 */
function run(cell, calls, byFunction) {
  const semi = arg('semi-space');
  const nodeArgs = [
    '--single-threaded',
    ...(semi ? [`--min-semi-space-size=${semi}`, `--max-semi-space-size=${semi}`] : []),
    ...(byFunction ? ['--perf-basic-prof'] : []),
    fileURLToPath(import.meta.url),
    `--child=${cell}`,
    `--calls=${calls}`,
    `--breaker=${breakerDir}`,
    `--burst=${BURST}`,
  ];
  const dir = mkdtempSync(path.join(tmpdir(), 'limits-instr-'));
  const out = path.join(dir, 'callgrind.out');
  const tool = byFunction
    ? [
        '--tool=callgrind',
        '--dump-instr=yes',
        `--callgrind-out-file=${out}`,
        ...(CACHE_SIM ? ['--cache-sim=yes'] : []),
        ...(BRANCH_SIM ? ['--branch-sim=yes'] : []),
      ]
    : [
        '--tool=cachegrind',
        `--cache-sim=${CACHE_SIM ? 'yes' : 'no'}`,
        ...(BRANCH_SIM ? ['--branch-sim=yes'] : []),
        '--cachegrind-out-file=/dev/null',
      ];
  let report;
  try {
    // valgrind reports on stderr: keep it, drop the child's stdout.
    report = execFileSync(
      'sh',
      ['-c', 'exec valgrind "$@" 2>&1 >/dev/null', 'sh', ...tool, process.execPath, ...nodeArgs],
      // In its own directory: `--perf-basic-prof` also leaves V8 log files in the working directory.
      { encoding: 'utf8', cwd: dir },
    );
    const m = report.match(/I\s+refs:\s+([\d,]+)/);
    if (m === null) throw new Error(`no instruction count for ${cell}:\n${report}`);
    const total = Number(m[1].replaceAll(',', ''));
    if ((CACHE_SIM || BRANCH_SIM) && !byFunction) {
      const count = (label) =>
        Number(
          report.match(new RegExp(`${label}:\\s+([\\d,]+)`))?.[1].replaceAll(',', '') ?? Number.NaN,
        );
      return {
        total,
        dRefs: count('D\\s+refs'),
        d1Misses: count('D1\\s+misses'),
        lldMisses: count('LLd\\s+misses'),
        branches: count('Branches'),
        mispredicts: count('Mispredicts'),
        // "Mispredicts: n (c cond + i ind)": the indirect ones (calls through a register, such as
        // V8's dispatch to builtins and inline-cache stubs) are the ones a polymorphic site adds.
        indirectMispredicts: Number(
          report
            .match(/Mispredicts:\s+[\d,]+\s+\(\s*[\d,]+ cond \+\s+([\d,]+) ind\)/)?.[1]
            .replaceAll(',', '') ?? Number.NaN,
        ),
      };
    }
    if (!byFunction) return { total };
    const pid = report.match(/^==(\d+)==/m)?.[1];
    const mapFile = `/tmp/perf-${pid}.map`; // where V8's --perf-basic-prof writes it
    try {
      return {
        total,
        functions: selfByFunction(readFileSync(out, 'utf8'), readFileSync(mapFile, 'utf8')),
      };
    } finally {
      rmSync(mapFile, { force: true });
    }
  } catch (error) {
    if (error.status === undefined) throw error;
    throw new Error(
      `${cell} failed under valgrind (installed? apt-get install -y valgrind):\n${error.stdout ?? error.message}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Self instructions by function from a callgrind file: native functions by their symbol, compiled
 * JavaScript (in no object file) by the name Node's perf map gives its address.
 */
function selfByFunction(callgrind, perfMap) {
  const code = perfMap
    .trim()
    .split('\n')
    .map((line) => {
      const [start, size, ...name] = line.split(' ');
      return {
        start: Number.parseInt(start, 16),
        size: Number.parseInt(size, 16),
        name: name.join(' '),
      };
    })
    .sort((a, b) => a.start - b.start);
  const jsName = (addr) => {
    let lo = 0;
    let hi = code.length - 1;
    let k = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (code[mid].start <= addr) {
        k = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    const c = code[k];
    return c !== undefined && addr < c.start + c.size ? c.name : 'JIT code without a name';
  };
  const names = { fn: new Map(), ob: new Map() };
  const self = new Map();
  let fn = '';
  let ob = '';
  let addr = 0;
  let callCost = false;
  // The events summed: instructions (the first), or with --cache-sim the first-level data misses,
  // or with --branch-sim the mispredicted conditional and indirect branches.
  let columns = [0];
  for (const line of callgrind.split('\n')) {
    if (line.startsWith('events:')) {
      const events = line.slice(7).trim().split(/\s+/);
      if (CACHE_SIM) columns = ['D1mr', 'D1mw'].map((e) => events.indexOf(e)).filter((i) => i >= 0);
      else if (BRANCH_SIM)
        columns = ['Bcm', 'Bim'].map((e) => events.indexOf(e)).filter((i) => i >= 0);
      continue;
    }
    const named = line.match(/^(c?)(fn|ob|fl|fi|fe)=(?:\((\d+)\))?\s*(.*)$/);
    if (named !== null) {
      // `fn`/`cfn` share one table of compressed names, as do `ob`/`cob`; a `c…` line names a callee
      // and leaves the current function as it is.
      const [, callee, kind, id, text] = named;
      if (kind === 'fn' || kind === 'ob') {
        const table = names[kind];
        let name = text;
        if (id !== undefined) {
          if (name !== '') table.set(id, name);
          else name = table.get(id);
        }
        if (callee === '') {
          if (kind === 'fn') fn = name;
          else ob = name;
        }
      }
      continue;
    }
    // The cost line after `calls=` is the callee's inclusive cost, not the caller's own.
    if (line.startsWith('calls=')) {
      callCost = true;
      continue;
    }
    const cost = line.match(/^(0x[0-9a-f]+|[+-]\d+|\*)\s+\S+\s+(\d[\d ]*)$/);
    if (cost === null) continue;
    const [, at, counts] = cost;
    const values = counts.split(' ');
    const ir = columns.reduce((sum, i) => sum + Number(values[i] ?? 0), 0);
    if (at.startsWith('0x')) addr = Number.parseInt(at, 16);
    else if (at !== '*') addr += Number(at);
    if (callCost) {
      callCost = false;
      continue;
    }
    const key = ob === '???' ? jsName(addr) : fn.replace(/\(.*$/, '');
    self.set(key, (self.get(key) ?? 0) + Number(ir));
  }
  return self;
}

const childCell = arg('child');
if (childCell !== undefined) {
  await child(childCell, Number(arg('calls')));
} else {
  const cells = arg('cells')?.split(',') ?? CELLS;
  for (const c of cells)
    if (!CELLS.includes(c)) throw new Error(`unknown cell ${c}; one of ${CELLS}`);
  await load(); // fails early on a missing build
  console.log(
    `instructions per call (valgrind cachegrind), ${path.relative(process.cwd(), breakerDir) || '.'}` +
      `${arg('semi-space') ? `, semi-space ${arg('semi-space')} MB` : ''}, Node ${process.version}`,
  );
  const top = Number(arg('functions') ?? 0);
  for (const cell of cells) {
    // A burst cell makes whole bursts: ceil(calls / BURST) of them.
    const made = CALLS.map((n) => (cell.endsWith(':burst') ? Math.ceil(n / BURST) * BURST : n));
    const [a, b] = CALLS.map((n) => run(cell, n, top > 0));
    const per = made[1] - made[0];
    const line = `${cell.padEnd(20)} ${Math.round((b.total - a.total) / per)}`;
    const d = (k) => ((b[k] - a[k]) / per).toFixed(k === 'dRefs' || k === 'branches' ? 0 : 2);
    const extra = [];
    if (CACHE_SIM && top === 0) {
      extra.push(
        `data refs ${d('dRefs')}, D1 misses ${d('d1Misses')}, LLd misses ${d('lldMisses')}`,
      );
    }
    if (BRANCH_SIM && top === 0) {
      extra.push(
        `branches ${d('branches')}, mispredicted ${d('mispredicts')} (indirect ${d('indirectMispredicts')})`,
      );
    }
    console.log(extra.length === 0 ? line : `${line}  ${extra.join('; ')}`);
    if (top > 0) {
      const rows = [...b.functions]
        .map(([name, ir]) => [name, (ir - (a.functions.get(name) ?? 0)) / per])
        .sort((x, y) => y[1] - x[1])
        .slice(0, top);
      if (CACHE_SIM) console.log('  (first-level data cache misses per call, by function)');
      else if (BRANCH_SIM) console.log('  (mispredicted branches per call, by function)');
      for (const [name, ir] of rows)
        console.log(`  ${ir.toFixed(CACHE_SIM || BRANCH_SIM ? 2 : 0).padStart(7)}  ${name}`);
    }
  }
}
