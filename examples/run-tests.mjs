// The examples' test command: node:test over test/*.test.mjs, with the spec reporter on stdout and, when
// CI collects reports (LIMITS_TEST_REPORT_DIR, see .ci/run), a JUnit report for its summary line.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const files = readdirSync(join(here, 'test'))
  .filter((f) => f.endsWith('.test.mjs'))
  .map((f) => join('test', f));
const report = process.env.LIMITS_TEST_REPORT_DIR;
const reporters = report
  ? ['--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=junit']
  : [];
if (report) reporters.push(`--test-reporter-destination=${join(report, 'examples.junit.xml')}`);
const run = spawnSync(process.execPath, ['--test', ...reporters, ...files], {
  cwd: here,
  stdio: 'inherit',
});
process.exitCode = run.status ?? 1;
