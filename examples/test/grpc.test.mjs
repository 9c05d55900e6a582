// Runs examples/grpc: a burst of calls through limitGrpcClient at a server behind loadShedGrpc.
// Some calls succeed, the surplus is refused with RESOURCE_EXHAUSTED naming the limiter's reason,
// and every permit comes back on both sides.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExitedCleanly, runExample } from './helpers/run-example.mjs';

const script = 'grpc/client.mjs';

test('a burst through the gRPC interceptors: some served, the surplus refused with a status, no permit held', async () => {
  const run = await runExample(script, [], { timeoutMs: 30_000 });
  assertExitedCleanly(assert, script, run);
  const lines = run.stdout.split('\n');
  const counts = {};
  for (const line of lines) {
    const m = line.match(/^ *(\d+) {2}(.+)$/);
    if (m) counts[m[2]] = Number(m[1]);
  }
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  assert.equal(total, 40, run.stdout);
  assert.ok((counts.OK ?? 0) > 0, run.stdout);
  // RESOURCE_EXHAUSTED is code 8: the client's or the server's limiter refused.
  assert.ok((counts['8 limits: queue_full'] ?? 0) > 0, run.stdout);
  for (const how of Object.keys(counts)) {
    assert.match(how, /^(OK|\d+ limits: [a-z_]+)$/, run.stdout);
  }
  assert.match(run.stdout, /^client permits held: 0$/m);
  assert.match(run.stdout, /^server permits held: 0, handlers run: (\d+)$/m);
  const handled = Number(run.stdout.match(/handlers run: (\d+)/)[1]);
  assert.equal(handled, counts.OK, 'only admitted calls reach a handler');
});
