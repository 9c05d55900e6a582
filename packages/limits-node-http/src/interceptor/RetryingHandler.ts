import type { AttemptResult, Limiter, RetryPolicy } from 'limits-core';
import type { Context } from '../context/RequestContext.js';
import type { LimitFetchGuard } from '../shared/httpGuard.js';
import { DO_NOT_RETRY_HEADER, retryResponse } from '../shared/retry.js';
import { Caller } from './Caller.js';
import type {
  Dispatch,
  DispatchController,
  DispatchHandler,
  DispatchOptions,
  InterceptorHeaders,
} from './dispatcher.js';
import { LimitHandler, requestOutcome } from './LimitHandler.js';
import type { InterceptorConfig } from './options.js';

/**
 * Whether a request can be sent again as it is: no body, or one held in memory (a stream or an
 * iterable is consumed by the first attempt), and not a connection upgrade.
 */
export function isReplayable(opts: DispatchOptions): boolean {
  const { body, upgrade } = opts as { body?: unknown; upgrade?: unknown };
  if (upgrade != null || opts.method === 'CONNECT') return false;
  return body == null || typeof body === 'string' || body instanceof Uint8Array;
}

/**
 * A request retried under a {@link RetryPolicy} (the interceptor's `retry` option): each attempt is
 * a {@link LimitHandler} of its own — a permit per attempt, released when that attempt ends — whose
 * callbacks land in an {@link Attempt}. An attempt's final response is held (its connection paused,
 * early body chunks kept) until the policy decides: a retried one is discarded (aborted, its permit
 * released with its status's outcome), the final one is passed on to the caller, who sees one
 * request. A refusal by the limiter is never retried (the policy's rule); the caller's abort stops
 * the call at once, during an attempt or a back-off wait.
 */
export class RetryingHandler {
  readonly #config: InterceptorConfig;
  readonly #policy: RetryPolicy;
  readonly #dispatch: Dispatch;
  readonly #opts: DispatchOptions;
  readonly #origin: string;
  /** Where each attempt gets its permit: a limiter, or a guard (`fetchGuard`). */
  readonly #source: Limiter | LimitFetchGuard;
  readonly #caller: Caller;
  /** The request context the request carries on, if any. */
  readonly #context: Context | undefined;
  readonly #abort = new AbortController();
  #deadline = Infinity;
  #current: Attempt | undefined = undefined;

  constructor(
    config: InterceptorConfig,
    policy: RetryPolicy,
    dispatch: Dispatch,
    opts: DispatchOptions,
    handler: DispatchHandler,
    origin: string,
    source: Limiter | LimitFetchGuard,
    context?: Context,
  ) {
    this.#config = config;
    this.#policy = policy;
    this.#dispatch = dispatch;
    this.#opts = opts;
    this.#origin = origin;
    this.#source = source;
    this.#context = context;
    this.#caller = new Caller(handler, (reason) => this.#callerAborted(reason));
  }

  /** The caller's request is abandoned when `signal` aborts (the request context's). */
  abortWith(signal: AbortSignal): void {
    this.#caller.abortWith(signal);
  }

  /**
   * Starts the first attempt.
   * @param deadline - the call's deadline on the config's clock (default: `timeoutMs` from now).
   * @returns `true` (undici's "not busy").
   */
  start(deadline?: number): boolean {
    const config = this.#config;
    if (deadline !== undefined) this.#deadline = deadline;
    else if (config.timeoutMs !== Infinity) this.#deadline = config.clock.now() + config.timeoutMs;
    this.#policy
      .run((attempt) => this.#attempt(attempt), {
        signal: this.#abort.signal,
        retryIf: (result) => this.#retryIf(result),
        discard: (attempt) => attempt.discard(),
      })
      .then(
        (attempt) => this.#adopt(attempt),
        (error: Error) => this.#caller.fail(error),
      );
    return true;
  }

  /** The caller aborted: stop the attempt in flight, or the back-off wait. */
  #callerAborted(reason: Error): void {
    if (this.#caller.done) return;
    this.#abort.abort(reason);
    this.#current?.abort(reason);
  }

  #attempt(number: number): Promise<Attempt> {
    return new Promise<Attempt>((resolve, reject) => {
      const deadline = this.#deadline;
      if (deadline !== Infinity && deadline - this.#config.clock.now() <= 0) {
        reject(
          new DOMException(
            `limits: ${this.#opts.method} ${this.#origin}${this.#opts.path} ran out of its time limit ${this.#context === undefined ? `of ${this.#config.timeoutMs} ms (timeoutMs)` : "(timeoutMs, or the request context's budget)"} before a retry`,
            'TimeoutError',
          ),
        );
        return;
      }
      const attempt = new Attempt(this.#caller, resolve, reject);
      this.#current = attempt;
      const handler = new LimitHandler(
        this.#config,
        this.#dispatch,
        this.#opts,
        attempt,
        this.#origin,
        this.#context,
        number,
      );
      if (this.#config.guard !== undefined)
        handler.startGuarded(this.#source as LimitFetchGuard, deadline);
      else handler.start(this.#source as Limiter, deadline);
    });
  }

  /**
   * Whether an attempt is retried (as `limitFetch` decides): a response classified `dropped` or
   * `failure`, after at least its valid `Retry-After` (never when that asks for more than a day);
   * an error classified `dropped`,
   * unless it is a `TimeoutError` (the call's time limit is spent). Refusals and the caller's abort never
   * get here (the policy stops first).
   */
  #retryIf(result: AttemptResult<Attempt>): boolean | number {
    const config = this.#config;
    const method = this.#opts.method;
    if (!result.ok) {
      const { error } = result;
      if ((error as { name?: unknown } | null)?.name === 'TimeoutError') return false;
      return requestOutcome(config, this.#origin, method, 0, undefined, error) === 'dropped';
    }
    // A guard fallback's answer is final (retrying would meet the open circuit again).
    if (result.value.fallback) return false;
    const { statusCode, headers } = result.value;
    const outcome = requestOutcome(config, this.#origin, method, statusCode, headers, undefined);
    const value = headers['retry-after'];
    return retryResponse(
      outcome,
      typeof value === 'string' ? value : undefined,
      headers[DO_NOT_RETRY_HEADER],
    );
  }

  #adopt(attempt: Attempt): void {
    this.#current = attempt;
    const { signal } = this.#abort;
    if (signal.aborted) {
      // The caller aborted while the policy decided: the held response is not passed on.
      attempt.discard();
      this.#caller.fail(signal.reason);
      return;
    }
    try {
      attempt.adopt();
    } catch (error) {
      // The caller's handler threw (undici's dump interceptor does, for a body over its size):
      // abort the attempt with that error, as undici's own request does; the error reaches the
      // caller's onResponseError and the permit goes back.
      attempt.abort(error as Error);
    }
  }
}

/**
 * One attempt of a retried request: the handler its {@link LimitHandler} calls. Until the policy has
 * decided, its final response is held: the connection paused, chunks and the end kept; adopted, it
 * replays them to the caller and streams the rest through. Interim (1xx) responses and the start of
 * the request reach the caller at once (the caller starts once, whatever the attempts).
 */
class Attempt implements DispatchHandler {
  readonly #caller: Caller;
  readonly #resolve: (attempt: Attempt) => void;
  readonly #reject: (error: unknown) => void;
  #controller: DispatchController | undefined = undefined;
  statusCode = 0;
  headers: InterceptorHeaders = {};
  /** The response is a guard fallback's answer. */
  fallback = false;
  #statusMessage: string | undefined = undefined;
  #live = false;
  #chunks: Uint8Array[] = [];
  #trailers: InterceptorHeaders | undefined = undefined;
  #error: Error | undefined = undefined;

  constructor(
    caller: Caller,
    resolve: (attempt: Attempt) => void,
    reject: (error: unknown) => void,
  ) {
    this.#caller = caller;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  onRequestStart(controller: DispatchController, context: unknown): void {
    this.#controller = controller;
    this.#started(controller, context);
  }

  onResponseStart(
    controller: DispatchController,
    statusCode: number,
    headers: InterceptorHeaders,
    statusMessage?: string,
  ): void {
    if (statusCode < 200) {
      if (this.#live || this.statusCode === 0)
        this.#caller.responseStart(statusCode, headers, statusMessage);
      return;
    }
    this.statusCode = statusCode;
    this.headers = headers;
    this.#statusMessage = statusMessage;
    this.fallback = (controller as { fallback?: boolean }).fallback === true;
    // Hold the body while the policy decides (it answers after a microtask at least).
    controller.pause();
    this.#resolve(this);
  }

  onResponseData(_controller: DispatchController, chunk: Uint8Array): void {
    if (this.#live) this.#caller.data(chunk);
    else this.#chunks.push(chunk);
  }

  onResponseEnd(_controller: DispatchController, trailers: InterceptorHeaders): void {
    if (this.#live) this.#caller.end(trailers);
    else this.#trailers = trailers;
  }

  onResponseError(_controller: DispatchController, error: Error): void {
    if (this.statusCode === 0) this.#reject(error);
    else if (this.#live) this.#caller.fail(error);
    else this.#error = error;
  }

  /** The caller aborted this attempt. */
  abort(reason: Error): void {
    this.#controller?.abort(reason);
  }

  /** Thrown away for a retry: aborted (its permit goes back with its status's outcome). */
  discard(): void {
    this.#chunks = [];
    this.#controller?.abort(
      new DOMException('limits: response discarded for a retry', 'AbortError'),
    );
  }

  /** The final attempt: its response goes to the caller, what was held first. */
  adopt(): void {
    const caller = this.#caller;
    this.#live = true;
    if (this.#controller !== undefined) this.#started(this.#controller, null);
    caller.responseStart(this.statusCode, this.headers, this.#statusMessage);
    const chunks = this.#chunks;
    this.#chunks = [];
    for (const chunk of chunks) caller.data(chunk);
    if (this.#trailers !== undefined) caller.end(this.#trailers);
    else if (this.#error !== undefined) caller.fail(this.#error);
    else if (!caller.pausedByCaller) this.#controller?.resume();
  }

  /** The attempt got its controller (or queued for a permit): the caller's points at it now. */
  #started(controller: DispatchController, context: unknown): void {
    this.#caller.target = controller;
    this.#caller.start(context);
  }
}
