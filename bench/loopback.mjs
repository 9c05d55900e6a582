// What the loopback scenario scripts (s5-importance-spike.mjs, s6-deadline-propagation.mjs,
// s7-retry-storm.mjs) share: one clock readable in every process, the child-process plumbing (a
// server per child on 127.0.0.1, asked questions over IPC), the open-loop sender and its lag
// report, the machine's CPU use over a run, percentiles, and what the built packages offer (the
// scenarios measure features that may be missing from a build, and say so instead of failing).
//
// Not a benchmark by itself: `node bench/s5-…` etc. import it.

import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { procStatTicks } from './harness.mjs';

/**
 * Milliseconds since the epoch with sub-millisecond resolution, the same in every process of a run
 * (each process's `performance.timeOrigin` is an epoch time): server records and client records
 * are compared on it.
 */
export const epochNow = () => performance.timeOrigin + performance.now();

/**
 * Forks `script` with `args` (a child that answers its first IPC message, e.g. `{ url }`, once it
 * listens) and resolves with `{ child, first }`.
 */
export function startChild(script, args, execArgv = []) {
  return new Promise((resolve, reject) => {
    const child = fork(script, args, {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      execArgv,
    });
    child.once('message', (first) => resolve({ child, first }));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${script} ${args.join(' ')} exited (${code})`)));
  });
}

let nextAsk = 1;
/** Sends `msg` with an id to a child and resolves with the reply carrying the same id. */
export function ask(child, msg) {
  const id = nextAsk++;
  return new Promise((resolve, reject) => {
    const onExit = (code) =>
      reject(new Error(`child exited (${code}) before answering ${msg.cmd}`));
    const onMessage = (reply) => {
      if (reply?.id !== id) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(reply);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send({ ...msg, id });
  });
}

/** In a child: answers `ask` messages with `handle(msg)` (sync or async). */
export function answerAsks(handle) {
  process.on('message', async (msg) => {
    if (msg?.id === undefined) return;
    const reply = await handle(msg);
    process.send({ ...reply, id: msg.id });
  });
}

/** Stops a child (SIGTERM) and waits for it to exit. */
export function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
}

/**
 * The open-loop sender. `phases` is a list of `{ name, ms, rates }`, `rates` a map stream → req/s;
 * within a phase the n-th request of a stream is due at `phase start + (n + offset) / rate`
 * (offset a fixed fraction per stream, so streams interleave), whatever happened to earlier ones.
 * `fire(stream, phase, dueEpochMs)` sends one request (it must not wait for it); `onPhase(name)` is
 * called as each phase starts (e.g. to tell a server to change). Resolves with
 * `{ windows: { name: [fromEpochMs, toEpochMs] }, lag }`, `lag` the send lag (how late requests
 * left, ms): `max`, `p99` and `late10` (the share sent more than 10 ms late).
 */
export async function openLoop(phases, fire, onPhase = () => {}) {
  const windows = {};
  const lags = [];
  let start = epochNow() + 5;
  for (const phase of phases) {
    const end = start + phase.ms;
    windows[phase.name] = [start, end];
    const early = start - epochNow();
    if (early > 1) await sleep(early);
    onPhase(phase.name);
    const streams = Object.entries(phase.rates)
      .filter(([, rate]) => rate > 0)
      .map(([name, rate], i, all) => ({
        name,
        period: 1000 / rate,
        next: start + ((i + 0.5) / all.length) * (1000 / rate),
      }));
    for (;;) {
      let due = end;
      for (const s of streams) if (s.next < due) due = s.next;
      if (due >= end) break;
      // Always wait on a timer (at least ~1 ms): the responses of earlier requests are read between
      // two sends, and a due time less than a timer tick away costs no busy loop.
      await sleep(Math.max(0, due - epochNow()));
      // Everything due by now leaves now, stream by stream in due order.
      const now = epochNow();
      for (const s of streams) {
        while (s.next <= now && s.next < end) {
          lags.push(now - s.next);
          fire(s.name, phase.name, s.next);
          s.next += s.period;
        }
      }
    }
    const wait = end - epochNow();
    if (wait > 0) await sleep(wait);
    start = end;
  }
  lags.sort((a, b) => a - b);
  return {
    windows,
    lag: {
      max: lags.at(-1) ?? 0,
      p99: percentile(lags, 99),
      late10: lags.filter((x) => x > 10).length / Math.max(1, lags.length),
    },
  };
}

/** The p-th percentile (0–100) of an ascending list; NaN when empty. */
export const percentile = (sorted, p) =>
  sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

/** CPU-seconds since boot from /proc/stat: processes (user, nice, system, steal) and interrupts (irq, softirq). */
function procStat() {
  const f = procStatTicks();
  if (f === undefined) return undefined;
  return { procS: (f[0] + f[1] + f[2] + (f[7] ?? 0)) / 100, irqS: (f[5] + f[6]) / 100 };
}

/**
 * Measures the machine's CPU use from now. `.end(ownCpuS)` gives the cores busy on average with
 * processes (`busy`) and with interrupts (`irq`: loopback TCP is mostly softirq time, charged to no
 * process), and, given the run's own CPU seconds (this process and its children), what other
 * processes used (`others`, in cores; `undefined` when unknown).
 */
export function machineMeter() {
  const m0 = procStat();
  const t0 = performance.now();
  return {
    end(ownCpuS) {
      const m1 = procStat();
      const wallS = (performance.now() - t0) / 1000;
      if (m0 === undefined || m1 === undefined) {
        return { busy: Number.NaN, irq: Number.NaN, others: undefined };
      }
      const busy = (m1.procS - m0.procS) / wallS;
      return {
        busy,
        irq: (m1.irqS - m0.irqS) / wallS,
        others: ownCpuS === undefined ? undefined : Math.max(0, busy - ownCpuS / wallS),
      };
    },
  };
}

/** `x` as a percentage with `digits` decimals ("–" for NaN). */
export const pct = (x, digits = 1) => (Number.isNaN(x) ? '–' : `${(x * 100).toFixed(digits)} %`);
/** Milliseconds rounded ("–" for NaN). */
export const ms0 = (x) => (Number.isNaN(x) ? '–' : String(Math.round(x)));

/** A shedding threshold's rank: an integer as is, a fractional one with one decimal. */
export const fmtRank = (rank) => (Number.isInteger(rank) ? String(rank) : rank.toFixed(1));

/** Sleeps `ms`. */
export const pause = (ms) => sleep(ms);

/**
 * What the built packages offer of importance shedding and of the request context, found by trying
 * (an unknown option is a TypeError naming it in every package): limits-core's `shedding`, loadShed's
 * `cohort`, `context` and `doNotRetryHeader`, limitFetch's `propagate`, and `currentContext` /
 * `runWithContext`.
 */
export async function probeFeatures() {
  const core = await import('limits-core');
  const http = await import('limits-node-http');
  const accepts = (make) => {
    try {
      make();
      return true;
    } catch (error) {
      return !(error instanceof TypeError && /unknown option/.test(error.message));
    }
  };
  const limiter = () => new core.Limiter({ limit: 1 });
  const shed = (o) => accepts(() => http.loadShed({ limiter: limiter(), ...o }));
  return {
    shedding: accepts(() => new core.Limiter({ limit: 1, shedding: {} })),
    cohort: shed({ cohort: () => undefined }),
    context: shed({ context: false }) && typeof http.currentContext === 'function',
    doNotRetry: shed({ doNotRetryHeader: 'x-do-not-retry' }),
    propagate: accepts(() => http.limitFetch(fetch, { limiter: limiter(), propagate: false })),
    runWithContext: typeof http.runWithContext === 'function',
  };
}
