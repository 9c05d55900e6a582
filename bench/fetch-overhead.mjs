// Per-request overhead of limitFetch against bare fetch, to a local node:http server (same process,
// 127.0.0.1, keep-alive).
//
//   node bench/fetch-overhead.mjs            full run (9 rounds of 4,000 requests per contender, bounded
//                                            at about 2 minutes)
//   node bench/fetch-overhead.mjs --quick    smoke test (3 rounds of 300 requests; numbers are rough)
//   node bench/fetch-overhead.mjs --undici   undici's fetch instead of the global one
//   node bench/fetch-overhead.mjs --rounds=15 --requests=8000 --concurrency=16 --max-seconds=300
//
// Contenders, all through the same fetch to the same server, each request reading its body:
//   bare       fetch(url).then((r) => r.text())
//   bare+signal the same with a fresh AbortSignal per request: what passing any signal costs fetch
//              itself (+timeout passes one)
//   floor      the cheapest correct wrapper: a slot from a hand-written semaphore (harness.mjs's
//              createSemaphore, the floor of the other overhead benchmarks), fetch, release once the
//              body has been read
//   limitFetch limitFetch(fetch, { limiter }) with a limits-core Limiter (fixed limit): the permit is
//              held until the body has been read (the default release: 'body')
//   +timeout   the same with timeoutMs (a deadline timer and a merged AbortSignal per request)
//   headers    limitFetch with release: 'headers' (no body wrapper)
//
// Method: `concurrency` loops issue requests back to back (each waits for its body) until a round's
// `requests` are done; a round runs every contender once, in an order rotated each round, so they share
// the machine's noise; the report is the median over rounds of µs per request (wall time / requests),
// and each contender's median difference to bare and to floor. Every response's text is checked, and
// every limiter must be idle after each round. The server counts requests, so a contender that skipped
// the network would be caught.

import { createServer } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Limiter } from 'limits-core';
import { limitFetch } from 'limits-node-http';
import { fetch as undiciFetch } from 'undici';
import { createSemaphore, fmt, median } from './harness.mjs';

const args = Object.fromEntries(
  process.argv.slice(2).map((a) => {
    const [k, v] = a.replace(/^--/, '').split('=');
    return [k, v ?? true];
  }),
);
const quick = args.quick === true;
const rounds = Number(args.rounds ?? (quick ? 3 : 9));
const requests = Number(args.requests ?? (quick ? 300 : 4000));
const concurrency = Number(args.concurrency ?? 8);
const maxSeconds = Number(args['max-seconds'] ?? (quick ? 30 : 120));
const baseFetch = args.undici === true ? undiciFetch : globalThis.fetch;

const BODY = 'ok';
let served = 0;
const server = createServer((_req, res) => {
  served++;
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(BODY.length) });
  res.end(BODY);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${server.address().port}/`;

const read = (r) => r.text();
const semaphore = createSemaphore(concurrency);
const limiters = [];
const limiter = () => {
  const l = new Limiter({ limit: concurrency });
  limiters.push(l);
  return l;
};
const contenders = [
  ['bare', () => baseFetch(url).then(read)],
  ['bare+signal', () => baseFetch(url, { signal: new AbortController().signal }).then(read)],
  ['floor', () => semaphore.run(() => baseFetch(url).then(read))],
  [
    'limitFetch',
    (
      (f) => () =>
        f(url).then(read)
    )(limitFetch(baseFetch, { limiter: limiter() })),
  ],
  [
    '+timeout',
    (
      (f) => () =>
        f(url).then(read)
    )(limitFetch(baseFetch, { limiter: limiter(), timeoutMs: 30_000 })),
  ],
  [
    'headers',
    (
      (f) => () =>
        f(url).then(read)
    )(limitFetch(baseFetch, { limiter: limiter(), release: 'headers' })),
  ],
];

/** One round of `n` requests through `call` by `concurrency` loops: µs per request. */
async function round(call, n) {
  let issued = 0;
  const before = served;
  const loop = async () => {
    while (issued < n) {
      issued++;
      const text = await call();
      if (text !== BODY) throw new Error(`unexpected body ${JSON.stringify(text)}`);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, loop));
  const us = ((performance.now() - start) * 1000) / n;
  if (served - before !== n) throw new Error(`server saw ${served - before} requests, not ${n}`);
  for (const l of limiters) {
    if (l.inflight !== 0) throw new Error(`a limiter is not idle: ${l.inflight} in flight`);
  }
  if (semaphore.active !== 0) throw new Error('the floor semaphore is not idle');
  return us;
}

const samples = new Map(contenders.map(([name]) => [name, []]));
const began = performance.now();
// Warm-up: one short round each (connections opened, code paths compiled).
for (const [, call] of contenders) await round(call, Math.min(requests, 200));
let done = 0;
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < contenders.length; i++) {
    const [name, call] = contenders[(i + r) % contenders.length];
    samples.get(name).push(await round(call, requests));
  }
  done++;
  if ((performance.now() - began) / 1000 > maxSeconds) break;
}
server.closeAllConnections();
server.close();

const bare = median(samples.get('bare'));
const floor = median(samples.get('floor'));
console.log(
  `fetch-overhead: ${args.undici === true ? 'undici fetch' : 'global fetch'}, Node ${process.version}, ` +
    `${done} rounds × ${requests} requests, concurrency ${concurrency}, body ${BODY.length} B` +
    `${quick ? ' (--quick: rough numbers)' : ''}`,
);
console.log('| contender | µs/request (median) | vs bare | vs floor |');
console.log('|---|---:|---:|---:|');
for (const [name] of contenders) {
  const m = median(samples.get(name));
  console.log(
    `| ${name} | ${fmt(m)} | ${m - bare >= 0 ? '+' : ''}${fmt(m - bare)} | ${
      name === 'bare' ? '' : `${m - floor >= 0 ? '+' : ''}${fmt(m - floor)}`
    } |`,
  );
}
