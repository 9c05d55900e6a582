// Runs examples/wrap-fetch in its short mode: through limitFetch, the Vegas limit must fall while
// the local server is slow (so few requests sit on it) and climb back after it recovers.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExitedCleanly, runExample } from './helpers/run-example.mjs';

const script = 'wrap-fetch/main.mjs';

test('limitFetch shrinks the limit while the server is slow, holds few requests on it, and regains the limit after', async () => {
  const run = await runExample(script, ['--quick'], { timeoutMs: 30_000 });
  assertExitedCleanly(assert, script, run);
  const phases = {};
  for (const m of run.stdout.matchAll(
    /^(before|slow|after): limit mean ([\d.]+) \(min (\d+), max (\d+), at the end (\d+)\), peak in flight at the server (\d+), (\d+) answered, (\d+) fell back, (\d+) timed out$/gm,
  )) {
    const [, name, mean, min, max, last, peak, ok, fellBack, timedOut] = m.map(Number);
    phases[m[1]] = { mean, min, max, last, peak, ok, fellBack, timedOut, name };
  }
  assert.deepEqual(Object.keys(phases), ['before', 'slow', 'after'], run.stdout);
  const { before, slow, after } = phases;
  // By the end of the slowdown the limit is well below what it was while the server was fast.
  assert.ok(
    slow.last < 0.7 * before.max,
    `limit ${slow.last} late in the slowdown, ${before.max} before`,
  );
  // 300 requests/s × 0.5 s would be 150 at once on the slow server without the limiter.
  assert.ok(slow.peak < 50, `peak in flight at the slow server: ${slow.peak}`);
  assert.ok(slow.fellBack > 0, run.stdout);
  assert.ok(after.max > slow.last, `the limit did not climb back: ${after.max}`);
  for (const p of [before, slow, after]) assert.ok(p.ok > 0, run.stdout);
});
