// The checks of the test command (`npm test` installs, then `pnpm run check` runs this): every step and
// every test suite in turn, each whatever happened to the ones before it, then ONE summary of what
// passed, failed and did not run (scripts/test-summary.mjs); exits non-zero when anything failed or did
// not run. Only a step that needs the build (typecheck, docs check, the examples, the scripts' tests,
// pack check) is left out, as not run, when the build failed.
//
// Test suites: each folder under packages/ and examples/ whose package.json has a `test` script, and
// the repository's own scripts (`test:scripts` in the root package.json). Their reports (vitest JSON,
// node:test JUnit) and this run's record (`check.json`) go to LIMITS_TEST_REPORT_DIR when it is set
// (.ci/run keeps them to print both of its runs together), else to a temp dir removed at the end.
//
//   node scripts/check.mjs
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { printSummaries, RECORD } from './test-summary.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const isWindows = process.platform === 'win32';

/** The `scripts` of the package.json in `dir` (an empty object when there is none). */
function scriptsOf(dir) {
  const path = join(root, dir, 'package.json');
  return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')).scripts ?? {}) : {};
}

/** The suites to run, as `{ name, dir, script, needsBuild }` (`name` also names the suite's report). */
function suites() {
  const found = [];
  const packages = existsSync(join(root, 'packages')) ? readdirSync(join(root, 'packages')) : [];
  for (const pkg of packages.sort()) {
    const dir = join('packages', pkg);
    if (scriptsOf(dir).test !== undefined) found.push({ name: pkg, dir, script: 'test' });
  }
  // The examples import the packages as a user does, through their built dist/.
  if (scriptsOf('examples').test !== undefined) {
    found.push({ name: 'examples', dir: 'examples', script: 'test', needsBuild: true });
  }
  // The docs check's tests run README blocks, which import the built packages too.
  if (scriptsOf('.')['test:scripts'] !== undefined) {
    found.push({ name: 'scripts', dir: '.', script: 'test:scripts', needsBuild: true });
  }
  return found;
}

/** How to call pnpm: the one on PATH (`npm test` puts it there), else the pinned one through npx. */
function pnpmCommand() {
  if (spawnSync('pnpm', ['--version'], { stdio: 'ignore', shell: isWindows }).status === 0) {
    return ['pnpm'];
  }
  const pinned = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager;
  return ['npx', '-y', pinned ?? 'pnpm'];
}

const steps = [
  { name: 'lint', dir: '.', script: 'lint' },
  { name: 'structure check', dir: '.', script: 'structure:check' },
  { name: 'build', dir: '.', script: 'build' },
  { name: 'typecheck', dir: '.', script: 'typecheck', needsBuild: true },
  { name: 'docs check', dir: '.', script: 'docs:check', needsBuild: true },
  ...suites().map((s) => ({ ...s, name: `tests ${s.name}`, suite: s.name })),
  { name: 'pack check', dir: '.', script: 'pack:check', needsBuild: true },
];

const ownDir = process.env.LIMITS_TEST_REPORT_DIR === undefined;
const reports = ownDir
  ? mkdtempSync(join(tmpdir(), 'limits-check-'))
  : process.env.LIMITS_TEST_REPORT_DIR;
mkdirSync(reports, { recursive: true });
const record = {
  node: process.version,
  steps: steps.map((s) => ({ name: s.name, suite: s.suite, status: 'not run' })),
};
/** Writes the record as it stands, so a run cut short still says what did not run. */
const save = () => writeFileSync(join(reports, RECORD), `${JSON.stringify(record, null, 2)}\n`);

const [pnpm, ...pnpmArgs] = pnpmCommand();
const env = { ...process.env, LIMITS_TEST_REPORT_DIR: reports };
try {
  save();
  let built = true;
  for (const [i, step] of steps.entries()) {
    const entry = record.steps[i];
    if (step.needsBuild && !built) {
      entry.note = 'needs the build, which failed';
      save();
      continue;
    }
    if (step.suite !== undefined) {
      // A report left from an earlier run in the same folder must not stand in for this one.
      rmSync(join(reports, `${step.suite}.json`), { force: true });
      rmSync(join(reports, `${step.suite}.junit.xml`), { force: true });
    }
    const args = [...pnpmArgs, '--dir', join(root, step.dir), 'run', step.script];
    console.log(`\n== ${step.name} (${[pnpm, ...args].join(' ')})`);
    const started = performance.now();
    const run = spawnSync(pnpm, args, { cwd: root, env, stdio: 'inherit', shell: isWindows });
    const seconds = (performance.now() - started) / 1000;
    entry.exitCode = run.status ?? run.signal ?? run.error?.message;
    entry.status = run.status === 0 ? 'ok' : 'failed';
    entry.seconds = Math.round(seconds * 10) / 10;
    if (step.name === 'build' && entry.status === 'failed') built = false;
    console.log(`== ${step.name}: ${entry.status} in ${seconds.toFixed(1)} s`);
    save();
  }
  process.exitCode = printSummaries([reports]) ? 0 : 1;
} finally {
  if (ownDir) rmSync(reports, { recursive: true, force: true });
}
