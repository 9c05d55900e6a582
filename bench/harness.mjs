// Pieces shared by the benchmark scripts, so every benchmark measures the same floor (the
// hand-written semaphore) and reports its environment the same way.
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * The floor: a minimal, correct semaphore. FIFO linked list of waiting resolvers; a release hands
 * its slot straight to the oldest waiter (so `active` never overshoots), else frees it.
 */
export function createSemaphore(limit) {
  let active = 0;
  let head = null;
  let tail = null;
  let waiting = 0;
  const release = () => {
    if (head !== null) {
      const waiter = head;
      head = waiter.next;
      if (head === null) tail = null;
      waiting--;
      waiter.resolve();
    } else {
      active--;
    }
  };
  const run = async (fn) => {
    if (active < limit) {
      active++;
    } else {
      await new Promise((resolve) => {
        const waiter = { resolve, next: null };
        if (tail === null) head = waiter;
        else tail.next = waiter;
        tail = waiter;
        waiting++;
      });
    }
    try {
      return await fn();
    } finally {
      release();
    }
  };
  return {
    run,
    get active() {
      return active;
    },
    get waiting() {
      return waiting;
    },
  };
}

/** Median of a list of numbers. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The short commit of `dir`'s repository and whether its `src` has uncommitted changes. */
export function gitState(dir) {
  try {
    const git = (...args) => execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
    const head = git('rev-parse', '--short', 'HEAD');
    const dirty = git('status', '--porcelain', '--', 'src').length > 0;
    return `commit ${head}${dirty ? ', src has uncommitted changes' : ', src clean'}`;
  } catch {
    return 'git state unknown';
  }
}

/** The newest modification time (ms) of any file below `dir`. */
export function newestMtime(dir) {
  let newest = 0;
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      const t = entry.isDirectory() ? newestMtime(file) : statSync(file).mtimeMs;
      if (t > newest) newest = t;
    }
  } catch {}
  return newest;
}

/** Sends `msg` to a forked cell process and resolves with its reply (rejects if it exits first). */
export function request(proc, msg) {
  return new Promise((resolve, reject) => {
    const onExit = (code) => reject(new Error(`cell process exited early (code ${code})`));
    proc.once('exit', onExit);
    proc.once('message', (reply) => {
      proc.off('exit', onExit);
      if (reply.error) reject(new Error(reply.error));
      else resolve(reply);
    });
    proc.send(msg);
  });
}

/** Yields one macrotask turn, as a server would between batches. */
export const yieldToLoop = () => new Promise((resolve) => setImmediate(resolve));

/** User + system CPU time of a `process.cpuUsage()` reading, in µs. */
export const cpuMicros = (u) => u.user + u.system;
