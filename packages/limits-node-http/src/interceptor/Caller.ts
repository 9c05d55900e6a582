import type { DispatchController } from './dispatcher.js';

/** What a {@link LimitController} tells about the caller's abort. */
export interface CallerAbortTarget {
  /** The caller aborted its request (first call only). */
  callerAborted(reason: Error): void;
}

/**
 * The controller the caller's handler holds for the whole request, as undici's `RetryController`:
 * a request may wait for a permit before any connection controller exists, so the caller gets
 * this stable one, which forwards `pause`/`resume` to the current connection's controller (applying
 * a pause made before it existed) and reports an abort to the limit handler, which takes a queued
 * request out of the limiter's queue or aborts the connection.
 */
export class LimitController implements DispatchController {
  readonly #owner: CallerAbortTarget;
  #target: DispatchController | undefined = undefined;
  #paused = false;
  #reason: Error | null = null;

  constructor(owner: CallerAbortTarget) {
    this.#owner = owner;
  }

  /** Points the controller at a connection's controller (each dispatch has its own). */
  set target(target: DispatchController) {
    this.#target = target;
    if (this.#paused) target.pause();
  }

  get aborted(): boolean {
    return this.#reason !== null || (this.#target?.aborted ?? false);
  }

  get paused(): boolean {
    return this.#paused || (this.#target?.paused ?? false);
  }

  /** Whether the response is a guard fallback's answer (see `FallbackReply`). */
  get fallback(): boolean {
    return (this.#target as { fallback?: unknown } | undefined)?.fallback === true;
  }

  /** The caller paused (a pause of the connection's own controller aside). */
  get pausedByCaller(): boolean {
    return this.#paused;
  }

  get reason(): Error | null {
    return this.#reason ?? this.#target?.reason ?? null;
  }

  /** undici's raw header list of the current response, when the connection's controller has one. */
  get rawHeaders(): unknown {
    return (this.#target as { rawHeaders?: unknown } | undefined)?.rawHeaders ?? null;
  }

  /** undici's raw trailer list of the current response, when the connection's controller has one. */
  get rawTrailers(): unknown {
    return (this.#target as { rawTrailers?: unknown } | undefined)?.rawTrailers ?? null;
  }

  abort(reason: Error): void {
    if (this.#reason !== null) return;
    // undici's callers always give a reason; a bare abort() gets fetch's.
    this.#reason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    this.#owner.callerAborted(this.#reason);
  }

  pause(): void {
    this.#paused = true;
    this.#target?.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#target?.resume();
  }
}
