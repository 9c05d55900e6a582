// Runs examples/guard-fallback in its short mode: the circuit must open on the server's failures,
// probe it HALF_OPEN with at most probeSlots trial calls, and close again once it recovers, while
// every caller gets the server's answer or the fallback's.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExitedCleanly, runExample } from './helpers/run-example.mjs';

const script = 'guard-fallback/main.mjs';

test('the guard opens on failures, probes HALF_OPEN with at most two trial calls, closes on recovery and answers every call', async () => {
  const run = await runExample(script, ['--quick'], { timeoutMs: 30_000 });
  assertExitedCleanly(assert, script, run);
  const out = run.stdout;

  const changes = [
    ...out.matchAll(/circuit (CLOSED|OPEN|HALF_OPEN) → (CLOSED|OPEN|HALF_OPEN)/g),
  ].map((m) => `${m[1]}→${m[2]}`);
  assert.equal(changes[0], 'CLOSED→OPEN', out);
  assert.ok(changes.includes('OPEN→HALF_OPEN'), out);
  assert.equal(changes.at(-1), 'HALF_OPEN→CLOSED', out);
  // Each state change starts where the previous one ended.
  for (let i = 1; i < changes.length; i++) {
    assert.equal(changes[i].split('→')[0], changes[i - 1].split('→')[1], out);
  }

  // Trial calls reached the server while it was still failing, and once it had recovered.
  assert.match(out, /trial call → HTTP 500/);
  assert.match(out, /trial call → HTTP 200/);

  // The fallbacks name their reasons, with the error the caller would have had.
  assert.match(out, /first fallback with reason "error": Error: HTTP 500/);
  assert.match(out, /first fallback with reason "open": CircuitOpenError: /);

  const summary = out.match(
    /^(\d+) calls: (\d+) answered by the server, (\d+) by the fallback \(open (\d+), limiter (\d+), timeout (\d+), error (\d+)\); most trial calls at once (\d+); final state (\w+)$/m,
  );
  assert.ok(summary, out);
  const [, total, server, fallback, open, limiter, timeout, error, trials, finalState] = summary;
  assert.equal(Number(server) + Number(fallback), Number(total));
  assert.equal(Number(open) + Number(limiter) + Number(timeout) + Number(error), Number(fallback));
  assert.ok(Number(server) > 0 && Number(open) > 0 && Number(error) > 0);
  assert.ok(Number(trials) >= 1 && Number(trials) <= 2, `trial calls at once: ${trials}`);
  assert.equal(finalState, 'CLOSED');
});
