import type { Clock } from 'limits-core';

/**
 * @internal One `limitFetch` call's deadline and signals: the caller's signal (from `init` or the
 * `Request`, merged with the request context's, which aborts when the inbound client leaves), our
 * own controller (aborted at `timeoutMs`, or when a body is not consumed within `bodyTimeoutMs`),
 * and the signal given to fetch, which either aborts. Without a `timeoutMs` or a body timeout the
 * caller's signal is passed on as is.
 */
export class FetchDeadline {
  /** The caller's own signal (merged with the request context's), if any. */
  readonly callerSignal: AbortSignal | undefined;
  /** The signal every attempt's fetch gets. */
  readonly signal: AbortSignal | undefined;
  /** The deadline on the clock (ms), or `Infinity`. */
  readonly at: number;
  readonly #clock: Clock;
  readonly #controller: AbortController | undefined;
  #timer: unknown = undefined;
  #unlink: (() => void) | undefined = undefined;
  #unlinkContext: (() => void) | undefined = undefined;

  /**
   * @param contextSignal - the request context's signal, when the call carries one.
   * @param own - whether the call needs a controller of its own (a `bodyTimeoutMs`), even without
   *   a `timeoutMs`.
   */
  constructor(
    clock: Clock,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    contextSignal: AbortSignal | undefined,
    own: boolean,
  ) {
    this.#clock = clock;
    let callerSignal = signal;
    if (contextSignal !== undefined) {
      // A signal of the call's own, even without the caller's: fetch adds a listener to the signal
      // it gets and removes it only when its request is collected, and the context's signal lives
      // as long as the inbound request, across all of its calls.
      const onUnlink = (unlink: () => void) => {
        this.#unlinkContext = unlink;
      };
      callerSignal =
        signal === undefined
          ? followSignal(contextSignal, onUnlink)
          : anySignal(signal, contextSignal, onUnlink);
    }
    this.callerSignal = callerSignal;
    const timed = timeoutMs !== Infinity;
    this.at = timed ? clock.now() + timeoutMs : Infinity;
    if (!timed && !own) {
      this.#controller = undefined;
      this.signal = callerSignal;
      return;
    }
    const controller = new AbortController();
    this.#controller = controller;
    // (Merged first: a caller "signal" that is not one throws here, before any timer exists.)
    this.signal = callerSignal === undefined ? controller.signal : this.#merge(callerSignal);
    if (timed) {
      this.#timer = clock.setTimeout(() => {
        this.#timer = undefined;
        controller.abort(
          new DOMException(
            `limits: request timed out after ${Math.round(timeoutMs)} ms`,
            'TimeoutError',
          ),
        );
      }, timeoutMs);
    }
  }

  /** Whether our own controller aborted (the `timeoutMs` or a body timeout ran out). */
  get expired(): boolean {
    return this.#controller?.signal.aborted === true;
  }

  /** Ms left before the deadline (`Infinity` without one). */
  remainingMs(): number {
    return this.at === Infinity ? Infinity : this.at - this.#clock.now();
  }

  /** Aborts the call with `reason` (a body timeout), unless it already aborted. */
  abort(reason: unknown): void {
    this.#controller?.abort(reason);
  }

  /** The call is over: the deadline's timer is cleared and the caller's signal unlinked. */
  end(): void {
    if (this.#timer !== undefined) {
      this.#clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#unlink?.();
    this.#unlink = undefined;
    this.#unlinkContext?.();
    this.#unlinkContext = undefined;
  }

  /** The caller's signal and ours, either aborting (with the first reason). */
  #merge(callerSignal: AbortSignal): AbortSignal {
    const own = (this.#controller as AbortController).signal;
    return anySignal(callerSignal, own, (unlink) => {
      this.#unlink = unlink;
    });
  }
}

/**
 * A signal that aborts when `a` or `b` does, with its reason: `AbortSignal.any` (Node ≥ 20.3), or a
 * controller fed by listeners that `onUnlink` receives a function to remove.
 */
export function anySignal(
  a: AbortSignal,
  b: AbortSignal,
  onUnlink?: (unlink: () => void) => void,
): AbortSignal {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any([a, b]);
  const controller = new AbortController();
  if (a.aborted || b.aborted) {
    controller.abort(a.aborted ? a.reason : b.reason);
    return controller.signal;
  }
  const onA = () => controller.abort(a.reason);
  const onB = () => controller.abort(b.reason);
  a.addEventListener('abort', onA, { once: true });
  b.addEventListener('abort', onB, { once: true });
  onUnlink?.(() => {
    a.removeEventListener('abort', onA);
    b.removeEventListener('abort', onB);
  });
  return controller.signal;
}

/**
 * A signal that aborts when `source` does, with its reason: `AbortSignal.any` (Node ≥ 20.3), or a
 * controller fed by a listener that `onUnlink` receives a function to remove.
 */
function followSignal(source: AbortSignal, onUnlink: (unlink: () => void) => void): AbortSignal {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any([source]);
  const controller = new AbortController();
  if (source.aborted) {
    controller.abort(source.reason);
    return controller.signal;
  }
  const onAbort = () => controller.abort(source.reason);
  source.addEventListener('abort', onAbort, { once: true });
  onUnlink(() => source.removeEventListener('abort', onAbort));
  return controller.signal;
}
