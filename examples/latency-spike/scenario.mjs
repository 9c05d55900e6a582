// Scenario S1 (seed 004), one strategy at a time, on real processes over loopback: this process is the
// open-loop load generator; downstream.mjs (the dependency whose latency jumps from 50 ms to 3,000 ms)
// and app.mjs (the service, with a worker pool and the strategy under test) are its children.
//
// Load: RATE req/s to /internal and RATE req/s to /external, request n of a route sent at t0 + n/RATE
// whatever happened to earlier ones (open loop), each measured from that scheduled moment to the end of
// its answer (a client timeout of 10 s). Phases: `beforeS` calm, `spikeS` with the downstream at 3 s,
// `afterS` calm again. Reported per strategy (see `summarize`) over three windows of the run:
// "before" from 1 s (the first second warms up and is left out) to the spike, "during" the spike,
// "after" from its end to the end of the run (`table` prints one row per figure, named with its window):
//   peak in flight          calls sitting on the downstream, its own count: peak during the spike;
//                           mean over the spike's last quarter; peak after the spike (the spike's last
//                           calls, up to 3 s long, plus the fresh calls the limit lets through once
//                           latency is back)
//   /internal ok            /internal answers with 200, share of those sent during the spike
//   /internal p99           /internal latency p99 of the 200 answers sent in each window
//   /external live answers  /external answers from the downstream (not fallbacks) per second, counted
//                           by completion time in each window
//   recovery to 90 %        from the end of the spike to the end of the first 250 ms bin from which
//                           live answers stay ≥ 90 % of their before-spike rate for 1 s
//   circuit opened, closed  for a guard: when its circuit first opened, counted from the spike's
//                           start, and when it closed again after that, counted from the spike's end
//                           (from its timeline's circuit state, 100 ms buckets, and its spike mark)
//   answered by fallback    /external answered by the guard's fallback
//   first bin               /external answers from the downstream in the first 250 ms bin after the
//                           spike (`firstBinLive`), and how many of them were sent before it ended
//                           (`firstBinFromSpike`: slow calls of the spike ending, or calls that
//                           waited in a queue through it): a 0.25 s recovery needs 90 % of the
//                           before rate in that bin, more than calls sent after the spike can bring
//                           (they take about 50 ms: only about 200 ms of the bin's sends, ~80 %)
import { fork } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const BIN_MS = 250;
/** The first second of a run warms up (connections, the limit algorithms' first samples). */
const WARM_UP_MS = 1000;
/** The name of the spike's span on the strategies' timelines (the chart adds its times). */
export const SPIKE_LABEL = 'latency spike';

function child(file, args) {
  const proc = fork(here(file), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = once(proc, 'message').then(([msg]) => msg.port);
  return { proc, ready };
}

function ask(proc, msg) {
  const reply = once(proc, 'message').then(([m]) => m);
  proc.send(msg);
  return reply;
}

async function stop(proc) {
  if (proc.exitCode !== null) return;
  const exited = once(proc, 'exit');
  proc.send({ exit: true });
  const timer = setTimeout(() => proc.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

/**
 * Runs one strategy; resolves with its raw records and the children's reports.
 * @param {string} name - a strategy of strategies.mjs
 * @param {{ beforeS: number, spikeS: number, afterS: number, rate?: number, onTick?: (s: number) => void, downstream?: string, app?: string }} o
 *   `downstream`, `app`: the children's scripts (a file URL, or a file of this folder), with the
 *   protocols of downstream.mjs and app.mjs (the defaults)
 */
export async function runStrategy(name, o) {
  const rate = o.rate ?? 100;
  const downstream = child(o.downstream ?? 'downstream.mjs', []);
  const downstreamPort = await downstream.ready;
  const app = child(o.app ?? 'app.mjs', [name, String(downstreamPort)]);
  let appPort;
  try {
    appPort = await app.ready;
  } catch (error) {
    await stop(downstream.proc);
    throw error;
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2000 });
  const records = [];
  const pending = new Set();
  const send = (route, scheduled, t0) => {
    const rec = { route, at: scheduled, end: Number.NaN, status: 0, source: undefined };
    records.push(rec);
    const p = new Promise((resolve) => {
      const req = http.get(
        { host: '127.0.0.1', port: appPort, path: `/${route}`, agent, timeout: 10_000 },
        (res) => {
          rec.status = res.statusCode;
          rec.source = res.headers['x-source'];
          res.resume();
          res.on('end', resolve);
          res.on('error', resolve);
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', resolve);
    }).then(() => {
      rec.end = performance.now() - t0;
      pending.delete(p);
    });
    pending.add(p);
  };

  const totalMs = (o.beforeS + o.spikeS + o.afterS) * 1000;
  const spikeFrom = o.beforeS * 1000;
  const spikeTo = spikeFrom + o.spikeS * 1000;
  const period = 1000 / rate;
  const t0 = performance.now();
  let n = 0;
  let spiking = false;
  let lastTick = -1;
  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now() - t0;
      if (!spiking && now >= spikeFrom && now < spikeTo) {
        spiking = true;
        downstream.proc.send({ spike: true });
        app.proc.send({ mark: 'begin', label: SPIKE_LABEL });
      } else if (spiking && now >= spikeTo) {
        spiking = false;
        downstream.proc.send({ spike: false });
        app.proc.send({ mark: 'end', label: SPIKE_LABEL });
      }
      for (; n * period <= Math.min(now, totalMs - period); n++) {
        send('internal', n * period, t0);
        send('external', n * period, t0);
      }
      const second = Math.floor(now / 1000);
      if (second !== lastTick) {
        lastTick = second;
        o.onTick?.(second);
      }
      if (now >= totalMs) resolve();
      else setTimeout(tick, 2);
    };
    tick();
  });
  await Promise.all(pending);
  const ds = await ask(downstream.proc, { stats: true });
  const ap = await ask(app.proc, { stats: true });
  agent.destroy();
  await Promise.all([stop(app.proc), stop(downstream.proc)]);
  // The downstream's clock started before t0: align its samples to the load's time with its own
  // record of when the spike started.
  const spikeAtDs = ds.phases.find(([, on]) => on)?.[0] ?? spikeFrom;
  const shift = spikeFrom - spikeAtDs;
  const samples = ds.samples.map(([t, v]) => [t + shift, v]);
  return { name, records, samples, app: ap, spikeFrom, spikeTo, totalMs, rate };
}

function percentile(values, q) {
  if (values.length === 0) return Number.NaN;
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/**
 * When the circuit of a guard's timeline first opened, in s from the spike's start (the start of the
 * first bucket it was open in), and when it was closed again after that, in s from the spike's end
 * (the end of the bucket it closed in) (`NaN` when it did not; `undefined` for a
 * timeline without a circuit). The spike's times are read from the timeline's own mark, on the
 * recorder's clock.
 */
function circuit(timeline) {
  const points = timeline.points;
  if (!points.some((p) => p.state != null)) return undefined;
  const spike = timeline.marks.find((m) => m.label === SPIKE_LABEL);
  const opened = points.find((p) => p.state === 'OPEN');
  if (spike === undefined || opened === undefined) {
    return { openedS: Number.NaN, closedS: Number.NaN };
  }
  const closed = points.find((p) => p.t > opened.t && p.state === 'CLOSED');
  return {
    openedS: (opened.t - spike.fromMs) / 1000,
    closedS: closed === undefined ? Number.NaN : (closed.t + timeline.bucketMs - spike.toMs) / 1000,
  };
}

/** The figures of one run (see the header). */
export function summarize(run) {
  const { records, samples, spikeFrom, spikeTo, totalMs } = run;
  const phase = {
    before: (t) => t >= WARM_UP_MS && t < spikeFrom,
    during: (t) => t >= spikeFrom && t < spikeTo,
    after: (t) => t >= spikeTo && t < totalMs,
  };
  const internal = records.filter((r) => r.route === 'internal');
  const ok = (r) => r.status === 200;
  const latency = (r) => r.end - r.at;
  const p99 = (inWindow) =>
    percentile(internal.filter((r) => inWindow(r.at) && ok(r)).map(latency), 0.99);
  const spikeInternal = internal.filter((r) => phase.during(r.at));
  const live = records.filter((r) => r.route === 'external' && ok(r) && r.source === 'live');
  const rateIn = (from, to) =>
    live.filter((r) => r.end >= from && r.end < to).length / ((to - from) / 1000);
  const before = rateIn(WARM_UP_MS, spikeFrom);
  const spikeSamples = samples.filter(([t]) => phase.during(t));
  const afterSamples = samples.filter(([t]) => phase.after(t));
  const lateFrom = spikeTo - (spikeTo - spikeFrom) / 4;
  const late = samples.filter(([t]) => t >= lateFrom && t < spikeTo).map(([, v]) => v);
  const firstBin = live.filter((r) => r.end >= spikeTo && r.end < spikeTo + BIN_MS);
  const opened = circuit(run.app.timeline);
  let recovery = Number.NaN;
  for (let t = spikeTo; t + BIN_MS <= totalMs; t += BIN_MS) {
    let holds = true;
    for (let u = t; u < t + 1000 && u + BIN_MS <= totalMs; u += BIN_MS) {
      if (rateIn(u, u + BIN_MS) < 0.9 * before) holds = false;
    }
    if (holds) {
      recovery = (t + BIN_MS - spikeTo) / 1000;
      break;
    }
  }
  return {
    strategy: run.name,
    peakInflight: Math.max(0, ...spikeSamples.map(([, v]) => v)),
    peakAfter: Math.max(0, ...afterSamples.map(([, v]) => v)),
    lateInflight: late.length === 0 ? 0 : late.reduce((a, b) => a + b, 0) / late.length,
    internalSuccess: spikeInternal.filter(ok).length / Math.max(1, spikeInternal.length),
    internalP99Before: p99(phase.before),
    internalP99During: p99(phase.during),
    internalP99After: p99(phase.after),
    goodputBefore: before,
    goodputDuring: rateIn(spikeFrom, spikeTo),
    goodputAfter: rateIn(spikeTo, totalMs),
    recoveryS: recovery,
    // Flat numbers, so a benchmark can take the median of every field: 1 for a guard, else 0.
    breaker: opened === undefined ? 0 : 1,
    circuitOpenedS: opened?.openedS ?? Number.NaN,
    circuitClosedS: opened?.closedS ?? Number.NaN,
    fallbacks: run.app.fallbacks,
    firstBinLive: firstBin.length,
    firstBinFromSpike: firstBin.filter((r) => r.at < spikeTo).length,
  };
}

/** The table's rows: a figure and its window, and how each strategy's value reads. */
const ROWS = [
  ['peak in flight during spike (calls)', (s) => String(s.peakInflight)],
  ['mean in flight, last quarter of spike', (s) => s.lateInflight.toFixed(1)],
  ['peak in flight after spike', (s) => String(s.peakAfter)],
  ['/internal ok during spike', (s) => `${(100 * s.internalSuccess).toFixed(1)} %`],
  ['/internal p99 before spike', (s) => fmtMs(s.internalP99Before)],
  ['/internal p99 during spike', (s) => fmtMs(s.internalP99During)],
  ['/internal p99 after spike', (s) => fmtMs(s.internalP99After)],
  ['/external live answers before spike', (s) => `${s.goodputBefore.toFixed(1)}/s`],
  ['/external live answers during spike', (s) => `${s.goodputDuring.toFixed(1)}/s`],
  ['/external live answers after spike', (s) => `${s.goodputAfter.toFixed(1)}/s`],
  [
    'recovery to 90 % of before, after spike',
    (s) => (Number.isNaN(s.recoveryS) ? 'not in run' : `${s.recoveryS.toFixed(2)} s`),
  ],
  [
    'circuit opened, into spike',
    (s) =>
      s.breaker !== 1
        ? '—'
        : Number.isNaN(s.circuitOpenedS)
          ? 'never'
          : `${s.circuitOpenedS.toFixed(1)} s`,
  ],
  [
    'circuit closed again, after spike',
    (s) =>
      s.breaker !== 1 || Number.isNaN(s.circuitOpenedS)
        ? '—'
        : Number.isNaN(s.circuitClosedS)
          ? 'not in run'
          : `${s.circuitClosedS.toFixed(1)} s`,
  ],
  ['/external answered by fallback', (s) => String(s.fallbacks)],
];

function fmtMs(v) {
  return Number.isNaN(v) ? '—' : `${Math.round(v)} ms`;
}

/** A Markdown table of summaries: one row per figure, one column per strategy. */
export function table(summaries) {
  const rows = [
    ['figure (window)', ...summaries.map((s) => s.strategy)],
    ...ROWS.map(([label, f]) => [label, ...summaries.map(f)]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [
    line(rows[0]),
    `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`,
    ...rows.slice(1).map(line),
  ].join('\n');
}

/** What the table's windows are, for a line under it. */
export function windows(run) {
  const s = (ms) => `${ms / 1000} s`;
  return (
    `Windows: before = ${s(WARM_UP_MS)} to ${s(run.spikeFrom)} (the first second warms up and is left out); ` +
    `during = the spike, ${s(run.spikeFrom)} to ${s(run.spikeTo)}; after = ${s(run.spikeTo)} to ${s(run.totalMs)}. ` +
    'p99s by send time, live/s by completion time.'
  );
}
