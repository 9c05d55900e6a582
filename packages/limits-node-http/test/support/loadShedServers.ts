// The servers of the loadShed tests: one app per framework loadShed serves (node:http, Express 5,
// Fastify 5), each behind `loadShed(options)` with the same routes, on 127.0.0.1:0 and closed by
// `closeServers()` after each test; and promises on limiter events, so no test sleeps.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Limiter, LimiterEvents } from 'limits-core';
import { onTestFinished } from 'vitest';
import { type LoadShedOptions, loadShed } from '../../src/index.js';

const closers: Array<() => Promise<void>> = [];

/** Closes every server and app started since the last call (call it in `afterEach`). */
export async function closeServers(): Promise<void> {
  for (const close of closers.splice(0)) await close();
}

/** Has `close` run by the next {@link closeServers}. */
export function closeLater(close: () => Promise<void>): void {
  closers.push(close);
}

/** Listens on 127.0.0.1:0 and returns the base URL; the server is closed by {@link closeServers}. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closeLater(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An app behind `loadShed`, listening. */
export interface ShedApp {
  readonly url: string;
  /** The paths (without the query) of the requests the application saw, in order. */
  readonly calls: string[];
}

/**
 * One framework's app behind `loadShed(options)`. Every app has the same routes:
 * - `/stream`: 200, writes `partial`, waits for `gate`, then ends;
 * - `/status/<code>`: answers `<code>` at once;
 * - `/outcome/<value>`: answers 200 at once with the header `x-outcome: <value>`;
 * - anything else (Fastify: `/login`, `/recommendations/:id`, `/*`): waits for `gate`, then answers
 *   200 `ok`.
 * Express and Fastify also have `/boom` (throws) and `/reject` (rejects), which go to their error
 * path. A route records its path in `calls` before it waits.
 */
export interface Framework {
  readonly name: string;
  serve<Ctx>(options: LoadShedOptions<Ctx>, gate?: Promise<void>): Promise<ShedApp>;
}

function pathOf(url: string | undefined): string {
  return (url ?? '/').split('?')[0] as string;
}

/** A node:http server whose request listener is `loadShed(options).wrap(handler)`. */
export const nodeHttp: Framework = {
  name: 'node:http',
  async serve(options, gate = Promise.resolve()) {
    const calls: string[] = [];
    const handler = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
      const path = pathOf(req.url);
      calls.push(path);
      const [, route, arg] = path.split('/');
      if (route === 'status') {
        res.statusCode = Number(arg);
        res.end();
        return;
      }
      if (route === 'outcome') {
        res.setHeader('x-outcome', arg as string);
        res.end();
        return;
      }
      if (route === 'stream') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
        await gate;
        res.end();
        return;
      }
      await gate;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    };
    const url = await listen(createServer(loadShed(options).wrap(handler)));
    return { url, calls };
  },
};

/** An Express 5 app with `app.use(loadShed(options))` before its routes. */
export const expressApp: Framework = {
  name: 'Express',
  async serve(options, gate = Promise.resolve()) {
    const calls: string[] = [];
    const app = express();
    app.use(loadShed(options));
    app.use((req, _res, next) => {
      calls.push(req.path);
      next();
    });
    app.get('/stream', async (_req, res) => {
      res.write('partial');
      await gate;
      res.end();
    });
    app.get('/status/:code', (req, res) => void res.status(Number(req.params.code)).end());
    app.get('/outcome/:value', (req, res) => void res.set('x-outcome', req.params.value).end());
    app.get('/boom', () => {
      throw new Error('boom');
    });
    app.get('/reject', async () => {
      throw new Error('async boom');
    });
    app.get('/{*rest}', async (_req, res) => {
      await gate;
      res.send('ok');
    });
    const url = await listen(createServer(app));
    return { url, calls };
  },
};

/** A Fastify 5 app with `loadShed(options).fastify` registered on its root. */
export const fastifyApp: Framework & {
  /** The same app, with `routes` added before it listens. */
  serveWith<Ctx>(
    options: LoadShedOptions<Ctx>,
    gate: Promise<void> | undefined,
    routes: (app: FastifyInstance) => void,
  ): Promise<ShedApp>;
} = {
  name: 'Fastify',
  serve(options, gate) {
    return this.serveWith(options, gate, () => {});
  },
  async serveWith(options, gate = Promise.resolve(), routes) {
    const calls: string[] = [];
    // An aborted fetch leaves a connection that close() would wait on for undici's keep-alive (4 s).
    const app = Fastify({ forceCloseConnections: true });
    closeLater(() => app.close());
    await app.register(loadShed(options).fastify);
    app.addHook('preHandler', async (request) => {
      calls.push(pathOf(request.url));
    });
    app.get('/stream', async (_request, reply) => {
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/plain' });
      reply.raw.write('partial');
      await gate;
      reply.raw.end();
    });
    app.get<{ Params: { code: string } }>('/status/:code', async (request, reply) =>
      reply.code(Number(request.params.code)).send(''),
    );
    app.get<{ Params: { value: string } }>('/outcome/:value', async (request, reply) => {
      // On the raw response, where `classify` reads it (Fastify writes its own headers at send).
      reply.raw.setHeader('x-outcome', request.params.value);
      return reply.send('');
    });
    app.get('/boom', async () => {
      throw new Error('boom');
    });
    app.get('/reject', async () => {
      throw new Error('async boom');
    });
    const waitThenOk = async () => {
      await gate;
      return 'ok';
    };
    app.get('/login', waitThenOk);
    app.get('/recommendations/:id', waitThenOk);
    app.get('/*', waitThenOk);
    routes(app);
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url, calls };
  },
};

/** The three frameworks, as rows for `describe.each`. */
export const frameworks: ReadonlyArray<readonly [string, Framework]> = [
  [nodeHttp.name, nodeHttp],
  [expressApp.name, expressApp],
  [fastifyApp.name, fastifyApp],
];

/** A promise with its resolve function, for handlers that wait on the test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** The next `name` event of `limiter` whose payload passes `accept`. */
export function nextEvent<K extends keyof LimiterEvents>(
  limiter: Limiter,
  name: K,
  accept: (payload: Parameters<LimiterEvents[K]>[0]) => boolean = () => true,
): Promise<Parameters<LimiterEvents[K]>[0]> {
  return new Promise((resolve) => {
    const listener = (payload: Parameters<LimiterEvents[K]>[0]): void => {
      if (!accept(payload)) return;
      limiter.off(name, listener as never);
      resolve(payload);
    };
    limiter.on(name, listener as never);
  });
}

/** Reads the response body's first chunk (the server wrote it), leaving the rest unread. */
export async function firstChunk(response: Response): Promise<string> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  return new TextDecoder().decode(value);
}

/**
 * Errors that would be uncaught without load shedding stay uncaught with it; these tests catch them
 * where they surface (the request listener's caller, or the next tick) instead of crashing the run:
 * until the test ends, an error whose message starts with `test:` handed to `process.nextTick` is
 * collected instead of scheduled.
 *
 * Not a `vi.spyOn`: Vitest's worker swaps `process.nextTick` around its own RPC calls and puts back,
 * a tick later, the value it read, which can drop a spy installed in between (or bring back an
 * earlier test's). The capture sits on top as an accessor instead: what anyone assigns goes
 * underneath it, and every other call goes through to that.
 */
export function captureNextTickErrors(): unknown[] {
  const errors: unknown[] = [];
  const before = Object.getOwnPropertyDescriptor(process, 'nextTick') as PropertyDescriptor;
  let next = process.nextTick;
  let active = true;
  const capture = ((fn: (...a: unknown[]) => void, ...args: unknown[]) => {
    if (active && args[0] instanceof Error && args[0].message.startsWith('test:')) {
      errors.push(args[0]);
      return;
    }
    next(fn, ...args);
  }) as typeof process.nextTick;
  Object.defineProperty(process, 'nextTick', {
    configurable: true,
    enumerable: before.enumerable ?? true,
    get: () => capture,
    set: (value: typeof process.nextTick) => {
      if (value !== capture) next = value;
    },
  });
  onTestFinished(() => {
    active = false;
    Object.defineProperty(process, 'nextTick', {
      configurable: true,
      enumerable: before.enumerable ?? true,
      writable: true,
      value: next,
    });
  });
  return errors;
}
