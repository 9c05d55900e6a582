import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { Clock } from 'limits-core';
import * as undici7 from 'undici';

const require = createRequire(import.meta.url);
const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];

/** The undici API the interceptor tests use (undici 8's has the same shape for these calls). */
export type Undici = typeof undici7;

/** undici 8 (the devDependency `undici8`) declares Node ≥ 22.19; CI runs Node 20 and 24. */
export const undici8Runs = major > 22 || (major === 22 && minor >= 19);

/**
 * Every supported undici that runs on this Node, as `[name, undici]` rows for `describe.each`:
 * undici 7 everywhere, undici 8 where Node allows it.
 */
export const undiciVersions: Array<[string, Undici]> = [['undici 7', undici7]];
if (undici8Runs) undiciVersions.push(['undici 8', require('undici8') as Undici]);

/** A test server on 127.0.0.1:0 whose routes the tests drive. */
export interface TestServer {
  readonly origin: string;
  /** Requests that reached the server. */
  readonly count: number;
  /** Responses the server holds open (routes `/slow` and `/hang`), oldest first. */
  readonly held: ServerResponse[];
  /** Resolves when the server has received `n` requests in total. */
  received(n: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Routes:
 * - `/status/<code>[?retry-after=<value>]` answers `<code>` with a short body (and that header);
 * - `/slow[?status=<code>]` sends the headers and a first chunk, then holds the response open
 *   (in `held`) until the test writes or ends it;
 * - `/big` sends a 1 MiB `content-length` and a first chunk, then holds the response;
 * - `/flaky/<n>[?status=<code>&retry-after=<value>]` fails the first `n` requests to that URL (503 by
 *   default), then answers 200 `ok after <n>`;
 * - `/redirect/<code>` answers 302 to `/status/<code>`;
 * - `/hang` never answers (held);
 * - `/flood` sends 4 MiB of an 8 MiB body at once, then holds the response.
 */
export async function startServer(): Promise<TestServer> {
  let count = 0;
  const held: ServerResponse[] = [];
  const flaky = new Map<string, number>();
  const waiting: Array<{ n: number; resolve: () => void }> = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    count++;
    for (const w of waiting.splice(0)) {
      if (count >= w.n) w.resolve();
      else waiting.push(w);
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const [, route, arg] = url.pathname.split('/');
    if (route === 'status') {
      const retryAfter = url.searchParams.get('retry-after');
      if (retryAfter !== null) res.setHeader('retry-after', retryAfter);
      res.statusCode = Number(arg);
      res.end('body');
    } else if (route === 'slow') {
      res.writeHead(Number(url.searchParams.get('status') ?? 200), {
        'content-type': 'text/plain',
      });
      res.write('first;');
      held.push(res);
    } else if (route === 'big') {
      res.writeHead(200, { 'content-length': String(1024 * 1024) });
      res.write(Buffer.alloc(1024));
      held.push(res);
    } else if (route === 'flaky') {
      // Fails the first <arg> requests to this URL (status, default 503; retry-after if given).
      const seen = (flaky.get(req.url ?? '') ?? 0) + 1;
      flaky.set(req.url ?? '', seen);
      if (seen <= Number(arg)) {
        const retryAfter = url.searchParams.get('retry-after');
        if (retryAfter !== null) res.setHeader('retry-after', retryAfter);
        res.statusCode = Number(url.searchParams.get('status') ?? 503);
        res.end(`failed ${seen}`);
      } else res.end(`ok after ${seen - 1}`);
    } else if (route === 'redirect') {
      res.writeHead(302, { location: `/status/${arg}` });
      res.end('moved');
    } else if (route === 'hang') {
      held.push(res);
    } else if (route === 'flood') {
      // More than any client buffers: an unread body is paused by the client.
      res.writeHead(200, { 'content-length': String(8 * 1024 * 1024) });
      res.write(Buffer.alloc(4 * 1024 * 1024));
      held.push(res);
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    get count() {
      return count;
    },
    held,
    received(n) {
      if (count >= n) return Promise.resolve();
      return new Promise((resolve) => waiting.push({ n, resolve }));
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A clock whose time moves only through `advance` (firing due timers): for `timeoutMs`. */
export class ManualClock implements Clock {
  #now = 0;
  #timers = new Map<number, { at: number; fn: () => void }>();
  #next = 1;
  /** The delay of every timer set, in order. */
  readonly delays: number[] = [];

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.delays.push(ms);
    this.#timers.set(id, { at: this.#now + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.#timers.size;
  }

  advance(ms: number): void {
    this.#now += ms;
    for (const [id, t] of [...this.#timers].sort((a, b) => a[1].at - b[1].at)) {
      if (t.at <= this.#now) {
        this.#timers.delete(id);
        t.fn();
      }
    }
  }
}

/** Resolves once `predicate()` holds, checking after each turn of the event loop. */
export async function until(predicate: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (predicate()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`timed out waiting until ${what}`);
}
