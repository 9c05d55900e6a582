// The service of scenario S1 (seed 004), as its own process: an HTTP server on 127.0.0.1 with a worker
// pool like a thread pool's — WORKERS requests handled at once, ACCEPT more waiting for a worker, 503
// beyond — and two routes:
//   /internal   2 ms of timer work (a route that does not use the dependency)
//   /external   one call to the downstream through the strategy given as argv[2] (strategies.mjs):
//               200 with `x-source: live` or `x-source: fallback`; 503 with `x-source: refused` when the
//               strategy's limiter or breaker refused the call, `x-source: failed` when the call failed.
// Beyond the worker pool's room: 503 with `x-source: busy`.
// A TimelineRecorder follows the strategy's limiter (or guard) from its events for the chart.
//
// Protocol (IPC with the parent): argv: strategy, downstream port; sends { port } when listening;
// receives { mark: 'begin' | 'end', label } (spans on the timeline), { stats: true } → replies
// { timeline, fallbacks, workersPeak }, { exit: true }.
import http from 'node:http';
import { isRefusal } from 'limits-core';
import { TimelineRecorder } from 'limits-lab';
import { strategy } from './strategies.mjs';

const WORKERS = 200;
const ACCEPT = 100;
const [name, downstreamPort] = process.argv.slice(2);
const { call, source } = strategy(name, `http://127.0.0.1:${downstreamPort}/`);
const recorder = new TimelineRecorder({ bucketMs: 100 });
recorder.track(source);

let busy = 0;
let workersPeak = 0;
let fallbacks = 0;
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
      if (how === 'fallback') fallbacks++;
      answer(res, 200, { 'x-source': how }, '{"ok":true}');
    } catch (error) {
      const source = isRefusal(error) ? 'refused' : 'failed';
      answer(res, 503, { 'x-source': source }, '{"error":"unavailable"}');
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
  else answer(res, 503, { 'retry-after': '1', 'x-source': 'busy' }, '{"error":"busy"}');
});
server.keepAliveTimeout = 60_000;

process.on('message', (msg) => {
  if (msg.mark === 'begin') recorder.begin(msg.label);
  if (msg.mark === 'end') recorder.end(msg.label);
  if (msg.stats) process.send({ timeline: recorder.timeline(), fallbacks, workersPeak });
  if (msg.exit) {
    recorder.stop();
    server.closeAllConnections();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  }
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
