// Runs examples/custom-algorithm in its short mode: the hand-written algorithm must find the
// downstream's capacity, collapse while it is slow, and grow back after, as its printout says.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { assertExitedCleanly, runExample } from './helpers/run-example.mjs';

const script = 'custom-algorithm/main.mjs';

test('the custom algorithm finds the capacity, shrinks its limit while the downstream is slow and regains it after', async () => {
  const run = await runExample(script, ['--quick'], { timeoutMs: 30_000 });
  assertExitedCleanly(assert, script, run);
  const phases = {};
  for (const m of run.stdout.matchAll(
    /^(before|slow|after): mean limit ([\d.]+), min (\d+), max (\d+)$/gm,
  )) {
    phases[m[1]] = { mean: Number(m[2]), min: Number(m[3]), max: Number(m[4]) };
  }
  assert.deepEqual(Object.keys(phases), ['before', 'slow', 'after'], run.stdout);
  const { before, slow, after } = phases;
  // The downstream serves 10 at once: the limit must reach it, from its start of 5.
  assert.ok(before.max >= 10, `limit never reached the capacity: ${before.max}`);
  assert.ok(slow.min <= 2, `limit did not collapse while slow: min ${slow.min}`);
  assert.ok(slow.mean < before.mean, `slow mean ${slow.mean} not below before ${before.mean}`);
  assert.ok(after.max >= 10, `limit did not grow back: max ${after.max}`);
  // The limit events printed the algorithm's own reasons, in both directions.
  assert.match(run.stdout, /limit +\d+ → \d+ +queueing +rtt +\d+ ms/);
  assert.match(run.stdout, /limit +\d+ → \d+ +increase +rtt +\d+ ms/);
  // Every request was answered exactly once: by the downstream or by the fallback.
  const [, total, served, fellBack] = run.stdout.match(
    /^(\d+) requests: (\d+) served by the downstream, (\d+) fell back$/m,
  );
  assert.ok(Number(served) > 0);
  assert.equal(Number(served) + Number(fellBack), Number(total));
});

test('the custom algorithm is a class of under 30 lines', () => {
  const source = readFileSync(new URL(`../${script}`, import.meta.url), 'utf8');
  const start = source.indexOf('class LatencyTargetLimit');
  const end = source.indexOf('\n}\n', start);
  assert.ok(start !== -1 && end !== -1);
  const lines = source.slice(start, end + 2).split('\n').length;
  assert.ok(lines < 30, `${lines} lines`);
});
