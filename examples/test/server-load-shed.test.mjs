// Runs examples/server-load-shed in its short mode: with one limiter for every route the flood on
// /recommendations hurts /login; with partitions /login is answered every time, quickly, while
// /recommendations is shed with 503 + Retry-After.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertExitedCleanly, runExample } from './helpers/run-example.mjs';

const script = 'server-load-shed/main.mjs';
const LINE =
  /^ {2}(\/\w+) +(\d+) requests: +(\d+) ok \(median (\d+|-) ms, p99 (\d+|-) ms\), +(\d+) shed with 503(?: \(the first: retry-after (\d+), (\{.*\})\))?$/;

test('with partitions /login is always answered while /recommendations is shed, unlike with one limiter for every route', async () => {
  const run = await runExample(script, ['--quick'], { timeoutMs: 30_000 });
  assertExitedCleanly(assert, script, run);
  const runs = {};
  let current;
  for (const line of run.stdout.split('\n')) {
    const header = line.match(/^(one limiter|partitions): /);
    if (header) {
      current = header[1];
      runs[current] = {};
    }
    const m = line.match(LINE);
    if (m) {
      const [, route, total, ok, median, p99, shed, retryAfter, body] = m;
      runs[current][route] = {
        total: Number(total),
        ok: Number(ok),
        median: Number(median),
        p99: Number(p99),
        shed: Number(shed),
        retryAfter: retryAfter === undefined ? undefined : Number(retryAfter),
        body: body === undefined ? undefined : JSON.parse(body),
      };
    }
  }
  assert.deepEqual(Object.keys(runs), ['one limiter', 'partitions'], run.stdout);
  const single = runs['one limiter'];
  const parts = runs.partitions;

  // Partitions: every /login answered 200, none shed, fast; /recommendations shed with a proper 503.
  assert.equal(parts['/login'].ok, parts['/login'].total, run.stdout);
  assert.equal(parts['/login'].shed, 0);
  assert.ok(parts['/login'].median < 50, `login median ${parts['/login'].median} ms`);
  const rec = parts['/recommendations'];
  assert.ok(rec.shed > 0 && rec.ok > 0, run.stdout);
  assert.ok(rec.retryAfter >= 1);
  assert.equal(rec.body.error, 'overloaded');
  assert.equal(typeof rec.body.reason, 'string');
  assert.equal(rec.ok + rec.shed, rec.total);

  // One limiter: the flood costs /login too (shed, or slowed behind the queued recommendations).
  const login = single['/login'];
  assert.ok(
    login.shed > 0 || login.median > 4 * parts['/login'].median,
    `one limiter did not hurt /login: ${JSON.stringify(login)}`,
  );
});
