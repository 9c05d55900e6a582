// `pnpm run check` (what `npm test` runs after installing) in a scratch workspace whose steps and suites
// are stand-ins that pass or fail on demand: the repository's own `check` script and scripts/.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const pass = 'node -e "process.exit(0)"';
const fail = 'node -e "process.exit(1)"';

/** A vitest-like test script: writes a JSON report with these counts, exits 1 when one failed. */
function vitestLike(name, passed, failed, skipped) {
  const report = JSON.stringify({
    numPassedTests: passed,
    numFailedTests: failed,
    numPendingTests: skipped,
    numTodoTests: 0,
  });
  return `node -e "require('fs').writeFileSync(process.env.LIMITS_TEST_REPORT_DIR + '/${name}.json', '${report.replaceAll('"', '\\"')}'); process.exit(${failed > 0 ? 1 : 0})"`;
}

/** A node:test-like test script (the examples): a JUnit report ending in its count comments. */
function nodeTestLike(name, passed) {
  return `node -e "require('fs').writeFileSync(process.env.LIMITS_TEST_REPORT_DIR + '/${name}.junit.xml', '<testsuites></testsuites>\\n<!-- pass ${passed} -->\\n<!-- fail 0 -->\\n')"`;
}

const dirs = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs `pnpm run check` in a scratch workspace with these root scripts and suites. */
function check(scripts, suites) {
  const dir = mkdtempSync(join(tmpdir(), 'limits-check-test-'));
  dirs.push(dir);
  cpSync(join(root, 'scripts'), join(dir, 'scripts'), {
    recursive: true,
    filter: (src) => src !== join(root, 'scripts', 'test'),
  });
  const json = (path, value) => writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
  json(join(dir, 'package.json'), {
    name: 'scratch',
    private: true,
    type: 'module',
    packageManager: rootPackage.packageManager,
    scripts: { check: rootPackage.scripts.check, ...scripts },
  });
  writeFileSync(join(dir, 'pnpm-workspace.yaml'), 'packages:\n  - packages/*\n  - examples\n');
  for (const [name, test] of Object.entries(suites)) {
    const folder = name === 'examples' ? join(dir, 'examples') : join(dir, 'packages', name);
    mkdirSync(folder, { recursive: true });
    json(join(folder, 'package.json'), { name, private: true, scripts: { test } });
  }
  const reports = join(dir, 'reports');
  const run = spawnSync('npx', ['-y', rootPackage.packageManager, 'run', 'check'], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, LIMITS_TEST_REPORT_DIR: reports },
    shell: process.platform === 'win32',
  });
  if (run.error !== undefined) throw run.error;
  const summary = run.stdout.slice(run.stdout.lastIndexOf('== summary'));
  return { status: run.status, output: `${run.stdout}${run.stderr}`, summary };
}

const allSteps = {
  lint: pass,
  'structure:check': pass,
  build: pass,
  typecheck: pass,
  'docs:check': pass,
  'pack:check': pass,
};

describe('pnpm run check', () => {
  it('runs every step and suite even when some fail, then prints one summary of them all and exits non-zero', () => {
    const r = check(
      { ...allSteps, lint: fail },
      {
        alpha: vitestLike('alpha', 3, 0, 1),
        beta: vitestLike('beta', 2, 1, 0),
        gamma: fail, // stops before its tests run (e.g. a missing redis-server)
        examples: nodeTestLike('examples', 4),
      },
    );
    expect(r.status, r.output).not.toBe(0);
    expect(r.output.split('== summary'), 'one summary').toHaveLength(2);
    expect(r.summary).toMatch(/lint +failed +[\d.]+ s +exit code 1\n/);
    expect(r.summary).toMatch(/structure check +ok /);
    expect(r.summary).toMatch(/build +ok /);
    expect(r.summary).toMatch(/typecheck +ok /);
    expect(r.summary).toMatch(/docs check +ok /);
    expect(r.summary).toMatch(/tests alpha +ok +[\d.]+ s +3 passed, 0 failed, 1 skipped\n/);
    expect(r.summary).toMatch(/tests beta +failed +[\d.]+ s +2 passed, 1 failed, 0 skipped\n/);
    expect(r.summary).toMatch(/tests gamma +failed +[\d.]+ s +no test report \(exit code 1/);
    expect(r.summary).toMatch(/tests examples +ok +[\d.]+ s +4 passed, 0 failed, 0 skipped\n/);
    expect(r.summary).toMatch(/pack check +ok /);
    expect(r.summary).toMatch(
      /tests: 9 passed, 1 failed, 1 skipped; steps: failed: lint, tests beta, tests gamma\n/,
    );
  });

  it('reports the steps that need a failed build as not run, and still runs the rest', () => {
    const r = check(
      { ...allSteps, build: fail },
      { alpha: vitestLike('alpha', 3, 0, 0), examples: nodeTestLike('examples', 4) },
    );
    expect(r.status, r.output).not.toBe(0);
    expect(r.summary).toMatch(/lint +ok /);
    expect(r.summary).toMatch(/build +failed /);
    expect(r.summary).toMatch(/typecheck +not run +needs the build, which failed\n/);
    expect(r.summary).toMatch(/docs check +not run +needs the build, which failed\n/);
    expect(r.summary).toMatch(/tests alpha +ok +[\d.]+ s +3 passed/);
    expect(r.summary).toMatch(/tests examples +not run +needs the build, which failed\n/);
    expect(r.summary).toMatch(/pack check +not run +needs the build, which failed\n/);
    expect(r.summary).toMatch(
      /steps: failed: build; not run: typecheck, docs check, tests examples, pack check\n/,
    );
  });

  it('exits zero when every step and suite passed, and says so', () => {
    const r = check(allSteps, { alpha: vitestLike('alpha', 3, 0, 0) });
    expect(r.status, r.output).toBe(0);
    expect(r.summary).toMatch(/tests: 3 passed, 0 failed, 0 skipped; steps: all 7 ok\n/);
  });
});
