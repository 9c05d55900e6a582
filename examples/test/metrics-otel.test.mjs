// Runs examples/metrics-otel: a loadShed under load, observed with registerOtelMetrics on an
// OpenTelemetry SDK meter; checks the printed data points against the printed HTTP statuses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExitedCleanly, runExample } from './helpers/run-example.mjs';

const script = 'metrics-otel/main.mjs';

test('the exported data points account for every /work request, and /health is never refused', async () => {
  const run = await runExample(script, [], { timeoutMs: 30_000 });
  assertExitedCleanly(assert, script, run);
  const out = run.stdout;
  const statuses = (line) =>
    Object.fromEntries(
      [
        ...(out.match(new RegExp(`^${line}: (\\d+) requests, (.*)$`, 'm'))?.[2] ?? '').matchAll(
          /(\d{3}): (\d+)/g,
        ),
      ].map((m) => [m[1], Number(m[2])]),
    );
  const work = statuses('/work');
  const health = statuses('/health during the overload');
  assert.deepEqual(health, { 200: 10 }, out);
  assert.ok(work[200] > 0 && work[503] > 0, out);
  assert.equal(work[200] + work[503], 40, out);

  const point = (re) => out.match(re);
  const num = (re) => Number(point(re)?.[1]);
  const admitted = num(
    /^limits\.requests \(\{request\}\) \{limiter=api, result=admitted\} (\d+)$/m,
  );
  assert.equal(admitted, work[200], out);
  let refused = 0;
  for (const m of out.matchAll(
    /^limits\.requests \(\{request\}\) \{limiter=api, result=refused, reason=(\w+)\} (\d+)$/gm,
  )) {
    assert.ok(['queue_full', 'expired'].includes(m[1]), m[0]);
    refused += Number(m[2]);
  }
  assert.equal(refused, work[503], out);
  assert.equal(
    num(/^limits\.outcomes \(\{request\}\) \{limiter=api, outcome=success\} (\d+)$/m),
    work[200],
    out,
  );
  const lease = point(
    /^limits\.lease\.duration \(s\) \{limiter=api\} count (\d+), mean ([\d.]+)$/m,
  );
  assert.equal(Number(lease?.[1]), work[200], out);
  assert.ok(Number(lease?.[2]) >= 0.05, `the requests take 50 ms: ${lease?.[0]}`);
  for (const gauge of ['limit', 'capacity']) {
    assert.equal(
      num(new RegExp(`^limits\\.${gauge} \\(\\{request\\}\\) \\{limiter=api\\} (\\d+)$`, 'm')),
      4,
      out,
    );
  }
  assert.equal(num(/^limits\.inflight \(\{request\}\) \{limiter=api\} (\d+)$/m), 0, out);
});
