import {
  type AcquireOptions,
  type AttemptResult,
  isRefusal,
  type Limiter,
  type Outcome,
  type Permit,
  type RetryPolicy,
} from 'limits-core';
import { formatValue } from 'limits-core/internal';
import type { PropagateOption, Propagation } from '../context/Propagation.js';
import type { Context } from '../context/RequestContext.js';
import { publishDiagnostics } from '../metrics/diagnostics.js';
import type { LimitsSource } from '../metrics/source.js';
import type {
  AttemptOutcome,
  FetchCallContext,
  HttpAttempt,
  LimitFetchGuard,
} from '../shared/httpGuard.js';
import { classifyError, classifyStatus, userOutcome } from '../shared/outcome.js';
import { DO_NOT_RETRY_HEADER, retryResponse } from '../shared/retry.js';
import { parseRetryAfter } from '../shared/retryAfter.js';
import { BodyLease, holdBody, type Releasable } from './BodyLease.js';
import { anySignal, FetchDeadline } from './FetchDeadline.js';
import {
  type LimitFetchConfig,
  type LimitFetchOptions,
  type LimitFetchRequest,
  resolveLimitFetchOptions,
} from './options.js';

/** Any fetch function: the global one, undici's, or a wrapper with the same shape. */
export type FetchFunction = (input: never, init?: never) => Promise<unknown>;

/** What a `Request` (the global one or undici's) offers that `limitFetch` reads. */
interface RequestLike {
  readonly url: string;
  readonly method: string;
  readonly signal: AbortSignal | null | undefined;
  readonly headers: ConstructorParameters<typeof Headers>[0];
  readonly body: unknown;
  clone(): RequestLike;
}

/** How `limitFetch` calls the fetch it wraps. */
type Send = (input: unknown, init?: RequestInit) => Promise<Response>;

const noop = (): void => {};

/** The retry policy's `discard`: a response thrown away for a retry has its body cancelled. */
const cancelBody = (response: Response): void => {
  response.body?.cancel().catch(noop);
};

/** Each response handed out whose body holds a permit: its lease. */
const leases = new WeakMap<object, BodyLease>();

/** Each response handed out (with `retry`): its outcome, for the retry decision. */
const outcomes = new WeakMap<object, Outcome>();

/**
 * Wraps `fetch` so that every request needs a permit from a limits-core `Limiter` (or goes through a
 * limits-breaker guard made by {@link fetchGuard}). Returns a function of exactly `fetch`'s type:
 * same arguments (a URL, a string or a `Request`, and `init`), same `Response`.
 *
 * Per request: a permit first (a refusal rejects with the limiter's `LimitExceededError`, or the
 * guard's `CircuitOpenError`, and nothing is sent); then the request, under `timeoutMs` merged with
 * the caller's signal; then the outcome — 429, 502, 503, 504, network errors and timeouts
 * `dropped` (the limit backs off; a breaker failure), other 5xx `failure`, the rest `success`, the
 * caller's abort `ignore`. The permit is held until the response body is read to its end,
 * cancelled or errored (or, with `release: 'headers'`, released at the headers). A body nobody reads
 * is reclaimed when the response is garbage-collected (released as `ignore`) or at `bodyTimeoutMs`.
 *
 * @param fetch - the fetch to wrap: `globalThis.fetch`, undici's `fetch`, or any with that shape.
 * @param options - see {@link LimitFetchOptions}: `limiter` or `guard` (exactly one) and the rest.
 * @returns the limited fetch, typed as `fetch`.
 * @throws TypeError/RangeError for bad options, before anything is built.
 * @example
 * ```ts
 * const limiter = new Limiter({ algorithm: new VegasLimit(), maxQueued: 100 });
 * const api = limitFetch(fetch, { limiter, timeoutMs: 2_000 });
 * const res = await api('https://api.example.com/users/42');
 * const user = await res.json(); // the permit goes back when the body has been read
 * ```
 */
export function limitFetch<F extends FetchFunction>(fetch: F, options: LimitFetchOptions): F {
  const config = resolveLimitFetchOptions(fetch, options);
  const send = fetch as unknown as Send;
  return function limitedFetch(input: unknown, init?: RequestInit): Promise<Response> {
    return call(config, send, input, init);
  } as unknown as F;
}

/**
 * One call: a {@link FetchCall} (its request, deadline and signals), then one attempt or several
 * under the retry policy. The deadline ends with the call, or with the body of the response handed
 * out when that body holds a permit.
 */
async function call(
  config: LimitFetchConfig,
  send: Send,
  input: unknown,
  init: RequestInit | undefined,
): Promise<Response> {
  const fetchCall = new FetchCall(config, send, input, init);
  let response: Response;
  try {
    response = fetchCall.retries() ? await fetchCall.retried() : await fetchCall.attempt();
  } catch (error) {
    fetchCall.deadline.end();
    throw error;
  }
  const lease = leases.get(response);
  if (lease === undefined || lease.released) fetchCall.deadline.end();
  else lease.deadline = fetchCall.deadline;
  return response;
}

/**
 * One `limitFetch` call: what the caller gave (`input`, `init`), the request it names, its deadline
 * and signals, and the options shared by every call. Each attempt is one of its methods, and with a
 * guard the call is the guard's action ({@link HttpAttempt}) for each attempt.
 */
class FetchCall implements HttpAttempt {
  /** What the call is about, for a `limiter` function, `classify` and `retryable`. */
  readonly request: LimitFetchRequest;
  /** The call's deadline and signals: the caller's, ours, and the one fetch gets. */
  readonly deadline: FetchDeadline;
  /** The `Request` given as `input`, if one was. */
  readonly #req: RequestLike | undefined;
  /** The request context the call carries on (see the `propagate` option), if any. */
  readonly #context: Context | undefined;
  /** The number of the attempt under way: 1, then 2, 3… for retries. */
  #attempt = 1;

  /**
   * @throws the caller's abort reason when its signal (or the request context's) is already
   *   aborted; a `LimitExceededError` (reason `deadline`) when the request context has no time
   *   left to give the call.
   */
  constructor(
    readonly config: LimitFetchConfig,
    readonly fetch: Send,
    readonly input: unknown,
    readonly init: RequestInit | undefined,
  ) {
    const req = isRequestLike(input) ? input : undefined;
    this.#req = req;
    this.request = {
      method: String(init?.method ?? req?.method ?? 'GET').toUpperCase(),
      url: req === undefined ? String(input) : req.url,
    };
    const callerSignal = init?.signal ?? req?.signal ?? undefined;
    if (callerSignal?.aborted) throw callerSignal.reason;
    const propagation = config.propagation;
    const context = propagation?.contextOf((init as PropagateOption | undefined)?.propagate);
    this.#context = context;
    let timeoutMs = config.timeoutMs;
    let contextSignal: AbortSignal | undefined;
    if (context !== undefined) {
      contextSignal = context.signal;
      if (contextSignal.aborted) throw contextSignal.reason;
      timeoutMs = (propagation as Propagation).timeLimitMs(context, timeoutMs);
    }
    this.deadline = new FetchDeadline(
      config.clock,
      timeoutMs,
      callerSignal,
      contextSignal,
      !config.releaseAtHeaders && config.bodyTimeoutMs !== Infinity,
    );
  }

  /** Whether the retry policy runs the call: a request `retryable` accepts, with a replayable body. */
  retries(): boolean {
    const { retry, retryable } = this.config;
    return retry !== undefined && retryable(this.request) && replayable(this.#req, this.init);
  }

  /** Attempts under the retry policy (the input is sent again as it is: its body is replayable). */
  retried(): Promise<Response> {
    const signal = this.deadline.signal;
    return (this.config.retry as RetryPolicy).run((attempt) => this.attempt(attempt), {
      ...(signal === undefined ? {} : { signal }),
      retryIf: (result) => this.#retryVerdict(result),
      discard: cancelBody,
    });
  }

  /**
   * Whether to retry: a response classified `dropped` or `failure` (after its valid `Retry-After`,
   * if any; never when that asks for more than a day), an error classified `dropped`; never a
   * refusal, the caller's abort or our own timeout.
   */
  #retryVerdict(result: AttemptResult<Response>): boolean | number {
    const deadline = this.deadline;
    if (deadline.expired || deadline.callerSignal?.aborted) return false;
    if (result.ok) {
      const outcome = outcomes.get(result.value) ?? 'ignore';
      const { headers } = result.value;
      return retryResponse(outcome, headers.get('retry-after'), headers.get(DO_NOT_RETRY_HEADER));
    }
    if (isRefusal(result.error)) return false;
    return this.#outcome(undefined, result.error) === 'dropped';
  }

  /**
   * One attempt: a permit (or a guard call), the request, the outcome, the body's hold.
   * @param attempt - its number: 1, then 2, 3… for retries.
   */
  async attempt(attempt = 1): Promise<Response> {
    this.#attempt = attempt;
    const { config, request } = this;
    if (config.guard !== undefined) return this.#guarded(config.guard);
    const limiter =
      typeof config.limiter === 'function'
        ? config.limiter(new URL(request.url).origin, request)
        : (config.limiter as Limiter);
    if (limiter === undefined) return this.#send(this.deadline.signal);
    publishDiagnostics(limiter);
    const permit = await this.#acquire(limiter);
    const x = await this.#exchange(this.deadline.signal);
    if (!x.failed && this.#keepsBody(x.response as Response)) {
      const held = this.#holdResponse(x, permit);
      if (held !== undefined) return held;
    }
    permit.release(x.outcome);
    if (x.failed) throw x.error;
    return x.response as Response;
  }

  /** A permit for the attempt, within the time left before the deadline. */
  async #acquire(limiter: Limiter): Promise<Permit> {
    const deadline = this.deadline;
    const signal = deadline.signal;
    const timeoutMs = deadline.remainingMs();
    if (timeoutMs <= 0) {
      throw new DOMException('limits: request timed out before it got a permit', 'TimeoutError');
    }
    const context = this.#context;
    let options: AcquireOptions | undefined;
    if (context !== undefined) {
      const propagation = this.config.propagation as Propagation;
      options = propagation.acquireOptions(context, timeoutMs, this.#attempt, signal);
    } else if (signal !== undefined || timeoutMs !== Infinity) {
      options = {};
      if (signal !== undefined) options.signal = signal;
      if (timeoutMs !== Infinity) options.timeoutMs = timeoutMs;
    }
    try {
      return await limiter.acquire(options);
    } catch (error) {
      // The caller gave up while queued: its reason, as fetch would reject.
      if (deadline.callerSignal?.aborted) throw deadline.callerSignal.reason;
      throw error;
    }
  }

  /** One guarded attempt: `guard.fire()`, whose action is {@link FetchCall.run}. */
  async #guarded(guard: LimitFetchGuard): Promise<Response> {
    publishDiagnostics(guard as unknown as LimitsSource);
    const value = await untilAborted(guard.fire(this), this.deadline.signal);
    if (!(value instanceof Exchange)) return asFallbackResponse(value);
    if (value.failed) throw value.error;
    return value.response as Response;
  }

  /** The guard's action for one attempt: the request under the call's signal and the guard's. */
  async run(ctx: FetchCallContext): Promise<Exchange> {
    const own = this.deadline.signal;
    const x = await this.#exchange(own === undefined ? ctx.signal : anySignal(own, ctx.signal));
    // Without a body to hold, the guard releases the permit when this settles, with `x.outcome`.
    if (x.failed || !this.#keepsBody(x.response as Response)) return x;
    const hold = ctx.hold();
    const response = this.#holdResponse(x, hold);
    if (response !== undefined) return new Exchange(x.outcome, false, response, undefined);
    // (A hold released while the action runs goes back when it settles.)
    hold.release(x.outcome);
    return x;
  }

  /** Sends the request under `signal` and classifies how it ended. */
  async #exchange(signal: AbortSignal | undefined): Promise<Exchange> {
    // Aborted while it waited for its permit: never sent, says nothing about the downstream.
    if (signal?.aborted) return new Exchange('ignore', true, undefined, signal.reason);
    let response: Response;
    try {
      response = await this.#send(signal);
    } catch (error) {
      return new Exchange(this.#outcome(undefined, error), true, undefined, error);
    }
    const outcome = this.#outcome(response, undefined);
    if (this.config.retry !== undefined) outcomes.set(response, outcome);
    return new Exchange(outcome, false, response, undefined);
  }

  /**
   * The caller's `input` and `init`, sent by the wrapped fetch under `signal`, with the request
   * context's headers when the call carries one.
   */
  #send(signal: AbortSignal | undefined): Promise<Response> {
    const context = this.#context;
    if (context === undefined) {
      return this.fetch(this.input, signal === undefined ? this.init : { ...this.init, signal });
    }
    const propagation = this.config.propagation as Propagation;
    const pairs = propagation.headers(context, this.deadline.remainingMs(), this.#attempt);
    const headers = new Headers(this.init?.headers ?? this.#req?.headers);
    for (const [name, value] of pairs) if (!headers.has(name)) headers.set(name, value);
    const init: RequestInit = { ...this.init, headers };
    if (signal !== undefined) init.signal = signal;
    return this.fetch(this.input, init);
  }

  /**
   * `limitFetch`'s classification of how a request ended, with a `response` (its headers arrived)
   * or an `error`: the caller's own abort is `ignore` (and not asked about); otherwise the
   * `classify` option's answer when it gives one, else the shared rules — a response by
   * `classifyStatus`, an error by `classifyError`.
   */
  #outcome(response: Response | undefined, error: unknown): Outcome {
    if (response === undefined && this.deadline.callerSignal?.aborted) return 'ignore';
    const { classify } = this.config;
    // (What `classify` is asked about is built only when there is a `classify` to ask.)
    const asked =
      classify === undefined
        ? undefined
        : userOutcome(
            classify,
            response === undefined ? { ...this.request, error } : { ...this.request, response },
          );
    return (
      asked ?? (response === undefined ? classifyError(error) : classifyStatus(response.status))
    );
  }

  /** Whether the permit stays held while `response`'s body streams. */
  #keepsBody(response: Response): boolean {
    return !this.config.releaseAtHeaders && response.body !== null && response.body !== undefined;
  }

  /**
   * The response handed out, whose body releases `permit` when it ends (see {@link BodyLease}); or
   * `undefined` when the response's class refuses to build it (a look-alike): then the caller
   * releases at once and hands out `x.response` as fetch gave it.
   */
  #holdResponse(x: Exchange, permit: Releasable): Response | undefined {
    const { config, deadline } = this;
    const lease = new BodyLease(x.outcome, deadline.callerSignal, permit);
    let held: Response;
    try {
      held = holdBody(x.response as Response, lease);
    } catch {
      return undefined;
    }
    lease.watch(deadline.signal);
    if (config.bodyTimeoutMs !== Infinity) {
      lease.startTimeout(config.clock, config.bodyTimeoutMs, (reason) => deadline.abort(reason));
    }
    leases.set(held, lease);
    if (config.retry !== undefined) outcomes.set(held, x.outcome);
    return held;
  }
}

/** How one request ended: with a response, or with an error (`failed`). Never rejects. */
class Exchange implements AttemptOutcome {
  constructor(
    readonly outcome: Outcome,
    readonly failed: boolean,
    readonly response: Response | undefined,
    readonly error: unknown,
  ) {}
}

function isRequestLike(input: unknown): input is RequestLike {
  return (
    typeof input === 'object' &&
    input !== null &&
    typeof (input as RequestLike).url === 'string' &&
    typeof (input as RequestLike).method === 'string' &&
    typeof (input as RequestLike).clone === 'function'
  );
}

/**
 * Whether the body can be sent again: none, or one held in memory in `init`. A stream (or an async
 * iterable) in `init.body` can be sent once only, and so can a `Request`'s own body, which fetch
 * reads as a stream whatever it was made from: sending it again would mean keeping a copy of the
 * whole upload.
 */
function replayable(req: RequestLike | undefined, init: RequestInit | undefined): boolean {
  const body = init?.body as unknown;
  // Without a body in `init`, fetch sends the Request's own body.
  if (body === undefined || body === null) {
    return req === undefined || req.body === null || req.body === undefined;
  }
  if (typeof body !== 'object') return true;
  return (
    typeof (body as ReadableStream).getReader !== 'function' &&
    typeof (body as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function'
  );
}

/**
 * `promise`, or a rejection with `signal.reason` as soon as the signal aborts (a guarded call queued
 * for a permit: the guard's queue does not know the caller's signal). An exchange that arrives after
 * the abort has its body cancelled.
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted && value instanceof Exchange) value.response?.body?.cancel().catch(noop);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** A fallback's answer must be a `Response`. */
function asFallbackResponse(value: unknown): Response {
  if (typeof value === 'object' && value !== null && typeof (value as Response).status === 'number')
    return value as Response;
  throw new TypeError(
    `limits: a fetchGuard fallback must return a Response, got ${formatValue(value)}`,
  );
}

/**
 * The `Retry-After` of a response, parsed safely by {@link parseRetryAfter}: the milliseconds to
 * wait, or `undefined` without a valid one (garbage, negative or over a day).
 * @example `if (res.status === 429) await sleep(retryAfterMs(res) ?? 1000)`
 */
export function retryAfterMs(response: {
  headers: { get(name: string): string | null };
}): number | undefined {
  return parseRetryAfter(response.headers.get('retry-after'));
}
