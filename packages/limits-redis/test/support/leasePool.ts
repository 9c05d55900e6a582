/** Helpers for the pool's tests against a real Redis. */
import { getEventListeners } from 'node:events';

/** Resolves once `probe()` is true, checking every 10 ms; rejects after `timeoutMs`. */
export async function waitFor(
  what: string,
  probe: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Listeners an AbortSignal still holds. */
export function abortListeners(signal: AbortSignal): number {
  return getEventListeners(signal, 'abort').length;
}

/** Timers and sockets this process holds (the Node resources a leak would leave). */
export function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
}

/** A promise with its resolve, for tasks the test ends by hand. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** A clock whose time moves only through `advance` (timers fire in order, microtasks flushed between). */
export class FakeClock {
  #now = 0;
  #next = 1;
  #timers: { id: number; at: number; fn: () => void }[] = [];

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { id: this.#next++, at: this.#now + Math.max(0, ms), fn };
    this.#timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle);
  }

  /** Timers not yet fired, by due time from now. */
  get pending(): number[] {
    return this.#timers.map((t) => t.at - this.#now).sort((a, b) => a - b);
  }

  async advance(ms: number): Promise<void> {
    const end = this.#now + ms;
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = due.at;
      due.fn();
      await new Promise((r) => setImmediate(r));
    }
    this.#now = end;
  }
}
