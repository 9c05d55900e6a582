import type { Limiter } from 'limits-core';

/** What the guard needs of an emitter (its own, or the limiter) to report an error on it. */
interface ErrorEmitter {
  listenerCount(event: 'error'): number;
  emit(event: 'error', error: unknown): boolean;
}

/**
 * @internal Reports an error a listener threw: on `guard`'s `error` event; without a listener there,
 * on the limiter's `error` event; without one there either (or when an `error` listener throws
 * itself), rethrown on a microtask — the limiter's rule for its own listeners.
 */
export function reportListenerError(guard: ErrorEmitter, limiter: Limiter, error: unknown): void {
  const target: ErrorEmitter | undefined =
    guard.listenerCount('error') > 0
      ? guard
      : limiter.listenerCount('error') > 0
        ? (limiter as unknown as ErrorEmitter)
        : undefined;
  if (target !== undefined) {
    try {
      target.emit('error', error);
      return;
    } catch {
      // An error listener that throws: rethrown below, like any listener error nobody handles.
    }
  }
  queueMicrotask(() => {
    throw error;
  });
}

/**
 * @internal Forwards the limiter's `event` to `emit`; returns the function that stops forwarding.
 */
export function forwardLimiterEvent(
  limiter: Limiter,
  event: 'limit' | 'reject' | 'release',
  emit: (payload: unknown) => void,
): () => void {
  const source = limiter as unknown as {
    on(e: string, f: (p: unknown) => void): unknown;
    off(e: string, f: (p: unknown) => void): unknown;
  };
  source.on(event, emit);
  return () => source.off(event, emit);
}
