/** Something the limiter registers as an abort listener (a queued waiter is its own listener object). */
export type AbortListener = ((event: Event) => void) | { handleEvent(event: Event): void };

/**
 * @internal The signal the calls a guard queues in one circuit episode wait with: a genuine
 * `AbortSignal` (the limiter takes it as any other) whose abort listeners are not kept by Node's
 * EventTarget but handed to `onListener` — the guard files each with the call being queued, in its
 * own list of queued calls, and on opening calls them itself ({@link callListener}). Node's
 * `addEventListener` scans every listener already added (a duplicate check): 10,000 calls queued on
 * one native signal cost over 12 µs each, growing with the queue, and a `Set` in its place still
 * cost 400 ns per call (identity hashes); a field on the call costs nothing. Removing is a no-op: a
 * queued call leaves the limiter's queue only through the guard's `_granted`/`_refused` (the
 * `AcquireSink` contract), which take it off the guard's list.
 */
export class ShedSignal {
  readonly #controller = new AbortController();

  constructor(onListener: (listener: AbortListener) => void) {
    const signal = this.#controller.signal;
    // Own properties of this one signal object: the prototype (and every other signal) is untouched.
    Object.defineProperty(signal, 'addEventListener', {
      configurable: true,
      value(type: string, listener: AbortListener | null | undefined) {
        if (type === 'abort' && listener != null && !signal.aborted) onListener(listener);
      },
    });
    Object.defineProperty(signal, 'removeEventListener', { configurable: true, value() {} });
  }

  /** The signal to pass with queued acquires. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /**
   * Marks the signal aborted with `reason` (what the limiter reads as the waiters' abort cause); the
   * caller then calls the listeners it was handed, with {@link callListener}.
   */
  abort(reason: unknown): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
  }

  /**
   * Calls `listener` as the native dispatch would. A listener that throws does not stop the caller's
   * loop: its error is re-thrown on the next tick, as Node reports an error thrown by an EventTarget
   * listener.
   */
  callListener(listener: AbortListener, event: Event): void {
    try {
      if (typeof listener === 'function') listener.call(this.#controller.signal, event);
      else listener.handleEvent(event);
    } catch (error) {
      process.nextTick(() => {
        throw error;
      });
    }
  }
}
