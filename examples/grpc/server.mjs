// A gRPC server that sheds load at its door: loadShedGrpc admits at most 4 calls at a time with 4
// more waiting; the rest are answered RESOURCE_EXHAUSTED ("limits: queue_full") before the handler
// runs. `node server.mjs` serves on 127.0.0.1:50051 until Ctrl-C.
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { Limiter } from 'limits-core';
import { loadShedGrpc } from 'limits-grpc';
import { slowService } from './service.mjs';

/** Starts the server on `port` (0: any free one); resolves with it, its limiter and its port. */
export async function startServer(port = 0) {
  const limiter = new Limiter({ limit: 4, maxQueued: 4 });
  const server = new Server({ interceptors: [loadShedGrpc({ limiter })] });
  let handled = 0;
  server.addService(slowService, {
    work(call, done) {
      handled++;
      setTimeout(() => done(null, { done: call.request.ms }), call.request.ms);
    },
  });
  const bound = await new Promise((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error, p) =>
      error ? reject(error) : resolve(p),
    ),
  );
  return { server, limiter, port: bound, handled: () => handled };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { port } = await startServer(50051);
  console.log(`Slow.Work on 127.0.0.1:${port} (Ctrl-C to stop)`);
}
