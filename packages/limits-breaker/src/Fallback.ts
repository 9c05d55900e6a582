import type { EventEmitter } from 'eventemitter3';
import type { OpossumCircuit } from './OpossumCircuit.js';
import type { FallbackCause, FallbackReason, GuardEvents } from './types.js';

/** The `fallback` option: `fallback(cause, ...args)`. */
export type FallbackFunction = (cause: FallbackCause, ...args: unknown[]) => unknown;

/**
 * How the guard answers a call that did not succeed: the `fallback` event (when someone listens),
 * then the `fallback` option's result, or the error itself without one. A fallback that returns is
 * counted in the circuit's `fallbacks` (as opossum's own fallback is).
 */
export class Fallback {
  readonly #fallback: FallbackFunction | undefined;
  readonly #circuit: OpossumCircuit;
  readonly #events: EventEmitter<GuardEvents>;

  /**
   * @param events - the guard, whose `fallback` event is emitted (its `emit` reports a listener's
   *   error instead of throwing it).
   */
  constructor(
    fallback: FallbackFunction | undefined,
    circuit: OpossumCircuit,
    events: EventEmitter<GuardEvents>,
  ) {
    this.#fallback = fallback;
    this.#circuit = circuit;
    this.#events = events;
  }

  /** The caller's answer for a call that failed with `error` for `reason`. */
  answer(reason: FallbackReason, args: unknown[], error: unknown): Promise<unknown> {
    const fallback = this.#fallback;
    const listened = this.#events.listenerCount('fallback') > 0;
    if (fallback === undefined && !listened) return Promise.reject(error);
    const cause = { reason, error } as FallbackCause;
    if (listened) this.#events.emit('fallback', cause);
    if (fallback === undefined) return Promise.reject(error);
    let result: unknown;
    try {
      result = fallback(cause, ...args);
    } catch (fallbackError) {
      return Promise.reject(fallbackError);
    }
    this.#circuit.fallback(result, error);
    return Promise.resolve(result);
  }
}
