import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A test server on 127.0.0.1:0 whose routes the test sets; it counts requests and closed ones. */
export interface FetchServer {
  readonly url: string;
  /** Requests received (every method, every path). */
  readonly requests: IncomingMessage[];
  /** Requests whose connection or stream closed before the response ended. */
  aborted: number;
  /** The handler for the next requests (default: 200 "ok"). */
  handle: (req: IncomingMessage, res: ServerResponse) => void;
  close(): Promise<void>;
}

export async function startServer(): Promise<FetchServer> {
  const state: FetchServer = {
    url: '',
    requests: [],
    aborted: 0,
    handle: (_req, res) => res.end('ok'),
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    state.requests.push(req);
    res.on('close', () => {
      if (!res.writableFinished) state.aborted++;
    });
    state.handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  (state as { url: string }).url = `http://127.0.0.1:${port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

/** A handler answering `status` with `body` and `headers`. */
export function reply(status: number, body = '', headers: Record<string, string> = {}) {
  return (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, headers);
    res.end(body);
  };
}

/** A promise with its resolve function, to let a server step happen when the test says so. */
export function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Lets a few event-loop turns pass (I/O callbacks included), without timing anything. */
export async function turns(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Waits until `check()` holds, letting I/O run between checks (bounded: fails after `max` turns). */
export async function until(check: () => boolean, max = 2000): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (check()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition not reached');
}

/** A clock whose time moves only by `advance(ms)`, which fires the timers due (in order). */
export class ManualClock {
  #now = 0;
  #next = 1;
  #timers = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.#now;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }
  /** Timers not fired yet. */
  get pending(): number {
    return this.#timers.size;
  }
  advance(ms: number): void {
    const end = this.#now + ms;
    for (;;) {
      let due: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.#timers) {
        if (entry[1].at <= end && (due === undefined || entry[1].at < due[1].at)) due = entry;
      }
      if (due === undefined) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].fn();
    }
    this.#now = end;
  }
}
