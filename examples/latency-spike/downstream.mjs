// The sick dependency of scenario S1 (seed 004), as its own process: an HTTP server on 127.0.0.1 whose
// every answer takes BASE ms (50) with ±10 % jitter, or SPIKE ms (3,000) while the parent says so. It
// has no capacity limit of its own (an external API that is slow, not saturated), so the number of
// calls sitting on it is exactly what the caller's strategy lets through. It samples that number
// (requests whose response has not ended and whose socket is open) every SAMPLE_MS for the report.
//
// Protocol (IPC with the parent): sends { port } when listening; receives { spike: boolean },
// { stats: true } → replies { samples: [[ms, in flight], ...], peak, phases: [[ms, spike], ...] } (ms since
// this process started), { exit: true }.
import http from 'node:http';

const BASE_MS = Number(process.env.S1_BASE_MS ?? 50);
const SPIKE_MS = Number(process.env.S1_SPIKE_MS ?? 3000);
const SAMPLE_MS = 50;

let spike = false;
let inflight = 0;
let peak = 0;
const started = performance.now();
const samples = [];
const phases = [];

const server = http.createServer((req, res) => {
  inflight++;
  if (inflight > peak) peak = inflight;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    inflight--;
    clearTimeout(timer);
  };
  const ms = (spike ? SPIKE_MS : BASE_MS) * (0.9 + Math.random() * 0.2);
  const timer = setTimeout(() => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  }, ms);
  res.on('close', finish);
  req.resume();
});
server.keepAliveTimeout = 60_000;

const sampler = setInterval(() => {
  samples.push([Math.round(performance.now() - started), inflight]);
}, SAMPLE_MS);

process.on('message', (msg) => {
  if (msg.spike !== undefined) {
    spike = msg.spike;
    phases.push([Math.round(performance.now() - started), spike]);
  }
  if (msg.stats) process.send({ samples, peak, phases });
  if (msg.exit) {
    clearInterval(sampler);
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
process.on('disconnect', () => process.exit(0));

server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
