// Per-call overhead of limits-grpc's interceptors on unary gRPC calls over loopback (same process,
// 127.0.0.1, one HTTP/2 connection per client).
//
//   node bench/grpc-overhead.mjs            full run (9 rounds of 4,000 calls per contender, bounded at
//                                           about 2 minutes)
//   node bench/grpc-overhead.mjs --quick    smoke test (3 rounds of 300 calls; numbers are rough)
//   node bench/grpc-overhead.mjs --rounds=15 --calls=8000 --concurrency=16 --max-seconds=300
//
// Contenders, the same unary method (a JSON message of a few bytes each way) on two grpc-js servers
// in this process, one bare and one with loadShedGrpc (grpc-js server interceptors are server-wide):
//   bare      a bare client to the bare server
//   client    a client with limitGrpcClient({ limiter }) to the bare server
//   server    a bare client to the server with loadShedGrpc({ limiter })
//   both      the client with limitGrpcClient to the server with loadShedGrpc
// Every limiter is a limits-core Limiter with a fixed limit far above the concurrency (no queueing).
//
// Method: `concurrency` loops issue calls back to back until a round's `calls` are done; a round runs
// every contender once, in an order rotated each round, so they share the machine's noise; the report
// is the median over rounds of µs per call (wall time / calls) and each contender's median difference
// to bare. Every answer is checked, both servers count the calls they handled (a contender that
// skipped the network would be caught), and every limiter must be idle after each round.

import { performance } from 'node:perf_hooks';
import {
  credentials,
  makeGenericClientConstructor,
  Server,
  ServerCredentials,
} from '@grpc/grpc-js';
import { Limiter } from 'limits-core';
import { limitGrpcClient, loadShedGrpc } from 'limits-grpc';
import { fmt, median } from './harness.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k, v ?? true];
  }),
);
const quick = args.quick === true;
const rounds = Number(args.rounds ?? (quick ? 3 : 9));
const calls = Number(args.calls ?? (quick ? 300 : 4000));
const concurrency = Number(args.concurrency ?? 8);
const maxSeconds = Number(args['max-seconds'] ?? (quick ? 30 : 120));

const json = {
  requestSerialize: (v) => Buffer.from(JSON.stringify(v)),
  requestDeserialize: (b) => JSON.parse(b.toString()),
  responseSerialize: (v) => Buffer.from(JSON.stringify(v)),
  responseDeserialize: (b) => JSON.parse(b.toString()),
};
const service = {
  echo: { path: '/bench.Echo/Echo', requestStream: false, responseStream: false, ...json },
};

async function startServer(interceptors) {
  const server = new Server({ interceptors });
  const counter = { served: 0 };
  server.addService(service, {
    echo(call, done) {
      counter.served++;
      done(null, { n: call.request.n });
    },
  });
  const port = await new Promise((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return { server, port, counter };
}

const serverLimiter = new Limiter({ limit: 10_000 });
const clientLimiter = new Limiter({ limit: 10_000 });
const bare = await startServer([]);
const shed = await startServer([loadShedGrpc({ limiter: serverLimiter })]);
const Echo = makeGenericClientConstructor(service, 'Echo');
const clientOf = (port, interceptors) =>
  new Echo(`127.0.0.1:${port}`, credentials.createInsecure(), {
    interceptors,
    'grpc.use_local_subchannel_pool': 1,
  });
const limited = [limitGrpcClient({ limiter: clientLimiter })];
const contenders = [
  { name: 'bare', client: clientOf(bare.port, []), server: bare },
  { name: 'client', client: clientOf(bare.port, limited), server: bare },
  { name: 'server', client: clientOf(shed.port, []), server: shed },
  { name: 'both', client: clientOf(shed.port, limited), server: shed },
];

const one = (client, n) =>
  new Promise((resolve, reject) =>
    client.echo({ n }, (error, reply) => {
      if (error) reject(error);
      else if (reply.n !== n) reject(new Error(`wrong answer ${reply.n} for ${n}`));
      else resolve();
    }),
  );

/** One round of `calls` calls for a contender: µs per call. */
async function round(c) {
  const before = c.server.counter.served;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < calls) await one(c.client, next++);
    }),
  );
  const us = ((performance.now() - t0) * 1000) / calls;
  if (c.server.counter.served - before !== calls) throw new Error(`${c.name}: calls not served`);
  if (clientLimiter.inflight !== 0 || serverLimiter.inflight !== 0) {
    throw new Error(`${c.name}: a permit is still held after the round`);
  }
  return us;
}

// Warm-up: connections, JIT.
for (const c of contenders) await round(c);

const results = new Map(contenders.map((c) => [c.name, []]));
const started = performance.now();
let done = 0;
for (let r = 0; r < rounds; r++) {
  if ((performance.now() - started) / 1000 > maxSeconds) break;
  const order = contenders.map((_, i) => contenders[(i + r) % contenders.length]);
  const us = {};
  for (const c of order) us[c.name] = await round(c);
  for (const c of contenders) results.get(c.name).push(us[c.name]);
  done++;
}

const bareRounds = results.get('bare');
console.log(
  `grpc-overhead: ${done} rounds × ${calls} unary calls per contender, ${concurrency} loops, Node ${process.version}\n`,
);
console.log('| contender | µs/call (median) | vs bare |');
console.log('| --------- | ---------------: | ------: |');
for (const c of contenders) {
  const xs = results.get(c.name);
  const diff = median(xs.map((x, i) => x - bareRounds[i]));
  console.log(
    `| ${c.name.padEnd(9)} | ${fmt(median(xs)).padStart(16)} | ${fmt(diff).padStart(7)} |`,
  );
}

for (const c of contenders) c.client.close();
bare.server.forceShutdown();
shed.server.forceShutdown();
