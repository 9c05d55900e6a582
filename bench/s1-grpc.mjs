// Scenario S1 (seed 004) with a gRPC downstream: the latency spike of s1-latency-spike.mjs, the app
// calling its dependency with a unary gRPC call through limits-grpc's limitGrpcClient, beside the
// same strategies over HTTP (limitFetch), run in the same sitting so the two can be compared.
//
//   node bench/s1-grpc.mjs                  3 rounds × (static, vegas, gradient) × (http, grpc) × 21 s
//                                           (~13 min)
//   node bench/s1-grpc.mjs --rounds=1       one round (~4.5 min)
//   node bench/s1-grpc.mjs --quick          1 round, 2 s + 3 s + 2 s (smoke test)
//   node bench/s1-grpc.mjs --only=vegas
//
// The gRPC runs use bench/s1-grpc/downstream.mjs (a grpc-js server: 50 ms, 3,000 ms during the
// spike) and bench/s1-grpc/app.mjs (the worker pool and routes of examples/latency-spike/app.mjs,
// /external through limitGrpcClient with the strategy's limiter: static 50, Vegas, Gradient, default
// options as examples/latency-spike/strategies.mjs); the HTTP runs use examples/latency-spike's own
// children. Load, phases and every figure are examples/latency-spike/scenario.mjs's (runStrategy,
// summarize, table): 100 req/s open loop to each route, 5 s calm, 8 s spike, 8 s calm. Each round
// runs every (strategy, transport) pair once in a rotated order; the report gives medians per pair and
// the gRPC figure's difference to the HTTP one for peak in flight and recovery.
import { runStrategy, summarize, table } from '../examples/latency-spike/scenario.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const rounds = Number(args.find((a) => a.startsWith('--rounds='))?.slice(9) ?? (quick ? 1 : 3));
const only = args
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const strategies = only ?? ['static', 'vegas', 'gradient'];
const phases = quick ? { beforeS: 2, spikeS: 3, afterS: 2 } : { beforeS: 5, spikeS: 8, afterS: 8 };
const grpcChildren = {
  downstream: new URL('./s1-grpc/downstream.mjs', import.meta.url).href,
  app: new URL('./s1-grpc/app.mjs', import.meta.url).href,
};

const pairs = strategies.flatMap((s) => [
  { strategy: s, transport: 'http' },
  { strategy: s, transport: 'grpc' },
]);
const runs = new Map(pairs.map((p) => [`${p.strategy}/${p.transport}`, []]));
for (let r = 0; r < rounds; r++) {
  const order = pairs.map((_, i) => pairs[(i + r) % pairs.length]);
  for (const p of order) {
    const o = p.transport === 'grpc' ? { ...phases, ...grpcChildren } : phases;
    const summary = summarize(await runStrategy(p.strategy, o));
    summary.strategy = `${p.strategy} (${p.transport})`;
    runs.get(`${p.strategy}/${p.transport}`).push(summary);
    process.stderr.write(
      `round ${r + 1}/${rounds} ${summary.strategy}: peak ${summary.peakInflight}, recovery ${summary.recoveryS} s\n`,
    );
  }
}

const median = (values) => {
  const v = values.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (v.length < values.length / 2) return Number.NaN;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const medians = pairs.map((p) => {
  const list = runs.get(`${p.strategy}/${p.transport}`);
  const m = { strategy: list[0].strategy };
  for (const key of Object.keys(list[0])) {
    if (key !== 'strategy') m[key] = median(list.map((s) => s[key]));
  }
  return m;
});

console.log(
  `S1 over HTTP and gRPC, ${rounds} round(s), phases ${phases.beforeS} s + ${phases.spikeS} s spike + ${phases.afterS} s, Node ${process.version}\n`,
);
console.log('Medians:\n');
console.log(table(medians));
console.log('\ngRPC against HTTP (medians):\n');
const pct = (a, b) => (b === 0 ? Number.NaN : ((a - b) / b) * 100);
for (const s of strategies) {
  const h = medians.find((m) => m.strategy === `${s} (http)`);
  const g = medians.find((m) => m.strategy === `${s} (grpc)`);
  console.log(
    `- ${s}: peak in flight ${g.peakInflight} vs ${h.peakInflight} (${pct(g.peakInflight, h.peakInflight).toFixed(0)} %), recovery ${g.recoveryS} s vs ${h.recoveryS} s (${pct(g.recoveryS, h.recoveryS).toFixed(0)} %)`,
  );
}
for (let r = 0; r < rounds; r++) {
  console.log(`\nRound ${r + 1}:\n`);
  console.log(table(pairs.map((p) => runs.get(`${p.strategy}/${p.transport}`)[r])));
}
