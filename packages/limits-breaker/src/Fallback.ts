import type { Circuit } from './circuit/Circuit.js';
import type { FallbackCause, FallbackReason, GuardOptions } from './types.js';

/**
 * @internal How the guard answers a call that did not succeed: the `fallback` event (when someone
 * listens), then the `fallback` option's result, or the error itself without one. A fallback that
 * returns is counted in the circuit's `fallbacks` (as opossum's own fallback is).
 */
export class Fallback<A extends unknown[], R> {
  readonly #fallback: GuardOptions<A, R>['fallback'];
  readonly #circuit: Circuit;
  readonly #listened: () => boolean;
  readonly #emit: (cause: FallbackCause) => void;

  /**
   * @param listened - whether someone listens to the guard's `fallback` event.
   * @param emit - emits it (listener errors isolated).
   */
  constructor(
    fallback: GuardOptions<A, R>['fallback'],
    circuit: Circuit,
    listened: () => boolean,
    emit: (cause: FallbackCause) => void,
  ) {
    this.#fallback = fallback;
    this.#circuit = circuit;
    this.#listened = listened;
    this.#emit = emit;
  }

  /** The caller's answer for a call that failed with `error` for `reason`. */
  answer(reason: FallbackReason, args: A, error: unknown): Promise<R> {
    const fallback = this.#fallback;
    const listened = this.#listened();
    if (fallback === undefined && !listened) return Promise.reject(error);
    const cause = { reason, error } as FallbackCause;
    if (listened) this.#emit(cause);
    if (fallback === undefined) return Promise.reject(error);
    let result: R | PromiseLike<R>;
    try {
      result = fallback(cause, ...args);
    } catch (fallbackError) {
      return Promise.reject(fallbackError);
    }
    this.#circuit.fallback(result, error);
    return Promise.resolve(result);
  }
}
