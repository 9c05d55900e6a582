// limits-core's `Limiter.run` at two (or more) commits, side by side in one run: the floor semaphore
// and a limiter row per commit, round-robin in fresh child processes (harness.mjs's method), so a
// before/after claim compares figures measured together rather than on two occasions.
//
//   node bench/compare-builds.mjs --commits=854e4ce,HEAD                 10,000 at once, fixed limit
//   node bench/compare-builds.mjs --commits=854e4ce,WORKTREE --modes=seq,burst,workers --reps=15
//   node bench/compare-builds.mjs --commits=HEAD~3,HEAD --algorithms=fixed,vegas
//
// Each commit's packages/limits-core/src is compiled (git archive + tsc) into
// packages/limits-core/.builds/<sha>/ (ignored by git; removed at the end, --keep keeps it); WORKTREE
// is the current packages/limits-core/dist (build it first). Rows: `<commit> fixed` is
// `new Limiter({ limit: 64 })`, `<commit> vegas` `VegasLimit` pinned to 64 (as in overhead.mjs); with
// 10,000 at once both get `maxQueued: 100000`.

import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  cellStats,
  cpuInfo,
  fmt,
  LIMIT,
  limiterContender,
  measureCells,
  median,
  pinnedVegas,
  plan,
  SEMAPHORES,
  serveCells,
} from './harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CORE = path.join(ROOT, 'packages', 'limits-core');
const BUILDS = path.join(CORE, '.builds');

const MODES = {
  seq: 'sequential (await one at a time)',
  burst: 'concurrent: 10,000 at once, Promise.all',
  workers: 'concurrent: 64 workers loop until 10,000 done',
};
const EXTRA = ['commits=', 'algorithms=', 'keep', 'cells='];

/** `name=value` from the command line (or the environment a parent passed to its cells). */
function arg(name) {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a === undefined ? process.env[`COMPARE_${name.toUpperCase()}`] : a.slice(name.length + 3);
}

const commits = (arg('commits') ?? '').split(',').filter((c) => c !== '');
const algorithms = (arg('algorithms') ?? 'fixed').split(',');
for (const a of algorithms) {
  if (a !== 'fixed' && a !== 'vegas') throw new Error(`--algorithms: fixed or vegas, got ${a}`);
}

/** The resolved commit id (or WORKTREE) of a name. */
function resolve(commit) {
  if (commit === 'WORKTREE') return commit;
  return execFileSync('git', ['rev-parse', '--short=12', commit], { cwd: ROOT }).toString().trim();
}

/** The index.js to import for a resolved commit (its build under .builds/, or the current dist). */
function entry(id) {
  return id === 'WORKTREE'
    ? path.join(CORE, 'dist', 'index.js')
    : path.join(BUILDS, id, 'out', 'index.js');
}

/** Compiles a commit's limits-core sources into .builds/<id>/out (inside the package: its node_modules resolve). */
function build(id) {
  const dir = path.join(BUILDS, id);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const tar = execFileSync('git', ['archive', id, 'packages/limits-core/src'], { cwd: ROOT });
  execFileSync('tar', ['-x', '-C', dir, '--strip-components=2'], { input: tar });
  const tsconfig = {
    extends: '../../../../tsconfig.base.json',
    compilerOptions: {
      rootDir: 'src',
      outDir: 'out',
      declaration: false,
      declarationMap: false,
      sourceMap: false,
    },
    include: ['src'],
  };
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
  execFileSync('npx', ['tsc', '-p', path.join(dir, 'tsconfig.json')], {
    cwd: CORE,
    stdio: 'inherit',
  });
}

function contenders(ids) {
  const rows = [SEMAPHORES[0]];
  for (const id of ids) {
    for (const alg of algorithms) {
      rows.push({
        id: `${id}-${alg}`,
        name: `${id} ${alg}`,
        create: async (mode) => {
          const core = await import(pathToFileURL(entry(id)).href);
          const limit = alg === 'fixed' ? LIMIT : pinnedVegas(core.VegasLimit);
          const limiter = new core.Limiter({
            ...(typeof limit === 'number' ? { limit } : { algorithm: limit }),
            ...(mode === 'burst' ? { maxQueued: 100_000 } : {}),
          });
          return limiterContender(limiter);
        },
      });
    }
  }
  return rows;
}

const cellsArg = arg('cells');
if (cellsArg !== undefined) {
  // A cell process: its contenders come from the parent's resolved commits.
  const ids = (process.env.COMPARE_IDS ?? '').split(',');
  const rows = contenders(ids);
  serveCells(cellsArg.split(','), async (id, mode) => {
    const row = rows.find((x) => x.id === id);
    if (row === undefined) throw new Error(`unknown cell ${id}:${mode}`);
    return await row.create(mode);
  }).catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  if (commits.length === 0) throw new Error('--commits=A,B (git commits, or WORKTREE) is required');
  const ids = commits.map(resolve);
  process.env.COMPARE_IDS = ids.join(',');
  process.env.COMPARE_ALGORITHMS = algorithms.join(',');
  try {
    for (const id of ids) if (id !== 'WORKTREE') build(id);
    const script = fileURLToPath(import.meta.url);
    // (`plan` knows this script's own flags: EXTRA.)
    const args = process.argv.slice(2);
    const { cfg, cells } = await plan({
      script,
      args: args.some((a) => a.startsWith('--modes=')) ? args : [...args, '--modes=burst'],
      extra: EXTRA,
      quickConfig: { warmupMs: 10, warmupBatches: 1, probes: 1, targetMs: 10, reps: 3 },
      modeNames: Object.keys(MODES),
      contenders: contenders(ids),
    });
    const { wallS } = await measureCells(script, cells, cfg, { progress: false });
    console.log(
      `# limits-core builds side by side\n\n- command: \`node bench/compare-builds.mjs ${process.argv.slice(2).join(' ')}\``,
    );
    console.log(`- commits: ${commits.map((c, i) => `${c} = ${ids[i]}`).join(', ')}`);
    const { cpu, cpus } = cpuInfo();
    console.log(
      `- CPU: ${cpu} × ${cpus}; node ${process.version}; ${cfg.reps} round-robin rounds, wall time ${fmt(wallS)} s\n`,
    );
    console.log('| mode | row | median ns/call | × floor | min–max ns/call |');
    console.log('|---|---|--:|--:|--:|');
    for (const mode of new Set(cells.map((c) => c.mode))) {
      const floor = median(
        cells.find((c) => c.mode === mode && c.group === SEMAPHORES[0].id).samples,
      );
      for (const c of cells.filter((x) => x.mode === mode)) {
        const { med, lo, hi } = cellStats(c);
        console.log(
          `| ${MODES[mode]} | ${c.contender.name} | ${fmt(med)} | ${(med / floor).toFixed(2)} | ${fmt(lo)}–${fmt(hi)} |`,
        );
      }
    }
  } finally {
    if (!process.argv.includes('--keep')) rmSync(BUILDS, { recursive: true, force: true });
  }
}
