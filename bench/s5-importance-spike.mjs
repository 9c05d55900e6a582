// Scenario S5 — importance under a spike: 30 % critical + 70 % sheddable traffic at the service's
// capacity, then 12× the sheddable traffic for 10 s, then back; loadShed with importance shedding
// beside today's loadShed without levels and a PartitionedLimiter with one partition per level.
//
//   node bench/s5-importance-spike.mjs              full run: per variant 5 s base + 10 s spike + 5 s
//                                                   after (~75 s for the three)
//   node bench/s5-importance-spike.mjs --quick      smoke test: 2 s + 3 s + 2 s per variant
//   node bench/s5-importance-spike.mjs --only=levels,partitions --spike-s=20 --capacity-n=10
//   node bench/s5-importance-spike.mjs --json=out.json   also write every request record as JSON
//
// Needs the built packages: npx -y pnpm@12.4.2 run build
//
// Processes (all on 127.0.0.1): the service (a node:http server behind loadShed, a fresh child
// process per variant; the variants run one after the other) and the load generator (this process,
// undici, no connection cap).
//
// The service's work is a worker pool of N = 10 slots, each request holding one for 50 ms (a timer:
// fixed work, no CPU), so its capacity is C = N / 50 ms = 200 req/s. Every variant's limiter admits
// at most N at once (so the pool never queues inside), queues up to 50 more for at most 500 ms, and
// loadShed reads `x-request-timeout-ms`.
//
// Load (open loop, request n of a stream due at phase start + n / rate): critical 0.3 C = 60 req/s
// and sheddable 0.7 C = 140 req/s (base), then sheddable 12 × 140 = 1,680 req/s for the spike, then
// the base again. Each request carries `x-request-criticality` (`critical` or `sheddable`),
// `x-user-id` (1,000 users per class, in turn: during the spike every sheddable user sends 1–2
// requests a second) and `x-request-timeout-ms: 1000`; the client gives up after 1,000 ms.
//
// Variants:
//   levels      loadShed({ limiter: new Limiter({ limit: 10, maxQueued: 50, maxQueueWaitMs: 500,
//               shedding: {} }), cohort: req => req.headers['x-user-id'] }) — the levels (from the
//               criticality header) and cohorts (the user id), shedding's defaults (targetWaitMs 20,
//               intervalMs 100, cohorts 128);
//   no-levels   the same Limiter without `shedding` (today's loadShed: FIFO queue, refusals blind to
//               importance);
//   partitions  loadShed over new PartitionedLimiter({ limit: 10, partitions: { critical:
//               { reserved: 4 }, sheddable: { reserved: 0 } } }) (same queue options per partition),
//               partition by the criticality header.
//
// Reported (spike = the 10 s of 12× sheddable traffic):
// - critical availability during the spike: critical requests sent during it answered 200 within
//   the client's 1,000 ms (target ≥ 99.5 %), and sheddable's for reference;
// - goodput during the spike: 200 answers received during it, per second, as % of C (target ≥ 95 %);
// - inversions, counted at the server: in each 100 ms window (by the time the service decided), a
//   critical request refused (503) while a sheddable one was admitted counts one (target 0);
// - consistency of the shed users at constant overload: the spike's 1 s windows after its first
//   second; per window the set of sheddable users with at least one 503; for each pair of
//   consecutive windows their Jaccard similarity: the share of pairs ≥ 0.95 (target ≥ 95 %) and
//   exactly equal; and, over the same seconds, the share of shed users that were also served (a
//   user shed consistently is never both);
// - recovery: from the spike's end until the threshold (`snapshot().shedding.rank`, polled every
//   10 ms at the service) is back at 0 for good (target ≤ 2 s), and until it first touches 0;
//   how often it moved during the base phase (0 expected at C);
// - the load generator's send lag (max, p99, share > 10 ms late): the open loop held if small, and
//   the machine's CPU use during the run.
//
// A build without `shedding` in limits-core or `cohort` in loadShed reports the `levels` row as not
// measurable.

import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { headerLines, packageInfo, writeJson } from './harness.mjs';
import {
  answerAsks,
  ask,
  epochNow,
  fmtRank,
  machineMeter,
  ms0,
  openLoop,
  pause,
  pct,
  percentile,
  probeFeatures,
  startChild,
  stopChild,
} from './loopback.mjs';

const SELF = fileURLToPath(import.meta.url);
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const opt = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const QUICK = flag('quick');
const BASE_S = Number(opt('base-s') ?? (QUICK ? 2 : 5));
const SPIKE_S = Number(opt('spike-s') ?? (QUICK ? 3 : 10));
const AFTER_S = Number(opt('after-s') ?? (QUICK ? 2 : 5));
const N = Number(opt('capacity-n') ?? 10);
const SERVICE_MS = Number(opt('service-ms') ?? 50);
const C = (N * 1000) / SERVICE_MS;
const SPIKE_X = Number(opt('spike-x') ?? 12);
const USERS = 1000;
const BUDGET_MS = 1000;
const MAX_QUEUED = 50;
const MAX_QUEUE_WAIT_MS = 500;
const CRITICAL_RESERVE = 4;

const VARIANTS = {
  levels: `loadShed over \`Limiter({ limit: ${N}, maxQueued: ${MAX_QUEUED}, maxQueueWaitMs: ${MAX_QUEUE_WAIT_MS}, shedding: {} })\`, criticality from the header, \`cohort\` = user id`,
  'no-levels': 'the same Limiter without `shedding` (FIFO, blind to importance)',
  partitions: `loadShed over \`PartitionedLimiter({ limit: ${N}, partitions: { critical: { reserved: ${CRITICAL_RESERVE} }, sheddable: { reserved: 0 } } })\`, partition by criticality`,
};
const only = opt('only')?.split(',');
const chosen = Object.keys(VARIANTS).filter((v) => only === undefined || only.includes(v));

const CLASSES = ['critical', 'sheddable'];
// Server-side outcomes.
const ADMITTED = 1;
const REFUSED = 2;
const GONE = 3;

// ---------------------------------------------------------------------------------------------
// Child: the service.

async function serve(variant) {
  const core = await import('limits-core');
  const { loadShed } = await import('limits-node-http');
  const features = await probeFeatures();
  const queue = { maxQueued: MAX_QUEUED, maxQueueWaitMs: MAX_QUEUE_WAIT_MS };
  const header = (req, name) => {
    const v = req.headers[name];
    return typeof v === 'string' ? v : undefined;
  };
  let limiter;
  let shed;
  if (variant === 'levels') {
    if (!features.shedding || !features.cohort) {
      process.send({
        unsupported: 'this build has no `shedding` in limits-core or no `cohort` in loadShed',
      });
      return;
    }
    limiter = new core.Limiter({ limit: N, ...queue, shedding: {} });
    shed = loadShed({ limiter, cohort: (req) => header(req, 'x-user-id') });
  } else if (variant === 'no-levels') {
    limiter = new core.Limiter({ limit: N, ...queue });
    shed = loadShed({ limiter });
  } else {
    const partitioned = new core.PartitionedLimiter({
      limit: N,
      partitions: {
        critical: { reserved: CRITICAL_RESERVE, ...queue },
        sheddable: { reserved: 0, ...queue },
      },
    });
    shed = loadShed({
      limiter: partitioned,
      partition: (req) =>
        header(req, 'x-request-criticality') === 'critical' ? 'critical' : 'sheddable',
      fallbackPartition: 'sheddable',
    });
  }

  // The worker pool: N slots of SERVICE_MS each (the limiter admits at most N, so nothing waits here
  // unless the limiter admits more: loadShed releases a permit when its client leaves). Work abandoned
  // by its client stops and frees its slot.
  let active = 0;
  let poolWaits = 0;
  const waiting = [];
  const startWork = (res) => {
    if (res.destroyed) return;
    active++;
    let over = false;
    const finish = () => {
      if (over) return;
      over = true;
      clearTimeout(timer);
      active--;
      if (!res.destroyed) res.end('ok');
      while (active < N && waiting.length > 0) startWork(waiting.shift());
    };
    const timer = setTimeout(finish, SERVICE_MS);
    res.once('close', finish);
  };
  const work = (res) => {
    if (active < N) startWork(res);
    else {
      poolWaits++;
      waiting.push(res);
    }
  };

  // One record per request: [arrival, class (0 critical, 1 sheddable), user, decided, outcome].
  const records = [];
  const handler = shed.wrap((req, res) => {
    const rec = req.benchRecord;
    rec[3] = epochNow();
    rec[4] = ADMITTED;
    work(res);
  });
  const server = createServer((req, res) => {
    const cls = header(req, 'x-request-criticality') === 'critical' ? 0 : 1;
    const user = Number(header(req, 'x-user-id')?.slice(1));
    const rec = [epochNow(), cls, user, Number.NaN, 0];
    records.push(rec);
    req.benchRecord = rec;
    res.on('close', () => {
      if (rec[4] !== 0) return;
      rec[3] = epochNow();
      rec[4] = res.writableFinished && res.statusCode === 503 ? REFUSED : GONE;
    });
    handler(req, res);
  });
  server.keepAliveTimeout = 60_000;
  let connections = 0;
  server.on('connection', () => connections++);

  // The threshold, polled: one entry per change, [time, rank, criticality, firstAttempts, cohort].
  const threshold = [];
  let last = -1;
  const poll = setInterval(() => {
    const s = limiter?.snapshot().shedding;
    const rank = s?.rank ?? -1;
    if (rank !== last) {
      last = rank;
      threshold.push([
        epochNow(),
        rank,
        s?.criticality ?? null,
        s?.firstAttempts ?? null,
        s?.cohort ?? null,
      ]);
    }
  }, 10);

  answerAsks((msg) => {
    if (msg.cmd === 'results') {
      return {
        records,
        threshold,
        ranks: limiter?.snapshot().shedding?.ranks,
        poolWaits,
        connections,
        cpuS: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
      };
    }
    if (msg.cmd === 'stop') {
      clearInterval(poll);
      setImmediate(() => process.exit(0));
      return {};
    }
    return {};
  });
  server.listen(0, '127.0.0.1', () =>
    process.send({ url: `http://127.0.0.1:${server.address().port}/work` }),
  );
}

// ---------------------------------------------------------------------------------------------
// Parent: the load generator and the analysis.

async function runVariant(variant, undici) {
  const { child, first } = await startChild(SELF, [
    ...args,
    '--child=service',
    `--variant=${variant}`,
  ]);
  const cpu0 = process.cpuUsage();
  if (first.unsupported !== undefined) {
    await stopChild(child);
    return { variant, unsupported: first.unsupported };
  }
  const agent = new undici.Agent({ keepAliveTimeout: 30_000, connections: 256 });
  // Warm the connection pool and the service's code paths (not recorded at the client).
  await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      undici
        .request(first.url, {
          dispatcher: agent,
          headers: { 'x-request-criticality': 'critical', 'x-user-id': `w${i}` },
        })
        .then((r) => r.body.text())
        .catch(() => {}),
    ),
  );
  await pause(300);

  const records = []; // { cls, user, sent, done, status, reason }
  const nextUser = [0, 0];
  const pending = new Set();
  const fire = (stream) => {
    const cls = stream === 'critical' ? 0 : 1;
    const user = nextUser[cls];
    nextUser[cls] = (user + 1) % USERS;
    const rec = { cls, user, sent: epochNow(), done: Number.NaN, status: 0, reason: '' };
    records.push(rec);
    const p = undici
      .request(first.url, {
        dispatcher: agent,
        headers: {
          'x-request-criticality': CLASSES[cls],
          'x-user-id': `${cls === 0 ? 'c' : 's'}${user}`,
          'x-request-timeout-ms': String(BUDGET_MS),
        },
        headersTimeout: BUDGET_MS,
        bodyTimeout: BUDGET_MS,
      })
      .then(async ({ statusCode, body }) => {
        const text = await body.text();
        rec.done = epochNow();
        rec.status = statusCode;
        if (statusCode === 503) rec.reason = /"reason":"([a-z_]+)"/.exec(text)?.[1] ?? '?';
      })
      .catch((error) => {
        rec.done = epochNow();
        rec.status = /Timeout/.test(error?.code ?? error?.name ?? '') ? -1 : -2;
      })
      .finally(() => pending.delete(p));
    pending.add(p);
  };
  const base = { critical: 0.3 * C, sheddable: 0.7 * C };
  const { windows, lag } = await openLoop(
    [
      { name: 'base', ms: BASE_S * 1000, rates: base },
      {
        name: 'spike',
        ms: SPIKE_S * 1000,
        rates: { ...base, sheddable: SPIKE_X * base.sheddable },
      },
      { name: 'after', ms: AFTER_S * 1000, rates: base },
    ],
    fire,
  );
  await Promise.all(pending);
  await pause(200);
  const u = process.cpuUsage(cpu0);
  const clientCpuS = (u.user + u.system) / 1e6;
  const server = await ask(child, { cmd: 'results' });
  await ask(child, { cmd: 'stop' }).catch(() => {});
  await stopChild(child);
  await agent.close();
  return { variant, windows, lag, client: records, clientCpuS, ...server };
}

function analyse(r) {
  const [s0, s1] = r.windows.spike;
  const [b0] = r.windows.base;
  const [, a1] = r.windows.after;
  const inSpike = (t) => t >= s0 && t < s1;
  const client = r.client;
  const sentInSpike = client.filter((x) => inSpike(x.sent));
  const availability = (cls) => {
    const xs = sentInSpike.filter((x) => x.cls === cls);
    return xs.filter((x) => x.status === 200).length / Math.max(1, xs.length);
  };
  const goodput = client.filter((x) => x.status === 200 && inSpike(x.done)).length / SPIKE_S;
  const reasons = {};
  for (const x of sentInSpike) {
    if (x.cls === 0 && x.status !== 200) {
      const k = x.status === 503 ? x.reason : x.status === -1 ? 'client timeout' : 'error';
      reasons[k] = (reasons[k] ?? 0) + 1;
    }
  }
  const critLat = sentInSpike
    .filter((x) => x.cls === 0 && x.status === 200)
    .map((x) => x.done - x.sent)
    .sort((a, b) => a - b);

  const inBase = client.filter((x) => x.sent >= b0 && x.sent < s0);
  const baseFailed = inBase.filter((x) => x.status !== 200).length;

  // Inversions at the server: per 100 ms window of decision time.
  const win = new Map();
  for (const [, cls, , decided, outcome] of r.records) {
    if (outcome !== ADMITTED && outcome !== REFUSED) continue;
    const k = Math.floor((decided - b0) / 100);
    if (!win.has(k)) win.set(k, { critRefused: 0, shedAdmitted: 0 });
    const w = win.get(k);
    if (cls === 0 && outcome === REFUSED) w.critRefused++;
    if (cls === 1 && outcome === ADMITTED) w.shedAdmitted++;
  }
  let inversions = 0;
  let inversionWindows = 0;
  for (const w of win.values()) {
    if (w.critRefused > 0 && w.shedAdmitted > 0) {
      inversions += w.critRefused;
      inversionWindows++;
    }
  }
  const critRefusedServer = r.records.filter((x) => x[1] === 0 && x[4] === REFUSED).length;

  // Shed users per 1 s window of the spike after its first second (constant overload).
  const sets = [];
  for (let t = s0 + 1000; t + 1000 <= s1 + 1; t += 1000) sets.push({ from: t, shed: new Set() });
  const served = new Set();
  const shedAll = new Set();
  for (const [, cls, user, decided, outcome] of r.records) {
    if (cls !== 1 || !(decided >= s0 + 1000 && decided < s1)) continue;
    if (outcome === ADMITTED) served.add(user);
    if (outcome !== REFUSED) continue;
    shedAll.add(user);
    const w = sets[Math.floor((decided - s0 - 1000) / 1000)];
    w?.shed.add(user);
  }
  const jaccards = [];
  for (let i = 1; i < sets.length; i++) {
    const a = sets[i - 1].shed;
    const b = sets[i].shed;
    let both = 0;
    for (const u of a) if (b.has(u)) both++;
    const union = a.size + b.size - both;
    jaccards.push(union === 0 ? 1 : both / union);
  }
  let mixed = 0;
  for (const u of shedAll) if (served.has(u)) mixed++;

  // The threshold: back at 0 after the spike.
  const th = r.threshold;
  let firstZero = Number.NaN;
  let lastNonZero = Number.NaN;
  let baseMoves = 0;
  let peakRank = 0;
  let spikeMoves = 0;
  // The rank in force at the start of the constant overload, then every change during it.
  const steady = [th.filter(([t]) => t < s0 + 1000).at(-1)?.[1] ?? 0];
  for (let i = 0; i < th.length; i++) {
    const [t, rank] = th[i];
    if (t >= b0 && t < s0 && i > 0) baseMoves++;
    if (t >= s0 + 1000 && t < s1) {
      spikeMoves++;
      steady.push(rank);
    }
    if (t >= s0 && t < s1) peakRank = Math.max(peakRank, rank);
    if (t >= s1 && rank === 0 && Number.isNaN(firstZero)) firstZero = t - s1;
  }
  // The rank in force at the spike's end, and the last change to a non-zero rank after it.
  const atEnd = th.filter(([t]) => t < s1).at(-1)?.[1] ?? -1;
  for (const [t, rank] of th) if (t >= s1 && t < a1 && rank > 0) lastNonZero = t;
  const lastZero = th.filter(([t]) => t < a1).at(-1);
  let backForGood = Number.NaN;
  if (r.ranks !== undefined) {
    if (atEnd === 0 && Number.isNaN(lastNonZero)) backForGood = 0;
    else if (lastZero !== undefined && lastZero[1] === 0) backForGood = lastZero[0] - s1;
  }
  // Ranks are absolute; show the threshold's position in the sheddable level's first attempts.
  return {
    critAvail: availability(0),
    shedAvail: availability(1),
    critLatP99: percentile(critLat, 99),
    goodput,
    reasons,
    inversions,
    inversionWindows,
    critRefusedServer,
    jaccardPairs: jaccards.length,
    jaccardOk: jaccards.filter((j) => j >= 0.95).length / Math.max(1, jaccards.length),
    jaccardEqual: jaccards.filter((j) => j === 1).length / Math.max(1, jaccards.length),
    jaccardMin: jaccards.length > 0 ? Math.min(...jaccards) : Number.NaN,
    shedUsers: shedAll.size,
    mixedShare: mixed / Math.max(1, shedAll.size),
    firstZero,
    backForGood,
    baseMoves,
    spikeMoves,
    peakRank,
    rankMin: Math.min(...steady),
    rankMax: Math.max(...steady),
    sentSpike: sentInSpike.length,
    baseFailed,
    baseSent: inBase.length,
  };
}

async function main() {
  const undici = await import('undici');
  const meter = machineMeter();
  const cpu0 = process.cpuUsage();
  const results = [];
  for (const v of chosen) {
    process.stderr.write(`${v} …\n`);
    results.push(await runVariant(v, undici));
  }
  const own = process.cpuUsage(cpu0);
  const childCpuS = results.reduce((s, r) => s + (r.cpuS ?? 0), 0);
  const machine = meter.end((own.user + own.system) / 1e6 + childCpuS);
  const features = await probeFeatures();

  const lines = headerLines(
    '## S5 — importance under a spike: 30 % critical + 70 % sheddable at capacity, then 12× sheddable for 10 s',
    `node bench/s5-importance-spike.mjs ${args.join(' ')}`.trim(),
    machine.others,
    `undici ${packageInfo('undici').version}; limits-core shedding: ${features.shedding ? 'yes' : 'no'}; loadShed passes criticality/cohort: ${features.cohort ? 'yes' : 'no'}`,
  );
  lines.push(
    `- service: ${N} slots × ${SERVICE_MS} ms (C = ${C} req/s); offered critical ${0.3 * C} + sheddable ${0.7 * C} req/s, spike sheddable ${Math.round(SPIKE_X * 0.7 * C)} req/s; ${BASE_S} s base + ${SPIKE_S} s spike + ${AFTER_S} s after per variant; budget ${BUDGET_MS} ms; machine busy ${machine.busy.toFixed(2)} cores with processes + ${machine.irq.toFixed(2)} with interrupts (loopback TCP) on average`,
  );
  const outcome = [
    '',
    'During the spike:',
    '',
    '| variant | critical availability | sheddable availability | goodput % of C | inversions (100 ms windows with one) | critical p99 ms | critical failures by cause | send lag max / p99 ms, share > 10 ms | CPU s: service / load generator |',
    '|---|---:|---:|---:|---:|---:|---|---:|---:|',
  ];
  const shedding = [
    '',
    'Who is shed, and the threshold (constant overload = the spike after its first second):',
    '',
    '| variant | consecutive 1 s windows: Jaccard ≥ 0.95 / equal (lowest), of pairs | shed users also served | threshold rank min–max at constant overload (of ranks), changes | base phase (load = C): threshold moves, requests not served | back at 0 for good / first at 0, ms after the spike |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of results) {
    const name = `${r.variant}: ${VARIANTS[r.variant]}`;
    if (r.unsupported !== undefined) {
      outcome.push(`| ${name} | not measurable: ${r.unsupported} ||||||| |`);
      shedding.push(`| ${name} | not measurable ||||| |`);
      continue;
    }
    const a = analyse(r);
    r.summary = a;
    const levels = r.ranks !== undefined;
    const causes =
      Object.entries(a.reasons)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none';
    outcome.push(
      `| ${name} | ${pct(a.critAvail, 2)} | ${pct(a.shedAvail)} | ${pct(a.goodput / C)} | ${a.inversions} (${a.inversionWindows}) | ${ms0(a.critLatP99)} | ${causes} | ${ms0(r.lag.max)} / ${ms0(r.lag.p99)}, ${pct(r.lag.late10)} | ${r.cpuS.toFixed(1)} / ${r.clientCpuS.toFixed(1)} |`,
    );
    shedding.push(
      `| ${name} | ${pct(a.jaccardOk, 0)} / ${pct(a.jaccardEqual, 0)} (${a.jaccardMin.toFixed(3)}), ${a.jaccardPairs} | ${pct(a.mixedShare)} of ${a.shedUsers} | ${levels ? `${fmtRank(a.rankMin)}–${fmtRank(a.rankMax)} (${r.ranks}), ${a.spikeMoves}` : '–'} | ${levels ? a.baseMoves : '–'}, ${a.baseFailed} of ${a.baseSent} | ${levels ? `${ms0(a.backForGood)} / ${ms0(a.firstZero)}` : '–'} |`,
    );
  }
  lines.push(...outcome, ...shedding);
  lines.push(
    '',
    'Targets: critical availability ≥ 99.5 %, goodput ≥ 95 % of C, 0 inversions, ≥ 95 % of consecutive 1 s windows with Jaccard ≥ 0.95, threshold back at 0 within 2 s of the spike.',
  );
  console.log(lines.join('\n'));
  const json = opt('json');
  if (json !== undefined) writeJson(json, { args, results });
  setTimeout(() => process.exit(0), 200).unref();
}

const child = opt('child');
if (child === 'service') await serve(opt('variant'));
else await main();
