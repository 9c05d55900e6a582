// Runs examples/wrap-postgres against the real PostgreSQL its setup starts: the Vegas limit must
// shrink while queries are slow, the pool's wait list must stay empty, and the server must be gone
// (process and temp dir) when the example ends — normally, or stopped by a signal half-way.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { assertExitedCleanly, runExample } from './helpers/run-example.mjs';

const script = 'wrap-postgres/main.mjs';
const STARTED = /^PostgreSQL on 127\.0\.0\.1:\d+ \(pid (\d+)[^)]*\), data in (\S+)$/m;

/** Whether a process with this pid exists. */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Pids of processes whose command line mentions `text` (Linux; none elsewhere). */
function processesMentioning(text) {
  if (!existsSync('/proc')) return [];
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** Asserts the server the example started is gone, with everything it left on disk. */
function assertServerGone(pid, dir) {
  assert.equal(alive(pid), false, `postgres (pid ${pid}) is still running`);
  assert.deepEqual(processesMentioning(dir), [], `processes still use ${dir}`);
  assert.equal(existsSync(dir), false, `${dir} was not removed`);
}

test('the limit shrinks while PostgreSQL is slow, the pool never queues, and the server is removed at the end', async () => {
  const run = await runExample(script, ['--quick'], { timeoutMs: 90_000 });
  assertExitedCleanly(assert, script, run);
  const out = run.stdout;
  const [, pid, dir] = out.match(STARTED) ?? assert.fail(out);
  const phases = {};
  for (const m of out.matchAll(
    /^(before|slow|after): limit mean ([\d.]+) \(min (\d+)\), connections in use peak (\d+), pool waiting peak (\d+), (\d+) queries \(median (\d+|-) ms\), (\d+) fell back$/gm,
  )) {
    const [, name, mean, min, inUse, waiting, served, median, fellBack] = m;
    phases[name] = {
      mean: Number(mean),
      min: Number(min),
      inUse: Number(inUse),
      waiting: Number(waiting),
      served: Number(served),
      median: Number(median),
      fellBack: Number(fellBack),
    };
  }
  assert.deepEqual(Object.keys(phases), ['before', 'slow', 'after'], out);
  const { before, slow, after } = phases;
  // The slowdown is real: pg_sleep(0.3) against pg_sleep(0.01).
  assert.ok(before.median < 100 && slow.median >= 250, out);
  // Vegas saw the latency and gave up permits; the requests beyond them were answered at once.
  assert.ok(slow.mean < before.mean, `limit did not shrink: ${slow.mean} vs ${before.mean}`);
  assert.ok(slow.min < 10, out);
  assert.ok(slow.fellBack > 0, out);
  for (const [name, p] of Object.entries(phases)) {
    assert.equal(p.waiting, 0, `the pool queued callers during "${name}"`);
    assert.ok(p.inUse <= 10, `more connections in use than the pool has during "${name}"`);
  }
  assert.ok(after.served > 0, out);
  assert.match(out, new RegExp(`^PostgreSQL stopped; ${dir} removed$`, 'm'));
  assertServerGone(Number(pid), dir);
});

test('a SIGTERM half-way through still stops PostgreSQL and removes its directory', async () => {
  const child = spawn(process.execPath, [script, '--quick'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d) => {
    err += d;
  });
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const guard = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    // Wait until the queries run (the progress table has started), then stop the example.
    await new Promise((resolve, reject) => {
      child.stdout.setEncoding('utf8').on('data', (d) => {
        out += d;
        if (/^ +0\.5s /m.test(out)) resolve();
      });
      child.on('exit', () => reject(new Error(`exited before it was signalled:\n${out}\n${err}`)));
    });
    const [, pid, dir] = out.match(STARTED) ?? assert.fail(out);
    assert.equal(alive(Number(pid)), true);
    child.kill('SIGTERM');
    const { code } = await exited;
    assert.equal(code, 143, `exit code after SIGTERM\n${out}\n${err}`);
    assertServerGone(Number(pid), dir);
  } finally {
    clearTimeout(guard);
  }
});
