// Runs the redis-quota example (redis-quota/demo.mjs) in its short mode (3 s windows, seed 002 scaled
// to 3 per account and 10 in all) on its own redis-server, and checks the substance of what it prints:
// 200s then 429 for one account, 503 from the global cap after exactly 10 admissions, one alert at
// 66 %, 429 before 503 when both are full, the refused call charged nothing, a new window admits, and
// the limiter's own 503 when its 8 workers are busy.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const demo = fileURLToPath(new URL('../redis-quota/demo.mjs', import.meta.url));
const run = (env) =>
  promisify(execFile)(process.execPath, [demo], {
    timeout: 60_000,
    env: { ...process.env, REDIS_URL: '', ...env },
  });

/** Whether something listens on 127.0.0.1:`port`. */
function listening(port) {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

test('the redis-quota demo shows 200s, then 429 for one account, 503 at the global cap, one 66 % alert, and a new window', async () => {
  const { stdout } = await run({ QUOTA_WINDOW_MS: '3000' });
  const lines = stdout.split('\n');
  assert.match(lines[0], /account 3 and global 10 per 3000 ms window, alert at 66 %/);
  const port = Number(/redis-server started on 127\.0\.0\.1:(\d+)/.exec(stdout)?.[1]);
  assert.ok(port > 0, 'the demo starts its own redis-server');

  const accounts = lines
    .map((l) => /^ {2}account (\w+): 200 ×(\d+)(?:, then (\d+) retry-after=(\d+) (.*))?$/.exec(l))
    .filter(Boolean);
  assert.deepEqual(accounts[0].slice(1, 4), ['a', '3', '429']);
  assert.deepEqual(JSON.parse(accounts[0][5]), { error: 'quota', axis: 'account' });
  const refusedAt = accounts.findIndex((m) => m[3] === '503');
  assert.ok(refusedAt > 0, 'the global cap refuses with 503');
  const cap = accounts[refusedAt];
  assert.deepEqual(JSON.parse(cap[5]), { error: 'quota', axis: 'global' });
  assert.ok(Number(cap[4]) >= 1 && Number(cap[4]) <= 3, `Retry-After ${cap[4]} s ≤ the 3 s window`);
  const admitted = accounts.slice(0, refusedAt + 1).reduce((sum, m) => sum + Number(m[2]), 0);
  assert.equal(admitted, 10, 'exactly the global cap is admitted');
  assert.ok(
    accounts.slice(1, refusedAt).every((m) => m[2] === '3' && m[3] === undefined),
    'the other accounts spend their share without a refusal',
  );

  const nextWindow = lines.findIndex((l) => l.startsWith('next window:'));
  assert.match(lines[nextWindow], /next window: account a gets 200/);
  const alerts = lines.map((l, i) => [l, i]).filter(([l]) => /^ {2}ALERT:/.test(l));
  assert.equal(alerts.filter(([, i]) => i < nextWindow).length, 1, 'one alert in the first window');
  assert.match(alerts[0][0], /ALERT: global at 7\/10 \(66 %\)/);

  assert.match(stdout, /account u\d+'s counter in Redis after the 503: 1 \(the refused call/);
  assert.match(stdout, /both full: account a gets 429 \{"error":"quota","axis":"account"\}/);
  assert.match(stdout, /GET \/wishlists \(a read, not counted\): 200/);
  // The burst in the new window: 8 workers busy, the ninth refused by the limiter itself.
  assert.match(
    stdout,
    /9 parses at once \(8 workers, no queue\): 200 ×8; first answer 503 retry-after=\d+ \{"error":"overloaded","reason":"at_limit"\}/,
  );
  assert.equal(await listening(port), false, 'the demo stops its redis-server');
});

test('the redis-quota demo refuses a quota variable that is not a number, naming it', async () => {
  await assert.rejects(run({ QUOTA_GLOBAL_LIMIT: 'lots' }), (error) => {
    assert.match(
      error.stderr,
      /environment variable QUOTA_GLOBAL_LIMIT must be a number, got "lots"/,
    );
    return true;
  });
});
