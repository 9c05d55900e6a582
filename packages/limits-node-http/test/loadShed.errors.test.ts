import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Limiter } from 'limits-core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadShed } from '../src/index.js';
import {
  captureNextTickErrors,
  closeServers,
  deferred,
  listen,
  nextEvent,
} from './support/loadShedServers.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await closeServers();
});

describe('loadShed when the application throws', () => {
  it('gives a wrapped handler that throws at once its permit back as failure and rethrows to the caller', async () => {
    const limiter = new Limiter({ limit: 1 });
    const wrapped = loadShed({ limiter }).wrap(() => {
      throw new Error('test: sync');
    });
    let caught: unknown;
    const url = await listen(
      createServer((req, res) => {
        try {
          wrapped(req, res);
        } catch (error) {
          caught = error;
          res.statusCode = 500;
          res.end();
        }
      }),
    );
    const released = nextEvent(limiter, 'release');
    expect((await fetch(url)).status).toBe(500);
    expect((await released).outcome).toBe('failure');
    expect((caught as Error).message).toBe('test: sync');
    expect(limiter.inflight).toBe(0);
  });

  it('gives a wrapped handler that throws after waiting in the queue its permit back, and rethrows on the next tick', async () => {
    const errors = captureNextTickErrors();
    const limiter = new Limiter({ limit: 1, maxQueued: 5 });
    const gate = deferred();
    const syncThrow = (req: IncomingMessage, res: ServerResponse): unknown => {
      if (req.url === '/throw') {
        res.statusCode = 500;
        res.end();
        throw new Error('test: queued');
      }
      return gate.promise.then(() => res.end('ok'));
    };
    const url = await listen(createServer(loadShed({ limiter }).wrap(syncThrow)));
    const first = fetch(`${url}/held`);
    await nextEvent(limiter, 'acquire');
    const queued = nextEvent(limiter, 'queue');
    const second = fetch(`${url}/throw`);
    await queued;
    const failed = nextEvent(limiter, 'release', (e) => e.outcome === 'failure');
    gate.resolve();
    await first;
    await failed;
    expect((await second).status).toBe(500);
    expect(errors.map((e) => (e as Error).message)).toEqual(['test: queued']);
    expect(limiter.inflight).toBe(0);
  });

  it('gives a wrapped handler whose promise rejects its permit back as failure and leaves the rejection unhandled', async () => {
    const limiter = new Limiter({ limit: 1 });
    let reject: ((error: unknown) => unknown) | undefined;
    const thenable = {
      // biome-ignore lint/suspicious/noThenProperty: a thenable is what the test needs.
      then(_resolve: unknown, onRejected: (error: unknown) => unknown) {
        reject = onRejected;
      },
    };
    const responses: ServerResponse[] = [];
    const wrapped = loadShed({ limiter }).wrap((_req, res) => {
      responses.push(res);
      return thenable;
    });
    const url = await listen(createServer(wrapped));
    const response = fetch(url);
    await nextEvent(limiter, 'acquire');
    const released = nextEvent(limiter, 'release');
    expect(() => reject?.(new Error('test: rejected'))).toThrow('test: rejected');
    expect((await released).outcome).toBe('failure');
    expect(limiter.inflight).toBe(0);
    responses[0]?.end('late');
    expect(await (await response).text()).toBe('late');
  });

  it('closes the connection and rethrows on the next tick when onShed throws', async () => {
    const errors = captureNextTickErrors();
    const limiter = new Limiter({ limit: 1, maxQueued: 0 });
    const gate = deferred();
    const onShed = () => {
      throw new Error('test: onShed');
    };
    const handler = async (_req: IncomingMessage, res: ServerResponse) => {
      await gate.promise;
      res.end();
    };
    const url = await listen(createServer(loadShed({ limiter, onShed }).wrap(handler)));
    const first = fetch(url);
    await nextEvent(limiter, 'acquire');
    // Wait for the server's refusal itself, not only for the client to see its connection closed:
    // under load the client's rejection can come first, and the assertion would then run before
    // onShed, the error surfacing after the test as an uncaught one.
    const refused = nextEvent(limiter, 'reject');
    const second = fetch(url);
    await refused;
    expect(errors.map((e) => (e as Error).message)).toEqual(['test: onShed']);
    await expect(second).rejects.toThrow();
    gate.resolve();
    await first;
  });

  it('neither admits nor answers a request whose response is already destroyed', () => {
    const limiter = new Limiter({ limit: 1 });
    const next = vi.fn();
    const res = { destroyed: true } as unknown as ServerResponse;
    loadShed({ limiter })({} as IncomingMessage, res, next);
    expect(next).not.toHaveBeenCalled();
    expect(limiter.inflight).toBe(0);
  });
});
