// Helpers of the loadShed tests: real servers on 127.0.0.1:0, closed after each test, and promises
// on limiter events (no sleeps).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Limiter, LimiterEvents } from 'limits-core';
import { vi } from 'vitest';

/** A promise with its resolve function, for handlers that wait on the test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Listens on 127.0.0.1:0 and returns the base URL; `closers` gets the server's close. */
export async function listen(server: Server, closers: Array<() => Promise<void>>): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
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
 * The real `process.nextTick`, taken when the module loads: read inside a test it could be a spy left
 * by an earlier one (vi.spyOn on a spied method reuses that spy), and calling it from the new spy
 * then recursed until the stack overflowed.
 */
const realNextTick = process.nextTick;

/**
 * Errors that would be uncaught without load shedding stay uncaught with it; these tests catch them
 * where they surface (the request listener's caller, or the next tick) instead of crashing the run:
 * an error whose message starts with `test:` handed to `process.nextTick` is collected instead of
 * scheduled (restored by `vi.restoreAllMocks()`).
 */
export function captureNextTickErrors(): unknown[] {
  const errors: unknown[] = [];
  vi.spyOn(process, 'nextTick').mockImplementation(((
    fn: (...a: unknown[]) => void,
    ...args: unknown[]
  ) => {
    if (args[0] instanceof Error && args[0].message.startsWith('test:')) {
      errors.push(args[0]);
      return;
    }
    realNextTick(fn, ...args);
  }) as typeof process.nextTick);
  return errors;
}
