// The sick dependency of S1 over gRPC, as its own process: a grpc-js server on 127.0.0.1 whose every
// answer takes BASE ms (50) with ±10 % jitter, or SPIKE ms (3,000) while the parent says so; no
// capacity limit of its own, so the calls sitting on it are exactly what the caller lets through. The
// gRPC twin of examples/latency-spike/downstream.mjs, with its IPC protocol: sends { port } when
// listening; receives { spike: boolean }, { stats: true } → replies { samples: [[ms, in flight], ...],
// peak, phases: [[ms, spike], ...] } (ms since this process started), { exit: true }. A call counts
// as in flight from its handler's start until its status is sent or it is cancelled.
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { slowService } from './service.mjs';

const BASE_MS = Number(process.env.S1_BASE_MS ?? 50);
const SPIKE_MS = Number(process.env.S1_SPIKE_MS ?? 3000);
const SAMPLE_MS = 50;

let spike = false;
let inflight = 0;
let peak = 0;
const started = performance.now();
const samples = [];
const phases = [];

const server = new Server();
server.addService(slowService, {
  call(call, done) {
    inflight++;
    if (inflight > peak) peak = inflight;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      inflight--;
      clearTimeout(timer);
    };
    const ms = (spike ? SPIKE_MS : BASE_MS) * (0.9 + Math.random() * 0.2);
    const timer = setTimeout(() => {
      finish();
      done(null, { ok: true });
    }, ms);
    call.on('cancelled', finish);
  },
});

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
    server.forceShutdown();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));

server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.send({ port });
});
