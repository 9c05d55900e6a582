import type { Clock } from '../internal/clock.js';
import { checkKeys, checkNumber } from '../internal/validate.js';
import type { CloseOptions, CloseResult } from './options.js';

/** A `close()` caller waiting for the permits in flight. */
interface CloseWaiter {
  resolve: (result: CloseResult) => void;
  timer: unknown;
}

/**
 * `close()`'s `timeoutMs` (`Infinity` when not given).
 * @throws TypeError/RangeError for bad options.
 */
export function closeTimeout(options: CloseOptions | undefined): number {
  if (options === undefined) return Infinity;
  checkKeys('close', options, ['timeoutMs']);
  return checkNumber('timeoutMs', options.timeoutMs, Infinity, { min: 0, allowInfinity: true });
}

/**
 * @internal The `close()` callers of a limiter that wait for its permits in flight: each resolves
 * when the last permit is released ({@link finish}) or when its own `timeoutMs` passes on the
 * limiter's clock (with what was still held then).
 */
export class CloseWaiters {
  readonly #clock: Clock;
  readonly #drained: () => void;
  #waiters: CloseWaiter[] = [];

  /** @param drained - the closed limiter holds no permit any more (stops its background work). */
  constructor(clock: Clock, drained: () => void) {
    this.#clock = clock;
    this.#drained = drained;
  }

  /**
   * Resolves with `held()` at once when it says `drained`, else at {@link finish} (drained) or
   * after `timeoutMs` (with what `held()` says then).
   */
  wait(timeoutMs: number, held: () => CloseResult): Promise<CloseResult> {
    const now = held();
    if (now.drained) {
      this.#drained();
      return Promise.resolve(now);
    }
    return new Promise((resolve) => {
      const waiter: CloseWaiter = { resolve, timer: undefined };
      this.#waiters.push(waiter);
      if (timeoutMs === Infinity) return;
      waiter.timer = this.#clock.setTimeout(() => {
        waiter.timer = undefined;
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) this.#waiters.splice(i, 1);
        resolve(held());
      }, timeoutMs);
      // The system clock's timers do not hold the process open; a bounded close should (else
      // `await limiter.close({ timeoutMs })` at the top level ends the process before it resolves).
      const handle = waiter.timer as { ref?: () => unknown } | null;
      if (typeof handle === 'object' && handle !== null && typeof handle.ref === 'function') {
        handle.ref();
      }
    });
  }

  /** Every permit is back: resolves every waiting caller with `drained: true`. */
  finish(): void {
    this.#drained();
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) {
      if (w.timer !== undefined) this.#clock.clearTimeout(w.timer);
      w.resolve({ drained: true, permits: 0, inflight: 0 });
    }
  }
}
