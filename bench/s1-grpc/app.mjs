// The service of S1 calling its dependency over gRPC, as its own process: the worker pool and routes
// of examples/latency-spike/app.mjs (WORKERS requests at once, ACCEPT waiting, 503 beyond; /internal
// 2 ms of timer work; /external one call to the downstream), with /external a unary gRPC call through
// limits-grpc's limitGrpcClient and the strategy's limiter, built with the same options as
// examples/latency-spike/strategies.mjs: static (limit 50), vegas, gradient (default options).
// 200 `x-source: live` on OK, 503 on any other status (a refusal included).
//
// Protocol (IPC, as app.mjs): argv: strategy, downstream port; sends { port } when listening;
// receives { mark } (ignored), { stats: true } → replies { fallbacks, workersPeak }, { exit: true }.
import http from 'node:http';
import { credentials, makeGenericClientConstructor } from '@grpc/grpc-js';
import { GradientLimit, Limiter, VegasLimit } from 'limits-core';
import { limitGrpcClient } from 'limits-grpc';
import { slowService } from './service.mjs';

const WORKERS = 200;
const ACCEPT = 100;
const [name, downstreamPort] = process.argv.slice(2);

function limiterOf(strategy) {
  switch (strategy) {
    case 'none':
      return new Limiter({ limit: 1_000_000 });
    case 'static':
      return new Limiter({ limit: 50 });
    case 'vegas':
      return new Limiter({ algorithm: new VegasLimit() });
    case 'gradient':
      return new Limiter({ algorithm: new GradientLimit() });
    default:
      throw new Error(`unknown strategy ${strategy}; one of none, static, vegas, gradient`);
  }
}

const limiter = limiterOf(name);
const Slow = makeGenericClientConstructor(slowService, 'Slow');
const client = new Slow(`127.0.0.1:${downstreamPort}`, credentials.createInsecure(), {
  interceptors: [limitGrpcClient({ limiter })],
});
const call = () =>
  new Promise((resolve, reject) =>
    client.call({}, (error) => (error === null ? resolve('live') : reject(error))),
  );

let busy = 0;
let workersPeak = 0;
const accept = [];

function answer(res, status, headers, body) {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body);
}

async function handle(req, res) {
  if (req.url === '/internal') {
    await new Promise((resolve) => setTimeout(resolve, 2));
    answer(res, 200, {}, '{"ok":true}');
    return;
  }
  if (req.url === '/external') {
    try {
      const how = await call();
      answer(res, 200, { 'x-source': how }, '{"ok":true}');
    } catch {
      answer(res, 503, {}, '{"error":"unavailable"}');
    }
    return;
  }
  answer(res, 404, {}, '{"error":"not found"}');
}

function work(req, res) {
  busy++;
  if (busy > workersPeak) workersPeak = busy;
  handle(req, res).finally(() => {
    busy--;
    const next = accept.shift();
    if (next !== undefined) work(next.req, next.res);
  });
}

const server = http.createServer((req, res) => {
  req.resume();
  if (busy < WORKERS) work(req, res);
  else if (accept.length < ACCEPT) accept.push({ req, res });
  else answer(res, 503, { 'retry-after': '1' }, '{"error":"busy"}');
});
server.keepAliveTimeout = 60_000;

process.on('message', (msg) => {
  // (No timeline: the scenario's figures do not read it; marks are ignored.)
  if (msg.stats) process.send({ fallbacks: 0, workersPeak });
  if (msg.exit) {
    client.close();
    server.closeAllConnections();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  }
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
