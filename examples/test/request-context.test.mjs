// Runs examples/request-context: across A → B → C the budget shrinks at each hop, the criticality
// travels, each hop numbers its own attempts, and C refuses at its door a request whose budget cannot
// be met, running no expired work.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExitedCleanly, runExample } from './helpers/run-example.mjs';

const script = 'request-context/main.mjs';
const SEEN = /^ {2}([ABC]) got budget +(\d+) ms, criticality (\w+), attempt (\d+)$/;

test('the budget, criticality and attempt travel A → B → C, and C refuses work whose budget ran out', async () => {
  const run = await runExample(script, [], { timeoutMs: 20_000 });
  assertExitedCleanly(assert, script, run);
  const scenarios = [];
  for (const line of run.stdout.split('\n')) {
    if (/^\d\. /.test(line)) scenarios.push({ seen: [], lines: [] });
    const current = scenarios.at(-1);
    if (current === undefined) continue;
    current.lines.push(line);
    const m = SEEN.exec(line);
    if (m) {
      current.seen.push({
        service: m[1],
        budget: Number(m[2]),
        criticality: m[3],
        attempt: Number(m[4]),
      });
    }
  }
  assert.equal(scenarios.length, 3, run.stdout);
  const [first, retried, late] = scenarios;

  // 1. Each hop sees less budget than the one before, at least the 100 ms of work plus the margin
  // less; the criticality the client gave reaches C.
  assert.deepEqual(
    first.seen.map((s) => s.service),
    ['A', 'B', 'C'],
  );
  const [a, b, c] = first.seen;
  assert.ok(a.budget <= 1000 && a.budget > 900, run.stdout);
  assert.ok(b.budget <= a.budget - 110, run.stdout);
  assert.ok(c.budget <= b.budget - 110 && c.budget > 0, run.stdout);
  for (const s of first.seen) {
    assert.equal(s.criticality, 'sheddable_plus');
    assert.equal(s.attempt, 1);
  }
  assert.ok(first.lines.includes('  client got 200 done at C'), run.stdout);

  // 2. B's retry reaches C as attempt 2, with less budget than the first attempt.
  const atC = retried.seen.filter((s) => s.service === 'C');
  assert.deepEqual(
    atC.map((s) => s.attempt),
    [1, 2],
  );
  assert.ok(atC[1].budget < atC[0].budget, run.stdout);
  assert.ok(retried.lines.includes('  client got 200 done at C'), run.stdout);

  // 3. C never runs the late request: refused at its door with reason deadline.
  assert.deepEqual(
    late.seen.map((s) => s.service),
    ['A', 'B'],
  );
  assert.ok(late.lines.includes('  C refused a request at its door: deadline'), run.stdout);
  assert.ok(
    late.lines.includes('  client got 503 {"error":"overloaded","reason":"deadline"}'),
    run.stdout,
  );
  assert.match(run.stdout, /^expired work run at C: 0$/m);
});
