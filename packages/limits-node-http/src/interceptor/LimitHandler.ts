import type {
  LimitExceededError,
  Limiter,
  Outcome,
  Permit,
  PermitRequest,
  QueueTicket,
} from 'limits-core';
import type { Propagation } from '../context/Propagation.js';
import type { Context } from '../context/RequestContext.js';
import type {
  AttemptOutcome,
  FetchCallContext,
  HttpAttempt,
  LimitFetchGuard,
} from '../shared/httpGuard.js';
import { classifyError, classifyStatus, userOutcome } from '../shared/outcome.js';
import { parseRetryAfter } from '../shared/retryAfter.js';
import { Caller } from './Caller.js';
import type {
  Dispatch,
  DispatchController,
  DispatchHandler,
  DispatchOptions,
  InterceptorHeaders,
} from './dispatcher.js';
import { withHeaders } from './dispatchHeaders.js';
import { FallbackReply } from './FallbackReply.js';
import type { InterceptedCall, InterceptorConfig } from './options.js';

/**
 * One request through `limitInterceptor`, written the way undici's own handlers are (its retry and
 * redirect handlers): the state of the call lives here, between the caller's handler and the next
 * dispatcher. It is admitted by a limiter or by a guard, dispatches once admitted, classifies the
 * response, and gives back what admitted it exactly once — when the body ends, errors or is
 * aborted (or at the headers with `release: 'headers'`).
 *
 * - With a limiter (`start`), the request asks for a permit as the limiter's {@link PermitRequest}
 *   (no promise, no closure): granted at once, or queued (`#ticket`) until `granted` or `refused`.
 * - With a guard (`startGuarded`), the request is the {@link HttpAttempt} `guard.fire()` runs:
 *   waiting (`#waitingForGuard`) until the guard runs its action (`run`), which dispatches. The
 *   breaker is judged when the headers arrive (the action settles with their outcome), the guard's
 *   permit held (`ctx.hold()`) until the body ends; a fallback's answer is played to the caller by a
 *   {@link FallbackReply} standing in for undici.
 *
 * States, in order: waiting (`#ticket`, or `#waitingForGuard`), admitted and dispatched (`#permit`,
 * or with a guard `#ctx`), connected (`#connection`), response started (`#statusCode` ≥ 200), and
 * the caller done once it got its final callback. What admitted the request can outlive the caller:
 * a request the time limit answered early keeps its permit until undici reports that it really
 * ended.
 */
export class LimitHandler implements DispatchHandler, PermitRequest, HttpAttempt, AttemptOutcome {
  readonly #config: InterceptorConfig;
  readonly #dispatch: Dispatch;
  readonly #opts: DispatchOptions;
  readonly #origin: string;
  readonly #caller: Caller;
  /** The request context the request carries on (the `propagate` option), if any. */
  readonly #context: Context | undefined;
  /** The attempt's number: 1, then 2, 3… for the retries of a retried request. */
  readonly #attempt: number;
  /** The limiter's permit, from the grant until it goes back. */
  #permit: Permit | undefined = undefined;
  /** The request's place in the limiter's queue, while it waits there. */
  #ticket: QueueTicket | undefined = undefined;
  /** Fired through a guard whose action has not run yet. */
  #waitingForGuard = false;
  /** Given up while waiting for the guard: when the action runs, nothing is sent. */
  #cancelled = false;
  /** The guard's call context, from its action's run until the request ends. */
  #ctx: FetchCallContext | undefined = undefined;
  /** The guard's permit, held past the action's settlement while the body streams. */
  #hold: { release(outcome?: Outcome): void } | undefined = undefined;
  /** Settles the guard's action (with this request), until it has settled. */
  #settle: ((attempt: LimitHandler) => void) | undefined = undefined;
  /** The outcome the guard's breaker judges when the action settles. */
  #judged: Outcome = 'ignore';
  #connection: DispatchController | undefined = undefined;
  #deadline = Infinity;
  /** When the body must have ended (`bodyTimeoutMs` after the headers), when earlier than `#deadline`. */
  #bodyDeadline = Infinity;
  #timer: unknown = undefined;
  #statusCode = 0;
  #headers: InterceptorHeaders | undefined = undefined;
  /** The final response's outcome, reported when the permit goes back. */
  #responseOutcome: Outcome = 'success';
  #callerAbort: Error | undefined = undefined;
  #timeout: Error | undefined = undefined;
  #timeoutOutcome: Outcome = 'dropped';
  /** Why the guard aborted the running request (its timeout, its shutdown): it answers the caller. */
  #guardAbort: Error | undefined = undefined;
  /** A guard fallback's answer, playing to the caller. */
  #reply: FallbackReply | undefined = undefined;

  /**
   * @param context - the request context the request carries on, if any: its headers are sent,
   *   its criticality and cohort go to the limiter.
   * @param attempt - the attempt's number (a retried request's).
   */
  constructor(
    config: InterceptorConfig,
    dispatch: Dispatch,
    opts: DispatchOptions,
    handler: DispatchHandler,
    origin: string,
    context?: Context,
    attempt = 1,
  ) {
    this.#config = config;
    this.#dispatch = dispatch;
    this.#opts = opts;
    this.#origin = origin;
    this.#context = context;
    this.#attempt = attempt;
    this.#caller = new Caller(handler, (reason) => this.#callerAborted(reason));
  }

  /** The caller's request is abandoned when `signal` aborts (the request context's). */
  abortWith(signal: AbortSignal): void {
    this.#caller.abortWith(signal);
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
      // A retried call's attempt, or a call under a request context's budget: what is left of the
      // time limit (`Infinity`: none).
      this.#deadline = deadline;
      if (deadline !== Infinity) acquireOptions = { timeoutMs: deadline - config.clock.now() };
    } else if (acquireOptions !== undefined) this.#deadline = config.clock.now() + config.timeoutMs;
    const context = this.#context;
    if (context !== undefined) {
      const left = this.#deadline === Infinity ? Infinity : this.#deadline - config.clock.now();
      const propagation = config.propagation as Propagation;
      acquireOptions = propagation.acquireOptions(context, left, this.#attempt, undefined);
    }
    const permit = limiter.acquireWith(this, acquireOptions);
    if (permit !== undefined) {
      this.#permit = permit;
      return this.#send();
    }
    // Queued (a refusal at admission already answered the caller): the caller gets its controller
    // now, so that its abort takes the request out of the limiter's queue.
    if (this.#ticket !== undefined) this.#caller.start(null);
    return true;
  }

  /**
   * Fires `guard` for the request, dispatched when the guard's action runs; while it waits, the
   * caller's abort or the time limit (running from now) answers the caller at once.
   * @param deadline - as for {@link start}. @returns `true` (undici's "not busy").
   */
  startGuarded(guard: LimitFetchGuard, deadline?: number): boolean {
    const { clock, timeoutMs } = this.#config;
    this.#deadline = deadline ?? (timeoutMs === Infinity ? Infinity : clock.now() + timeoutMs);
    if (this.#deadline !== Infinity) {
      const left = Math.max(0, this.#deadline - clock.now());
      this.#timer = clock.setTimeout(() => this.#onTimeout(), left);
    }
    this.#waitingForGuard = true;
    guard.fire(this).then(
      (value) => (value === this ? this.#guardSettled() : this.#fallback(value)),
      (error: Error) => this.refused(error),
    );
    // Still waiting for the guard (the action did not run): the caller's controller now.
    if (this.#waitingForGuard && !this.#caller.done) this.#caller.start(null);
    return true;
  }

  /** Answers the caller with `error` without sending anything (the request was not admitted). */
  fail(error: Error): boolean {
    this.#caller.fail(error);
    return true;
  }

  // PermitRequest: how the wait in the limiter's queue ends.

  /** @internal The limiter queued the request. */
  queued(ticket: QueueTicket): void {
    this.#ticket = ticket;
  }

  /** @internal The limiter granted the queued request: dispatch it now. */
  granted(permit: Permit): void {
    this.#ticket = undefined;
    this.#permit = permit;
    this.#send();
  }

  /**
   * @internal The limiter refused the request (at admission or while queued), or the guard did (a
   * `CircuitOpenError`, …), or its wait was cancelled: it is never sent.
   */
  refused(error: LimitExceededError | Error): void {
    this.#ticket = undefined;
    this.#waitingForGuard = false;
    this.#clearTimer();
    // A refusal because the caller aborted answers with the caller's own reason, as undici does.
    this.#caller.fail(this.#callerAbort ?? error);
  }

  // HttpAttempt: the guard's action and how it settles.

  /** @internal The outcome the guard's breaker judges when the action settles. */
  get outcome(): Outcome {
    return this.#judged;
  }

  /**
   * @internal The guard's action: dispatches the request, unless the caller gave up while it was
   * queued. Settles (never rejects) at the headers, or when the request fails before them.
   */
  run(ctx: FetchCallContext): Promise<LimitHandler> {
    this.#waitingForGuard = false;
    // Cancelled while queued (the caller's abort, the time limit): never sent, not a sample.
    if (this.#cancelled) return Promise.resolve(this);
    this.#ctx = ctx;
    const settled = new Promise<LimitHandler>((resolve) => {
      this.#settle = resolve;
    });
    ctx.signal.addEventListener('abort', this);
    this.#send();
    return settled;
  }

  /** @internal `ctx.signal` aborted: the guard's own timeout, or its shutdown. */
  handleEvent(): void {
    if (this.#caller.done) return;
    const reason = (this.#ctx as FetchCallContext).signal.reason as Error;
    this.#guardAbort = reason;
    this.#connection?.abort(reason);
  }

  /** The guard answered with the action's settlement (a guard abort reaches the caller). */
  #guardSettled(): void {
    if (this.#guardAbort !== undefined && this.#statusCode === 0) {
      this.#caller.fail(this.#guardAbort);
    }
  }

  /** The guard answered with its fallback's value: played to the caller as a response. */
  #fallback(value: unknown): void {
    this.#waitingForGuard = false;
    let reply: FallbackReply;
    try {
      reply = new FallbackReply(value);
    } catch (error) {
      this.#caller.fail(error as Error);
      return;
    }
    if (this.#caller.done) {
      reply.abort(new DOMException('limits: the caller was answered already', 'AbortError'));
      return;
    }
    this.#clearTimer();
    this.#reply = reply;
    this.#caller.playFallback(reply);
  }

  /** Gives up waiting for the guard: the caller is answered now; the action, when run, sends nothing. */
  #cancelGuardWait(reason: Error): void {
    this.#cancelled = true;
    this.refused(reason);
  }

  /** The caller aborted through its controller. */
  #callerAborted(reason: Error): void {
    this.#reply?.abort(reason);
    if (this.#caller.done) return;
    this.#callerAbort = reason;
    if (this.#ticket !== undefined) {
      // Leaves the queue at once: `refused` answers the caller.
      this.#ticket.cancel(reason);
      return;
    }
    if (this.#waitingForGuard) {
      this.#cancelGuardWait(reason);
      return;
    }
    // Not yet connected: aborted in onRequestStart, as undici's own handlers do.
    this.#connection?.abort(reason);
  }

  // DispatchHandler: undici's callbacks for the dispatched request.

  onRequestStart(controller: DispatchController, context: unknown): void {
    this.#connection = controller;
    // (A guard fallback already playing keeps the caller's controller: this request is aborted.)
    if (this.#reply === undefined) this.#caller.target = controller;
    const stop = this.#timeout ?? this.#callerAbort ?? this.#guardAbort;
    if (stop !== undefined) {
      controller.abort(stop);
      return;
    }
    this.#caller.start(context);
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
    this.#caller.upgrade(statusCode, headers, socket);
  }

  onResponseStart(
    _controller: DispatchController,
    statusCode: number,
    headers: InterceptorHeaders,
    statusMessage?: string,
  ): void {
    if (this.#caller.done) return;
    if (statusCode >= 200) {
      // Interim 1xx responses (undici 8 passes them on) neither end nor classify the request.
      this.#statusCode = statusCode;
      this.#headers = headers;
      this.#responseOutcome = this.#classify(undefined);
      if (statusCode === 429 || statusCode === 503)
        reportRetryAfter(this.#config, this.#origin, this.#opts.method, statusCode, headers);
      if (this.#config.releaseAtHeaders) {
        this.#clearTimer();
        this.#release(this.#responseOutcome);
      } else {
        // A guard's breaker is judged now; its permit stays held while the body streams.
        if (this.#ctx !== undefined) this.#judge(this.#responseOutcome);
        if (this.#config.bodyTimeoutMs !== Infinity) this.#armBodyTimeout();
      }
    }
    this.#caller.responseStart(statusCode, headers, statusMessage);
  }

  onResponseData(_controller: DispatchController, chunk: Uint8Array): void {
    this.#caller.data(chunk);
  }

  onResponseEnd(_controller: DispatchController, trailers: InterceptorHeaders): void {
    this.#clearTimer();
    this.#release(this.#responseOutcome);
    this.#caller.end(trailers);
  }

  onResponseError(controller: DispatchController | null | undefined, error: Error): void {
    this.#clearTimer();
    let outcome: Outcome;
    if (this.#timeout !== undefined) outcome = this.#timeoutOutcome;
    else if (this.#callerAbort !== undefined || controller?.aborted === true) {
      // The caller gave up (through us, or through undici's own queue-abort hook, which aborts the
      // connection's controller directly): that says nothing about the downstream, unless the
      // response had already said it was overloaded or broken.
      outcome =
        this.#statusCode !== 0 && this.#responseOutcome !== 'success'
          ? this.#responseOutcome
          : 'ignore';
    } else outcome = this.#classify(error);
    this.#release(outcome);
    // The guard aborted a request before its headers: the guard answers (a fallback, its error).
    if (this.#guardAbort !== undefined && this.#statusCode === 0) return;
    this.#caller.fail(error);
  }

  /** undici 8 reports the request body's progress; passed on. */
  onBodySent(...args: unknown[]): void {
    this.#caller.bodySent(args);
  }

  /** undici 8 reports that the request was sent; passed on. */
  onRequestSent(): void {
    this.#caller.requestSent();
  }

  /** Dispatches the admitted request, under the time limit's timer. */
  #send(): boolean {
    if (this.#deadline !== Infinity && this.#timer === undefined) {
      const left = this.#deadline - this.#config.clock.now();
      this.#timer = this.#config.clock.setTimeout(() => this.#onTimeout(), Math.max(0, left));
    }
    try {
      return this.#dispatch(this.#sentOptions(), this);
    } catch (error) {
      // A dispatcher that throws instead of calling onResponseError: the request never started.
      this.onResponseError(undefined, error as Error);
      return true;
    }
  }

  /** The dispatch options sent: the caller's, with the request context's headers when it has one. */
  #sentOptions(): DispatchOptions {
    const context = this.#context;
    if (context === undefined) return this.#opts;
    const { clock, propagation } = this.#config;
    const left = this.#deadline === Infinity ? Infinity : this.#deadline - clock.now();
    const pairs = (propagation as Propagation).headers(context, left, this.#attempt);
    const opts = this.#opts as DispatchOptions & { headers?: unknown; propagate?: unknown };
    const { propagate: _propagate, ...rest } = opts;
    return { ...rest, headers: withHeaders(opts.headers, pairs) } as DispatchOptions;
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
    const admitted = this.#permit !== undefined || this.#ctx !== undefined;
    if (this.#caller.done || (!admitted && !this.#waitingForGuard)) return;
    const { timeoutMs, bodyTimeoutMs } = this.#config;
    const request = `${this.#opts.method} ${this.#origin}${this.#opts.path}`;
    const body = this.#bodyDeadline < this.#deadline;
    const error = new DOMException(
      body
        ? `limits: the body of ${request} did not end within ${bodyTimeoutMs} ms of its headers (bodyTimeoutMs)`
        : `limits: ${request} did not finish within its time limit ${this.#context === undefined ? `of ${timeoutMs} ms (timeoutMs)` : "(timeoutMs, or the request context's budget)"}`,
      'TimeoutError',
    );
    // A body the caller stopped reading (undici paused for it) says nothing about the downstream;
    // one the downstream sends too slowly is congestion.
    if (body && this.#caller.pausedByCaller) this.#timeoutOutcome = 'ignore';
    this.#timeout = error;
    if (!admitted) {
      // Still waiting for a guard's permit: answered now, and never sent when its turn comes.
      this.#cancelGuardWait(error);
      return;
    }
    if (this.#connection !== undefined) {
      this.#connection.abort(error);
      return;
    }
    // Dispatched but still waiting for a connection inside undici: the caller is answered now; the
    // request is aborted when it gets its connection, and keeps its permit until then.
    this.#caller.fail(error);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) {
      this.#config.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  /** The outcome of the response (`error` undefined) or of the error that ended the request. */
  #classify(error: unknown): Outcome {
    return requestOutcome(
      this.#config,
      this.#origin,
      this.#opts.method,
      this.#statusCode,
      this.#headers,
      error,
    );
  }

  /** The headers arrived with `outcome`: the guard's breaker is judged now, its permit held for the body. */
  #judge(outcome: Outcome): void {
    this.#judged = outcome;
    try {
      this.#hold = (this.#ctx as FetchCallContext).hold();
    } catch {
      // The guard already let go of the call (shut down meanwhile): nothing to hold.
    }
    this.#settleAction();
  }

  /** Gives back what admitted the request, with `outcome`, once (later calls do nothing). */
  #release(outcome: Outcome): void {
    const permit = this.#permit;
    if (permit !== undefined) {
      this.#permit = undefined;
      permit.release(outcome);
      return;
    }
    const ctx = this.#ctx;
    if (ctx === undefined) return;
    this.#ctx = undefined;
    ctx.signal.removeEventListener('abort', this);
    const hold = this.#hold;
    if (hold !== undefined) {
      // Judged at the headers: the held permit goes back with the body's outcome.
      this.#hold = undefined;
      hold.release(outcome);
    } else if (this.#settle !== undefined) this.#judged = outcome;
    this.#settleAction();
  }

  /** Settles the guard's action (once). */
  #settleAction(): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    this.#settle = undefined;
    settle(this);
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
