import type { DispatchController, DispatchHandler, InterceptorHeaders } from './dispatcher.js';
import type { FallbackReply } from './FallbackReply.js';

/**
 * The caller of one intercepted request: the handler it gave `dispatch`, answered exactly once, and
 * the one controller it holds for the whole request, as undici's `RetryController`. A request may
 * wait for a permit before any connection exists, and a retried request has a connection per
 * attempt, so the caller gets this stable controller: it forwards `pause`/`resume` to the current
 * connection's controller (`target`, a pause made before it existed applied when it comes) and
 * hands the caller's `abort` to the request (`onAbort`), which takes a queued request out of its
 * queue or aborts the connection.
 */
export class Caller implements DispatchController {
  readonly #handler: DispatchHandler;
  readonly #onAbort: (reason: Error) => void;
  #target: DispatchController | undefined = undefined;
  #paused = false;
  #reason: Error | null = null;
  /** The handler got `onRequestStart`. */
  #started = false;
  /** The handler got its final callback (`onResponseEnd`, `onResponseError`, an upgrade). */
  #done = false;
  /** A signal that aborts the request as the caller would (the request context's), until done. */
  #signal: AbortSignal | undefined = undefined;

  /**
   * @param handler - the caller's handler.
   * @param onAbort - what the request does when the caller aborts (called once).
   */
  constructor(handler: DispatchHandler, onAbort: (reason: Error) => void) {
    this.#handler = handler;
    this.#onAbort = onAbort;
  }

  /** Whether the caller got its final callback: nothing more reaches it. */
  get done(): boolean {
    return this.#done;
  }

  /**
   * Aborts the request as the caller would when `signal` aborts (the request context's: the
   * inbound client left), until the caller got its final callback.
   */
  abortWith(signal: AbortSignal): void {
    this.#signal = signal;
    signal.addEventListener('abort', this);
  }

  /** `signal` (see {@link abortWith}) aborted. */
  handleEvent(): void {
    this.abort((this.#signal as AbortSignal).reason);
  }

  /** The caller got its final callback: nothing more reaches it, and no signal is watched. */
  #finish(): void {
    this.#done = true;
    const signal = this.#signal;
    if (signal !== undefined) {
      this.#signal = undefined;
      signal.removeEventListener('abort', this);
    }
  }

  // The caller's handler, answered once.

  /** `onRequestStart`, once (a retried request starts once for its caller). */
  start(context: unknown): void {
    if (this.#started) return;
    this.#started = true;
    this.#handler.onRequestStart?.(this, context);
  }

  responseStart(statusCode: number, headers: InterceptorHeaders, statusMessage?: string): void {
    if (!this.#done) this.#handler.onResponseStart?.(this, statusCode, headers, statusMessage);
  }

  data(chunk: Uint8Array): void {
    if (!this.#done) this.#handler.onResponseData?.(this, chunk);
  }

  end(trailers: InterceptorHeaders): void {
    if (this.#done) return;
    this.#finish();
    this.#handler.onResponseEnd?.(this, trailers);
  }

  /** `onResponseError`: the request failed, was refused or timed out. */
  fail(error: Error): void {
    if (this.#done) return;
    this.#finish();
    this.#handler.onResponseError?.(this, error);
  }

  /** The connection was upgraded: it belongs to the caller from here on. */
  upgrade(statusCode: number, headers: InterceptorHeaders, socket: unknown): void {
    if (this.#done) return;
    this.#finish();
    this.#handler.onRequestUpgrade?.(this, statusCode, headers, socket);
  }

  /** undici 8 reports the request body's progress; passed on. */
  bodySent(args: unknown[]): void {
    (this.#handler as { onBodySent?: (...a: unknown[]) => void }).onBodySent?.(...args);
  }

  /** undici 8 reports that the request was sent; passed on. */
  requestSent(): void {
    (this.#handler as { onRequestSent?: () => void }).onRequestSent?.();
  }

  /**
   * A guard fallback's answer goes to the caller instead of the request's: played by `reply` (the
   * controller's target from now on); a late callback of the request is not passed on.
   */
  playFallback(reply: FallbackReply): void {
    const start = !this.#started;
    this.#finish();
    this.target = reply;
    reply.play(this.#handler, this, start);
  }

  // The controller the caller holds.

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
    this.#onAbort(this.#reason);
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
