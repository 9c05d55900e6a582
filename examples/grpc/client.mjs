// A burst of 40 calls through limitGrpcClient at a server that sheds load (server.mjs, started here
// on a free port unless an address is given: `node client.mjs 127.0.0.1:50051`). The client's own
// limiter lets 8 calls run and 8 wait; the rest are refused at once without reaching the network,
// and the server refuses what is beyond its own limit. Prints how the calls ended, then the permits
// still held on each side (0: every one came back).
import { credentials, makeGenericClientConstructor } from '@grpc/grpc-js';
import { Limiter } from 'limits-core';
import { limitGrpcClient } from 'limits-grpc';
import { startServer } from './server.mjs';
import { slowService } from './service.mjs';

const given = process.argv[2];
const local = given === undefined ? await startServer(0) : undefined;
const address = given ?? `127.0.0.1:${local.port}`;

const limiter = new Limiter({ limit: 8, maxQueued: 8 });
const Slow = makeGenericClientConstructor(slowService, 'Slow');
const client = new Slow(address, credentials.createInsecure(), {
  interceptors: [limitGrpcClient({ limiter })],
});

const ended = await Promise.all(
  Array.from(
    { length: 40 },
    () =>
      new Promise((resolve) =>
        client.work({ ms: 50 }, { deadline: Date.now() + 2_000 }, (error) =>
          resolve(error === null ? 'OK' : `${error.code} ${error.details}`),
        ),
      ),
  ),
);
const counts = new Map();
for (const e of ended) counts.set(e, (counts.get(e) ?? 0) + 1);
for (const [how, n] of [...counts].sort()) console.log(`${String(n).padStart(3)}  ${how}`);
console.log(`client permits held: ${limiter.inflight}`);
client.close();
if (local !== undefined) {
  console.log(`server permits held: ${local.limiter.inflight}, handlers run: ${local.handled()}`);
  local.server.forceShutdown();
}
