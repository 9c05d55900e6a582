import type { EventEmitter } from 'eventemitter3';
import type { LimiterEvents } from './events.js';

/**
 * @internal The limiter's event plumbing (also used by other emitters of limits-core that have an
 * `error` event, e.g. `RetryPolicy`), and the one place that knows eventemitter3's internals.
 * Listener errors never reach the emitter's caller: they go to the `error` event, else are rethrown
 * on a microtask.
 */
type Emitter = EventEmitter<LimiterEvents>;
type Listeners = Partial<Record<keyof LimiterEvents, unknown>>;
/** Any other event map of limits-core: it has an `error` event for listener errors. */
interface ErrorEvents {
  error: (error: unknown) => void;
}
/** The payload of event `E` of the event map `M` (its listener's first parameter). */
type Payload<M, E extends keyof M> = M[E] extends (payload: infer P) => void ? P : never;

/**
 * eventemitter3's listener table: `listeners(limiter).release !== undefined` tells whether anyone
 * listens, with a property read instead of a `listenerCount` call (this runs several times per call).
 * A plain function, not a private getter: V8 (Node 20) calls into its runtime for every private
 * accessor read.
 */
export function listeners(emitter: Emitter): Listeners;
export function listeners<M extends ErrorEvents>(
  emitter: EventEmitter<M>,
): Partial<Record<keyof M, unknown>>;
export function listeners(emitter: object): Listeners {
  return (emitter as { _events: Listeners })._events;
}

/** Emits `event`; a listener that throws is reported with {@link reportListenerError}. */
export function emitSafely<E extends keyof LimiterEvents>(
  emitter: Emitter,
  event: E,
  payload: Parameters<LimiterEvents[E]>[0],
): void;
export function emitSafely<M extends ErrorEvents, E extends keyof M>(
  emitter: EventEmitter<M>,
  event: E,
  payload: Payload<M, E>,
): void;
export function emitSafely(emitter: Emitter, event: keyof LimiterEvents, payload: unknown): void {
  try {
    (emitter.emit as (e: string, p: unknown) => boolean)(event, payload);
  } catch (error) {
    reportListenerError(emitter, error);
  }
}

/** Reports an error of a listener (or a plug-in): the `error` event, else a throw on a microtask. */
export function reportListenerError(emitter: Emitter, error: unknown): void;
export function reportListenerError<M extends ErrorEvents>(
  emitter: EventEmitter<M>,
  error: unknown,
): void;
export function reportListenerError(emitter: Emitter, error: unknown): void {
  if (listeners(emitter).error !== undefined) {
    try {
      emitter.emit('error', error);
      return;
    } catch {
      // An error listener that throws is reported like any other listener error.
    }
  }
  queueMicrotask(() => {
    throw error;
  });
}
