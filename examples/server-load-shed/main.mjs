// limits-node-http's loadShed on a Fastify server, with partitions (bulkheads) per route: a flood
// of /recommendations requests is shed with 503 + Retry-After, while /login keeps answering at once.
//
// The server can do 20 requests at once (say, its database pool). /recommendations takes 250 ms and
// is flooded at 200 requests/s (it would need 50 at once); /login takes 5 ms at 50 requests/s. The
// same load runs twice: first with one limiter for every route, then with a PartitionedLimiter that
// reserves 4 of the 20 for /login and lets /recommendations borrow the rest but never queue.
//
//   node server-load-shed/main.mjs           about 6 s
//   node server-load-shed/main.mjs --quick   about 3 s (the test suite runs this)
import Fastify from 'fastify';
import { Limiter, PartitionedLimiter } from 'limits-core';
import { loadShed } from 'limits-node-http';

const quick = process.argv.includes('--quick');
const SECONDS = quick ? 1.5 : 3;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A Fastify app whose every route is admitted through `limiter` by loadShed. */
async function startApp(limiter) {
  const app = Fastify();
  // Registered first, so a shed request costs nothing else. With a PartitionedLimiter, a request's
  // partition is the first segment of its route pattern: /login → "login",
  // /recommendations/:user → "recommendations"; any other name → "default".
  await app.register(loadShed({ limiter }).fastify);
  app.post('/login', async () => {
    await sleep(5);
    return { token: 'abc' };
  });
  app.get('/recommendations/:user', async () => {
    await sleep(250);
    return { items: [1, 2, 3] };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

/** Sends `rate` requests/s to `path` for SECONDS, open loop; per status counts and latencies. */
async function load(base, method, path, rate) {
  const result = { statuses: {}, latencies: [], shed: undefined };
  const requests = [];
  const started = performance.now();
  await new Promise((resolve) => {
    const tick = setInterval(() => {
      const t = (performance.now() - started) / 1000;
      const due = Math.floor(Math.min(t, SECONDS) * rate);
      while (requests.length < due) {
        const sent = performance.now();
        requests.push(
          fetch(`${base}${path}`, { method }).then(async (res) => {
            const body = await res.text();
            result.statuses[res.status] = (result.statuses[res.status] ?? 0) + 1;
            if (res.status === 200) result.latencies.push(performance.now() - sent);
            if (res.status === 503)
              result.shed ??= `retry-after ${res.headers.get('retry-after')}, ${body}`;
          }),
        );
      }
      if (t >= SECONDS) {
        clearInterval(tick);
        resolve();
      }
    }, 5);
  });
  await Promise.all(requests);
  return result;
}

function report(route, { statuses, latencies, shed }) {
  const total = Object.values(statuses).reduce((a, b) => a + b, 0);
  latencies.sort((a, b) => a - b);
  const at = (q) =>
    latencies.length > 0 ? latencies[Math.ceil(latencies.length * q) - 1].toFixed(0) : '-';
  console.log(
    `  ${route.padEnd(16)} ${String(total).padStart(4)} requests: ${String(statuses[200] ?? 0).padStart(4)} ok (median ${at(0.5)} ms, p99 ${at(0.99)} ms), ` +
      `${String(statuses[503] ?? 0).padStart(4)} shed with 503${shed ? ` (the first: ${shed})` : ''}`,
  );
}

const setups = {
  // One limiter for every route: the flood takes all 20 permits and fills the queue; /login waits
  // behind it or is shed with it.
  'one limiter': () => new Limiter({ limit: 20, maxQueued: 20, maxQueueWaitMs: 200 }),
  // Bulkheads: /login owns 4 permits nobody can borrow; /recommendations borrows the other 16 and is
  // shed at once beyond them (maxQueued 0), instead of queueing work it cannot finish in time.
  partitions: () =>
    new PartitionedLimiter({
      limit: 20,
      partitions: {
        login: { reserved: 4, maxQueued: 10 },
        recommendations: { maxQueued: 0 },
        default: { maxQueued: 10 },
      },
    }),
};

for (const [name, makeLimiter] of Object.entries(setups)) {
  const app = await startApp(makeLimiter());
  const base = `http://127.0.0.1:${app.server.address().port}`;
  console.log(
    `${name}: /recommendations at 200 requests/s, /login at 50 requests/s, for ${SECONDS} s`,
  );
  const [recommendations, login] = await Promise.all([
    load(base, 'GET', '/recommendations/42', 200),
    load(base, 'POST', '/login', 50),
  ]);
  report('/login', login);
  report('/recommendations', recommendations);
  await app.close();
}
