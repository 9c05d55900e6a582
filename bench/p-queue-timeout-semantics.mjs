// What p-queue's per-task `timeout` does and does not do (used to interpret S2).
//
//   node bench/p-queue-timeout-semantics.mjs
//
// 1. Does the timeout count time spent waiting in the queue?
// 2. When it fires on a running task, does the task keep running, and does it keep its slot?

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import PQueue from 'p-queue';

const t0 = performance.now();
const t = () => Math.round(performance.now() - t0);
const log = [];
let running = 0;
let maxRunning = 0;
const job = (name, ms) => async () => {
  running++;
  maxRunning = Math.max(maxRunning, running);
  log.push(`${t()} ms  ${name} starts (running: ${running})`);
  await sleep(ms);
  running--;
  log.push(`${t()} ms  ${name} really ends`);
  return name;
};
const settle = (name, p) =>
  p.then(
    () => log.push(`${t()} ms  caller of ${name}: resolved`),
    (e) => log.push(`${t()} ms  caller of ${name}: rejected (${e.name}: ${e.message})`),
  );

// 1. Queue wait: concurrency 1, A holds the slot for 150 ms; B (timeout 100, runs 50 ms) waits 150 ms
// in the queue, longer than its timeout, and still succeeds.
const q1 = new PQueue({ concurrency: 1 });
await Promise.all([
  settle('A', q1.add(job('A', 150))),
  settle('B', q1.add(job('B', 50), { timeout: 100 })),
]);
log.push('---');

// 2. Running past the timeout: concurrency 1, C (timeout 100) runs 300 ms; D is queued behind it.
const q2 = new PQueue({ concurrency: 1 });
running = 0;
maxRunning = 0;
const t2 = performance.now();
await Promise.all([
  settle('C', q2.add(job('C', 300), { timeout: 100 })),
  settle('D', q2.add(job('D', 50))),
]);
await sleep(350 - (performance.now() - t2));
log.push(`max tasks running at once with concurrency 1: ${maxRunning}`);
console.log(log.join('\n'));
