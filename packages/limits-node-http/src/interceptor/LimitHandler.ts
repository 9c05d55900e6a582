import type {
  LimitExceededError,
  Limiter,
  Outcome,
  Permit,
  PermitRequest,
  QueueTicket,
} from 'limits-core';
import type { LimitFetchGuard } from '../shared/httpGuard.js';
import { classifyError, classifyStatus, releaseWith, userOutcome } from '../shared/outcome.js';
import { parseRetryAfter } from '../shared/retryAfter.js';
import { type CallerAbortTarget, LimitController } from './Caller.js';
import type {
  Dispatch,
  DispatchController,
  DispatchHandler,
  DispatchOptions,
  InterceptorHeaders,
} from './dispatcher.js';
import { FallbackReply } from './FallbackReply.js';
import { GuardCall, type GuardCallOwner } from './GuardCall.js';
import type { InterceptedCall, InterceptorConfig } from './options.js';

/**
 * One request through `limitInterceptor`, written the way undici's own handlers are (its retry and
 * redirect handlers): the state of the call lives here, between the caller's handler and the next
 * dispatcher. It waits for a permit (as the limiter's {@link PermitRequest}: no promise, no closure),
 * dispatches when one is granted, classifies the response, and releases the permit exactly once —
 * when the body ends, errors or is aborted (or at the headers with `release: 'headers'`).
 *
 * States, in order: waiting for a permit (`#ticket` set), dispatched (`#permit` set), connected
 * (`#connection` set), response started (`#statusCode` ≥ 200), and `#done` once the caller got its
 * final callback. The permit can outlive `#done`: a request the time budget answered early keeps
 * its permit until undici reports that it really ended.
 *
 * With a `guard` (`startGuarded`), a {@link GuardCall} is both the queue ticket and the permit: the
 * guard's action dispatches through `granted`, the breaker is judged at the headers, and a
 * fallback's answer is played to this handler by a {@link FallbackReply} standing in for undici.
 */
export class LimitHandler
  implements DispatchHandler, PermitRequest, CallerAbortTarget, GuardCallOwner
{
  readonly #config: InterceptorConfig;
  readonly #dispatch: Dispatch;
  readonly #opts: DispatchOptions;
  readonly #handler: DispatchHandler;
  readonly #origin: string;
  readonly #controller: LimitController;
  #permit: Permit | GuardCall | undefined = undefined;
  #ticket: QueueTicket | GuardCall | undefined = undefined;
  #connection: DispatchController | undefined = undefined;
  #deadline = Infinity;
  /** When the body must have ended (`bodyTimeoutMs` after the headers), when earlier than `#deadline`. */
  #bodyDeadline = Infinity;
  #timer: unknown = undefined;
  /** The caller's handler got `onRequestStart`. */
  #started = false;
  /** The caller's handler got its final callback (`onResponseEnd`, `onResponseError`, an upgrade). */
  #done = false;
  #statusCode = 0;
  #headers: InterceptorHeaders | undefined = undefined;
  /** The final response's outcome, reported when the permit goes back. */
  #outcome: Outcome = 'success';
  #callerAbort: Error | undefined = undefined;
  #timeout: Error | undefined = undefined;
  #timeoutOutcome: Outcome = 'dropped';
  /** Why the guard aborted the running request (its timeout, its shutdown): it answers the caller. */
  #guardAbort: Error | undefined = undefined;
  /** A guard fallback's answer, playing to the caller. */
  #reply: FallbackReply | undefined = undefined;

  constructor(
    config: InterceptorConfig,
    dispatch: Dispatch,
    opts: DispatchOptions,
    handler: DispatchHandler,
    origin: string,
  ) {
    this.#config = config;
    this.#dispatch = dispatch;
    this.#opts = opts;
    this.#handler = handler;
    this.#origin = origin;
    this.#controller = new LimitController(this);
  }

  /**
   * Asks `limiter` for a permit and dispatches at once when one is free; otherwise the request waits
   * in the limiter's queue and is dispatched when granted.
   * @param deadline - the call's deadline on the config's clock, for an attempt of a retried call
   *   (default: `timeoutMs` from now).
   * @returns what the next dispatcher returned, or `true` while the request waits (or was refused).
   */
  start(limiter: Limiter, deadline?: number): boolean {
    const config = this.#config;
    let acquireOptions = config.acquireOptions;
    if (deadline !== undefined) {
      // A retried call's attempt: what is left of the call's budget (`Infinity`: none).
      this.#deadline = deadline;
      if (deadline !== Infinity) acquireOptions = { timeoutMs: deadline - config.clock.now() };
    } else if (acquireOptions !== undefined) this.#deadline = config.clock.now() + config.timeoutMs;
    const permit = limiter.acquireWith(this, acquireOptions);
    if (permit !== undefined) return this.#send(permit);
    // Queued (a refusal at admission already answered the caller): the caller gets its controller
    // now, so that its abort takes the request out of the limiter's queue.
    if (this.#ticket !== undefined) this.#startCaller(null);
    return true;
  }

  /**
   * Fires `guard` for the request, dispatched when the guard's action runs; while it waits, the
   * caller's abort or the time budget (running from now) answers the caller at once.
   * @param deadline - as for {@link start}. @returns `true` (undici's "not busy").
   */
  startGuarded(guard: LimitFetchGuard, deadline?: number): boolean {
    const { clock, timeoutMs } = this.#config;
    this.#deadline = deadline ?? (timeoutMs === Infinity ? Infinity : clock.now() + timeoutMs);
    if (this.#deadline !== Infinity) {
      const left = Math.max(0, this.#deadline - clock.now());
      this.#timer = clock.setTimeout(() => this.#onTimeout(), left);
    }
    const call = new GuardCall(this);
    this.#ticket = call;
    call.fire(guard);
    // Still waiting for the guard (the action did not run): the caller's controller now.
    if (this.#ticket !== undefined && !this.#done) this.#startCaller(null);
    return true;
  }

  /** @internal The guard answered with its fallback's value: played to the caller as a response. */
  fallback(value: unknown): void {
    this.#ticket = undefined;
    let reply: FallbackReply;
    try {
      reply = new FallbackReply(value);
    } catch (error) {
      this.#finish(error as Error);
      return;
    }
    if (this.#done) {
      reply.abort(new DOMException('limits: the caller was answered already', 'AbortError'));
      return;
    }
    // The caller belongs to the reply now (a late callback of the request is not passed on).
    this.#clearTimer();
    this.#done = true;
    this.#reply = reply;
    this.#controller.target = reply;
    reply.play(this.#handler, this.#controller, !this.#started);
  }

  /** @internal The guard answered with the action's settlement (a guard abort reaches the caller). */
  settled(): void {
    if (this.#guardAbort !== undefined && this.#statusCode === 0) this.#finish(this.#guardAbort);
  }

  /** @internal The guard aborted the running request (its `timeoutMs`, or `shutdown()`). */
  guardAborted(reason: Error): void {
    if (this.#done) return;
    this.#guardAbort = reason;
    this.#connection?.abort(reason);
  }

  /** Answers the caller with `error` without sending anything (the request was not admitted). */
  fail(error: Error): boolean {
    this.#finish(error);
    return true;
  }

  // PermitRequest: how the wait in the limiter's queue ends.

  /** @internal The limiter queued the request. */
  queued(ticket: QueueTicket): void {
    this.#ticket = ticket;
  }

  /** @internal The limiter (or the guard's action) granted the queued request: dispatch it now. */
  granted(permit: Permit | GuardCall): void {
    this.#ticket = undefined;
    this.#send(permit);
  }

  /**
   * @internal The limiter refused the request (at admission or while queued), or the guard did (a
   * `CircuitOpenError`, …), or its wait was cancelled: it is never sent.
   */
  refused(error: LimitExceededError | Error): void {
    this.#ticket = undefined;
    this.#clearTimer();
    // A refusal because the caller aborted answers with the caller's own reason, as undici does.
    this.#finish(this.#callerAbort ?? error);
  }

  // CallerAbortTarget: the caller aborted through its controller.

  /** @internal */
  callerAborted(reason: Error): void {
    this.#reply?.abort(reason);
    if (this.#done) return;
    this.#callerAbort = reason;
    if (this.#ticket !== undefined) {
      // Leaves the queue at once: `refused` answers the caller.
      this.#ticket.cancel(reason);
      return;
    }
    // Not yet connected: aborted in onRequestStart, as undici's own handlers do.
    this.#connection?.abort(reason);
  }

  // DispatchHandler: undici's callbacks for the dispatched request.

  onRequestStart(controller: DispatchController, context: unknown): void {
    this.#connection = controller;
    // (A guard fallback already playing keeps the caller's controller: this request is aborted.)
    if (this.#reply === undefined) this.#controller.target = controller;
    const stop = this.#timeout ?? this.#callerAbort ?? this.#guardAbort;
    if (stop !== undefined) {
      controller.abort(stop);
      return;
    }
    if (!this.#started) this.#startCaller(context);
  }

  onRequestUpgrade(
    _controller: DispatchController,
    statusCode: number,
    headers: InterceptorHeaders,
    socket: unknown,
  ): void {
    // An upgraded connection belongs to the caller from here on: the request is over.
    this.#statusCode = statusCode;
    this.#clearTimer();
    this.#release('success');
    if (this.#done) return;
    this.#done = true;
    this.#handler.onRequestUpgrade?.(this.#controller, statusCode, headers, socket);
  }

  onResponseStart(
    _controller: DispatchController,
    statusCode: number,
    headers: InterceptorHeaders,
    statusMessage?: string,
  ): void {
    if (this.#done) return;
    if (statusCode >= 200) {
      // Interim 1xx responses (undici 8 passes them on) neither end nor classify the request.
      this.#statusCode = statusCode;
      this.#headers = headers;
      this.#outcome = this.#decide(undefined);
      if (statusCode === 429 || statusCode === 503)
        reportRetryAfter(this.#config, this.#origin, this.#opts.method, statusCode, headers);
      if (this.#config.releaseAtHeaders) {
        this.#clearTimer();
        this.#release(this.#outcome);
      } else {
        // A guard's breaker is judged now; its permit stays held while the body streams.
        if (this.#permit instanceof GuardCall) this.#permit.judge(this.#outcome);
        if (this.#config.bodyTimeoutMs !== Infinity) this.#armBodyTimeout();
      }
    }
    this.#handler.onResponseStart?.(this.#controller, statusCode, headers, statusMessage);
  }

  onResponseData(_controller: DispatchController, chunk: Uint8Array): void {
    if (!this.#done) this.#handler.onResponseData?.(this.#controller, chunk);
  }

  onResponseEnd(_controller: DispatchController, trailers: InterceptorHeaders): void {
    this.#clearTimer();
    this.#release(this.#outcome);
    if (this.#done) return;
    this.#done = true;
    this.#handler.onResponseEnd?.(this.#controller, trailers);
  }

  onResponseError(controller: DispatchController | null | undefined, error: Error): void {
    this.#clearTimer();
    let outcome: Outcome;
    if (this.#timeout !== undefined) outcome = this.#timeoutOutcome;
    else if (this.#callerAbort !== undefined || controller?.aborted === true) {
      // The caller gave up (through us, or through undici's own queue-abort hook, which aborts the
      // connection's controller directly): that says nothing about the downstream, unless the
      // response had already said it was overloaded or broken.
      outcome = this.#statusCode !== 0 && this.#outcome !== 'success' ? this.#outcome : 'ignore';
    } else outcome = this.#decide(error);
    this.#release(outcome);
    // The guard aborted a request before its headers: the guard answers (a fallback, its error).
    if (this.#guardAbort !== undefined && this.#statusCode === 0) return;
    this.#finish(error);
  }

  /** undici 8 reports the request body's progress; passed on. */
  onBodySent(...args: unknown[]): void {
    (this.#handler as { onBodySent?: (...a: unknown[]) => void }).onBodySent?.(...args);
  }

  /** undici 8 reports that the request was sent; passed on. */
  onRequestSent(): void {
    (this.#handler as { onRequestSent?: () => void }).onRequestSent?.();
  }

  #send(permit: Permit | GuardCall): boolean {
    this.#permit = permit;
    if (this.#deadline !== Infinity && this.#timer === undefined) {
      const left = this.#deadline - this.#config.clock.now();
      this.#timer = this.#config.clock.setTimeout(() => this.#onTimeout(), Math.max(0, left));
    }
    try {
      return this.#dispatch(this.#opts, this);
    } catch (error) {
      // A dispatcher that throws instead of calling onResponseError: the request never started.
      this.onResponseError(undefined, error as Error);
      return true;
    }
  }

  #startCaller(context: unknown): void {
    this.#started = true;
    this.#handler.onRequestStart?.(this.#controller, context);
  }

  #armBodyTimeout(): void {
    const { clock, bodyTimeoutMs } = this.#config;
    const at = clock.now() + bodyTimeoutMs;
    if (at >= this.#deadline) return;
    this.#clearTimer();
    this.#bodyDeadline = at;
    this.#timer = clock.setTimeout(() => this.#onTimeout(), bodyTimeoutMs);
  }

  #onTimeout(): void {
    this.#timer = undefined;
    if (this.#done || (this.#permit === undefined && !(this.#ticket instanceof GuardCall))) return;
    const { timeoutMs, bodyTimeoutMs } = this.#config;
    const request = `${this.#opts.method} ${this.#origin}${this.#opts.path}`;
    const body = this.#bodyDeadline < this.#deadline;
    const error = new DOMException(
      body
        ? `limits: the body of ${request} did not end within ${bodyTimeoutMs} ms of its headers (bodyTimeoutMs)`
        : `limits: ${request} did not finish within its time budget of ${timeoutMs} ms (timeoutMs)`,
      'TimeoutError',
    );
    // A body the caller stopped reading (undici paused for it) says nothing about the downstream;
    // one the downstream sends too slowly is congestion.
    if (body && this.#controller.pausedByCaller) this.#timeoutOutcome = 'ignore';
    this.#timeout = error;
    if (this.#permit === undefined) {
      // Still waiting for a guard's permit: answered now, and never sent when its turn comes.
      (this.#ticket as GuardCall).cancel(error);
      return;
    }
    if (this.#connection !== undefined) {
      this.#connection.abort(error);
      return;
    }
    // Dispatched but still waiting for a connection inside undici: the caller is answered now; the
    // request is aborted when it gets its connection, and keeps its permit until then.
    this.#finish(error);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) {
      this.#config.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  #finish(error: Error): void {
    if (this.#done) return;
    this.#done = true;
    this.#handler.onResponseError?.(this.#controller, error);
  }

  /** The outcome of the response (`error` undefined) or of the error that ended the request. */
  #decide(error: unknown): Outcome {
    return requestOutcome(
      this.#config,
      this.#origin,
      this.#opts.method,
      this.#statusCode,
      this.#headers,
      error,
    );
  }

  /** Returns the permit with `outcome`, once (later calls do nothing; a guard's: see GuardCall). */
  #release(outcome: Outcome): void {
    const permit = this.#permit;
    if (permit === undefined) return;
    this.#permit = undefined;
    releaseWith(permit, outcome);
  }
}

/**
 * `limitInterceptor`'s classification of how a request ended, with the response `statusCode`
 * (`error` undefined) or with `error`: the `classify` option's answer when it gives one, else the
 * shared rules — `classifyStatus` / `classifyError`.
 */
export function requestOutcome(
  config: InterceptorConfig,
  origin: string,
  method: string,
  statusCode: number,
  headers: InterceptorHeaders | undefined,
  error: unknown,
): Outcome {
  const call: InterceptedCall = {
    origin,
    method,
    statusCode: statusCode === 0 ? undefined : statusCode,
    headers,
    error,
  };
  return (
    userOutcome(config.classify, call) ??
    (error === undefined ? classifyStatus(statusCode) : classifyError(error))
  );
}

/** Reports a response's valid `Retry-After` to the `onRetryAfter` option, if any. */
function reportRetryAfter(
  config: InterceptorConfig,
  origin: string,
  method: string,
  statusCode: number,
  headers: InterceptorHeaders,
): void {
  const onRetryAfter = config.onRetryAfter;
  if (onRetryAfter === undefined) return;
  const value = headers['retry-after'];
  // Several Retry-After headers are refused, as a comma-joined value is.
  const retryAfterMs = parseRetryAfter(typeof value === 'string' ? value : undefined);
  if (retryAfterMs === undefined) return;
  onRetryAfter({ origin, method, statusCode, retryAfterMs });
}
