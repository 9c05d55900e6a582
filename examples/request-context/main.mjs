// The request context across three services on 127.0.0.1, A → B → C (Express → node:http → Fastify),
// each behind limits-node-http's loadShed and calling the next through limitFetch. A request's time
// budget, criticality and attempt number travel with it: each service sees what is left of the
// budget (minus what the services before it spent, and a 10 ms margin per hop), the criticality the
// client gave, and the number of its own hop's attempt. C refuses at its door work whose budget cannot
// be met, so it never runs a request that has already expired.
//
//   node request-context/main.mjs     about 2 s (the test suite runs it)
import { createServer } from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { Limiter, RetryPolicy } from 'limits-core';
import { currentContext, limitFetch, loadShed } from 'limits-node-http';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One line per request a service's handler sees: what its context says. */
function seen(service) {
  const ctx = currentContext();
  const budget = ctx.deadline === undefined ? 'none' : `${Math.round(ctx.remainingMs())} ms`;
  console.log(
    `  ${service} got budget ${budget.padStart(7)}, criticality ${ctx.criticality}, attempt ${ctx.attempt}`,
  );
  return ctx;
}

// C (Fastify): one job at a time (say, a single worker), 200 ms each. Its limiter learns that and
// refuses at the door a request that cannot start and finish within its budget. Expired work is work
// whose budget ran out before it started: C must never run any.
const cLimiter = new Limiter({ limit: 1, maxQueued: 10, initialServiceMs: 200 });
const failOnce = new Set();
let expiredRunAtC = 0;
cLimiter.on('reject', ({ reason }) => console.log(`  C refused a request at its door: ${reason}`));
const c = Fastify();
await c.register(loadShed({ limiter: cLimiter }).fastify);
c.get('/work', async (request, reply) => {
  const ctx = seen('C');
  if (ctx.deadline !== undefined && ctx.remainingMs() === 0) expiredRunAtC++;
  await sleep(200);
  const key = request.query.failOnce;
  if (key !== undefined && !failOnce.has(key)) {
    failOnce.add(key);
    console.log('  C answers 503 (a flaky moment)');
    return reply.code(503).send('busy');
  }
  return 'done at C';
});
let finishJob;
c.get('/job', async () => {
  await new Promise((resolve) => {
    finishJob = resolve;
  });
  return 'job done';
});
const cUrl = await c.listen({ port: 0, host: '127.0.0.1' });

// B (node:http): 100 ms of its own work, then C, with retries (each retry is a new attempt at C).
const toC = limitFetch(fetch, {
  limiter: new Limiter({ limit: 10 }),
  retry: new RetryPolicy({ maxAttempts: 2, baseDelayMs: 0, maxDelayMs: 0 }),
});
const b = createServer(
  loadShed({ limiter: new Limiter({ limit: 10 }) }).wrap(async (req, res) => {
    seen('B');
    await sleep(100);
    const query = new URL(req.url, 'http://b').search;
    try {
      const answer = await toC(`${cUrl}/work${query}`);
      res.writeHead(answer.status);
      res.end(await answer.text());
    } catch (error) {
      res.writeHead(503);
      res.end(`B did not call C: ${error.message}`);
    }
  }),
);
await new Promise((resolve) => b.listen(0, '127.0.0.1', resolve));
const bUrl = `http://127.0.0.1:${b.address().port}`;

// A (Express): 100 ms of its own work, then B.
const toB = limitFetch(fetch, { limiter: new Limiter({ limit: 10 }) });
const appA = express();
appA.use(loadShed({ limiter: new Limiter({ limit: 10 }) }));
appA.get('/order', async (req, res) => {
  seen('A');
  await sleep(100);
  const query = new URL(req.url, 'http://a').search;
  const answer = await toB(`${bUrl}/${query}`);
  res.status(answer.status).send(await answer.text());
});
const a = appA.listen(0, '127.0.0.1');
await new Promise((resolve) => a.once('listening', resolve));
const aUrl = `http://127.0.0.1:${a.address().port}`;

async function until(check) {
  while (!check()) await sleep(1);
}

async function client(title, headers, query = '') {
  console.log(title);
  const res = await fetch(`${aUrl}/order${query}`, { headers });
  console.log(`  client got ${res.status} ${await res.text()}`);
}

try {
  await client('1. A 1 s budget, sheddable_plus, through A → B → C:', {
    'x-request-timeout-ms': '1000',
    'x-request-criticality': 'sheddable_plus',
  });
  await client(
    "2. C fails once, B retries: the attempt number is B → C hop's own:",
    { 'x-request-timeout-ms': '1000' },
    '?failOnce=2',
  );
  // A job that holds C's only slot until the request below has its answer.
  const busy = fetch(`${cUrl}/job`).then((r) => r.text());
  await until(() => cLimiter.inflight === 1);
  await client(
    '3. C is busy with a job; a request with a 400 ms budget reaches it with less than the 200 ms wait and 200 ms of work it needs:',
    { 'x-request-timeout-ms': '400' },
  );
  finishJob();
  await busy;
  console.log(`expired work run at C: ${expiredRunAtC}`);
} finally {
  a.close();
  b.close();
  await c.close();
}
