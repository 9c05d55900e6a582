// The closing summary of the test command: what passed, failed and did not run. scripts/check.mjs
// records each step of a run in `check.json` beside the suites' reports (vitest JSON, node:test JUnit
// `*.junit.xml` for the examples) and prints this summary at its end; .ci/run prints it again for its
// two runs (Node 20 and Node 24) together:
//
//   node scripts/test-summary.mjs <report dir>...   exits non-zero when a step failed or did not run
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The name of the record scripts/check.mjs keeps in a report dir. */
export const RECORD = 'check.json';

/**
 * `{ passed, failed, skipped }` of one suite's report in `dir` (`<suite>.json` from vitest, or
 * `<suite>.junit.xml` from node:test), or `undefined` when the suite left no report.
 */
export function suiteCounts(dir, suite) {
  const json = join(dir, `${suite}.json`);
  if (existsSync(json)) {
    const report = JSON.parse(readFileSync(json, 'utf8'));
    return {
      passed: report.numPassedTests,
      failed: report.numFailedTests,
      skipped: report.numPendingTests + report.numTodoTests,
    };
  }
  const junit = join(dir, `${suite}.junit.xml`);
  if (existsSync(junit)) {
    // node:test's JUnit reporter ends with comment lines: <!-- pass N -->, <!-- fail N -->, …
    const xml = readFileSync(junit, 'utf8');
    const count = (name) => Number(new RegExp(`<!-- ${name} (\\d+) -->`).exec(xml)?.[1] ?? 0);
    return {
      passed: count('pass'),
      failed: count('fail') + count('cancelled'),
      skipped: count('skipped') + count('todo'),
    };
  }
  return undefined;
}

/**
 * The summary of the run recorded in `dir`: one line per step (status, time, and a suite's test
 * counts), then the totals. `ok` is false when a step failed or did not run, or no record is there.
 */
export function summarize(dir) {
  const path = join(dir, RECORD);
  if (!existsSync(path)) {
    return { ok: false, title: dir, lines: [`  no ${RECORD}: the checks did not start`] };
  }
  const record = JSON.parse(readFileSync(path, 'utf8'));
  const width = Math.max(...record.steps.map((s) => s.name.length));
  const total = { passed: 0, failed: 0, skipped: 0 };
  const lines = [];
  for (const step of record.steps) {
    let detail = step.note ?? '';
    if (step.suite !== undefined && step.status !== 'not run') {
      const counts = suiteCounts(dir, step.suite);
      if (counts === undefined) {
        detail = `no test report (exit code ${step.exitCode}: stopped before its tests ran)`;
      } else {
        for (const k of Object.keys(total)) total[k] += counts[k];
        detail = `${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`;
        if (step.status === 'failed' && counts.failed === 0) {
          detail += ` (exit code ${step.exitCode}: see its output, e.g. coverage below the threshold)`;
        }
      }
    } else if (step.status === 'failed' && detail === '') {
      detail = `exit code ${step.exitCode}`;
    }
    const time = step.seconds === undefined ? '' : `${step.seconds.toFixed(1)} s`;
    lines.push(
      `  ${step.name.padEnd(width)}  ${step.status.padEnd(7)}  ${time.padStart(7)}  ${detail}`.trimEnd(),
    );
  }
  const failed = record.steps.filter((s) => s.status === 'failed').map((s) => s.name);
  const notRun = record.steps.filter((s) => s.status === 'not run').map((s) => s.name);
  const verdict = [
    failed.length > 0 ? `failed: ${failed.join(', ')}` : '',
    notRun.length > 0 ? `not run: ${notRun.join(', ')}` : '',
  ].filter(Boolean);
  lines.push(
    `  tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped; steps: ${
      verdict.length === 0 ? `all ${record.steps.length} ok` : verdict.join('; ')
    }`,
  );
  return {
    ok: failed.length === 0 && notRun.length === 0,
    title: `Node ${record.node}`,
    lines,
  };
}

/** Prints the summary of every run in `dirs`; returns whether all of them passed. */
export function printSummaries(dirs) {
  let ok = true;
  for (const dir of dirs) {
    const summary = summarize(dir);
    console.log(`\n== summary (${summary.title})`);
    console.log(summary.lines.join('\n'));
    ok &&= summary.ok;
  }
  return ok;
}

if (
  process.argv[1] !== undefined &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  process.exitCode = printSummaries(process.argv.slice(2)) ? 0 : 1;
}
