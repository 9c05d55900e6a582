// Runs one example as its own process, the way a user would (`node <folder>/main.mjs --quick`), and
// collects what it printed. A run that outlives its time limit is stopped (SIGTERM, then SIGKILL) and
// fails the test with what it printed so far, so a hung example never leaves a process behind.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const examplesDir = fileURLToPath(new URL('../..', import.meta.url));

/**
 * @param {string} script path relative to examples/, e.g. 'custom-algorithm/main.mjs'
 * @param {string[]} args
 * @param {{ timeoutMs: number }} options
 * @returns {Promise<{ code: number | null, stdout: string, stderr: string }>}
 */
export function runExample(script, args, { timeoutMs }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], {
      cwd: examplesDir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => {
      stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d) => {
      stderr += d;
    });
    let timedOut = false;
    let killer;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM'); // the examples clean up on SIGTERM (servers, temp dirs)
      killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      clearTimeout(killer);
      if (timedOut) {
        reject(
          new Error(
            `${script} ran past ${timeoutMs} ms and was stopped\n--- stdout\n${stdout}\n--- stderr\n${stderr}`,
          ),
        );
      } else resolve({ code, stdout, stderr });
    });
  });
}

/** Fails with the example's whole output when it did not exit 0. */
export function assertExitedCleanly(assert, script, { code, stdout, stderr }) {
  assert.equal(
    code,
    0,
    `${script} exited with ${code}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`,
  );
}
