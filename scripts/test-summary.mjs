// Prints one "N passed, N failed" line from the vitest JSON reports and node:test JUnit reports
// (`*.junit.xml`, the examples) in the given folders (used by .ci/run); exits non-zero when a test
// failed or none ran.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

let passed = 0;
let failed = 0;
let skipped = 0;
for (const dir of process.argv.slice(2)) {
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json'))) {
    const report = JSON.parse(readFileSync(join(dir, file), 'utf8'));
    passed += report.numPassedTests;
    failed += report.numFailedTests;
    skipped += report.numPendingTests + report.numTodoTests;
  }
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.junit.xml'))) {
    // node:test's JUnit reporter ends with comment lines: <!-- pass N -->, <!-- fail N -->, …
    const xml = readFileSync(join(dir, file), 'utf8');
    const count = (name) => Number(new RegExp(`<!-- ${name} (\\d+) -->`).exec(xml)?.[1] ?? 0);
    passed += count('pass');
    failed += count('fail') + count('cancelled');
    skipped += count('skipped') + count('todo');
  }
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exitCode = failed > 0 || passed === 0 ? 1 : 0;
