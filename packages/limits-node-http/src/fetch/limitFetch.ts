import {
  type AcquireOptions,
  type AttemptResult,
  isRefusal,
  type Limiter,
  type Outcome,
  type Permit,
} from 'limits-core';
import { formatValue } from 'limits-core/internal';
import { publishDiagnostics } from '../metrics/diagnostics.js';
import type { LimitsSource } from '../metrics/source.js';
import type { AttemptOutcome, FetchCallContext, HttpAttempt } from '../shared/httpGuard.js';
import { classifyError, classifyStatus, userOutcome } from '../shared/outcome.js';
import { retryResponse } from '../shared/retry.js';
import { parseRetryAfter } from '../shared/retryAfter.js';
import { BodyLease, holdBody } from './BodyLease.js';
import { anySignal, FetchDeadline } from './FetchDeadline.js';
import {
  type LimitFetchConfig,
  type LimitFetchOptions,
  type LimitFetchRequest,
  type LimitFetchResult,
  resolveLimitFetchOptions,
} from './options.js';

/** Any fetch function: the global one, undici's, or a wrapper with the same shape. */
export type FetchFunction = (input: never, init?: never) => Promise<unknown>;

/** What a `Request` (the global one or undici's) offers that `limitFetch` reads. */
interface RequestLike {
  readonly url: string;
  readonly method: string;
  readonly signal: AbortSignal | null | undefined;
  readonly body: unknown;
  clone(): RequestLike;
}

/** How `limitFetch` calls the fetch it wraps. */
type Send = (input: unknown, init?: RequestInit) => Promise<Response>;

const noop = (): void => {};

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
 * The `Retry-After` of a response, parsed safely by {@link parseRetryAfter}: the milliseconds to
 * wait, or `undefined` without a valid one (garbage, negative or over a day).
 * @example `if (res.status === 429) await sleep(retryAfterMs(res) ?? 1000)`
 */
export function retryAfterMs(response: {
  headers: { get(name: string): string | null };
}): number | undefined {
  return parseRetryAfter(response.headers.get('retry-after'));
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

/** One call: the deadline, then one attempt or several under the retry policy. */
async function call(
  c: LimitFetchConfig,
  send: Send,
  input: unknown,
  init: RequestInit | undefined,
): Promise<Response> {
  const req = isRequestLike(input) ? input : undefined;
  const request: LimitFetchRequest = {
    method: String(init?.method ?? req?.method ?? 'GET').toUpperCase(),
    url: req === undefined ? String(input) : req.url,
  };
  const callerSignal = init?.signal ?? req?.signal ?? undefined;
  if (callerSignal?.aborted) throw callerSignal.reason;
  const deadline = new FetchDeadline(
    c.clock,
    c.timeoutMs,
    callerSignal,
    !c.releaseAtHeaders && c.bodyTimeoutMs !== Infinity,
  );
  let response: Response;
  try {
    response =
      c.retry !== undefined && c.retryable(request) && replayable(req, init)
        ? await retried(c, send, input, init, request, deadline)
        : await attempt(c, send, input, init, request, deadline);
  } catch (error) {
    deadline.end();
    throw error;
  }
  const lease = leases.get(response);
  if (lease === undefined || lease.released) deadline.end();
  else lease.deadline = deadline;
  return response;
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

/** Attempts under the retry policy (the input is sent again as it is: its body is replayable). */
function retried(
  c: LimitFetchConfig,
  send: Send,
  input: unknown,
  init: RequestInit | undefined,
  request: LimitFetchRequest,
  deadline: FetchDeadline,
): Promise<Response> {
  return (c.retry as NonNullable<LimitFetchConfig['retry']>).run(
    () => attempt(c, send, input, init, request, deadline),
    {
      ...(deadline.signal === undefined ? {} : { signal: deadline.signal }),
      retryIf: (result) => retryVerdict(c, request, result, deadline),
      discard: (response) => {
        response.body?.cancel().catch(noop);
      },
    },
  );
}

/**
 * Whether to retry: a response classified `dropped` or `failure` (after its valid `Retry-After`,
 * if any; never when that asks for more than a day), an error classified `dropped`; never a
 * refusal, the caller's abort or our own timeout.
 */
function retryVerdict(
  c: LimitFetchConfig,
  request: LimitFetchRequest,
  result: AttemptResult<Response>,
  deadline: FetchDeadline,
): boolean | number {
  if (deadline.expired || deadline.callerSignal?.aborted) return false;
  if (result.ok) {
    const outcome = outcomes.get(result.value) ?? 'ignore';
    return retryResponse(outcome, result.value.headers.get('retry-after'));
  }
  if (isRefusal(result.error)) return false;
  const error = result.error;
  return fetchOutcome(c, { ...request, error }, deadline.callerSignal) === 'dropped';
}

/** One attempt: a permit (or a guard call), the request, the outcome, the body's hold. */
async function attempt(
  c: LimitFetchConfig,
  send: Send,
  input: unknown,
  init: RequestInit | undefined,
  request: LimitFetchRequest,
  deadline: FetchDeadline,
): Promise<Response> {
  if (c.guard !== undefined) return guarded(c, send, input, init, request, deadline);
  const limiter =
    typeof c.limiter === 'function'
      ? c.limiter(new URL(request.url).origin, request)
      : (c.limiter as Limiter);
  if (limiter === undefined) {
    return send(input, deadline.signal === undefined ? init : { ...init, signal: deadline.signal });
  }
  publishDiagnostics(limiter);
  const permit = await acquire(limiter, deadline);
  const x = await exchange(c, send, input, init, request, deadline.signal, deadline.callerSignal);
  if (!x.failed && keepsBody(c, x.response as Response)) {
    const held = holdResponse(c, x, deadline, (outcome) => permit.release(outcome));
    if (held !== undefined) return held;
  }
  permit.release(x.outcome);
  if (x.failed) throw x.error;
  return x.response as Response;
}

/** A permit for the attempt, within the time left before the deadline. */
async function acquire(limiter: Limiter, deadline: FetchDeadline): Promise<Permit> {
  const signal = deadline.signal;
  const timeoutMs = deadline.remainingMs();
  if (timeoutMs <= 0) {
    throw new DOMException('limits: request timed out before it got a permit', 'TimeoutError');
  }
  let options: AcquireOptions | undefined;
  if (signal !== undefined || timeoutMs !== Infinity) {
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

/** One guarded attempt: `guard.fire()`; its action sends the request (see {@link GuardedAttempt}). */
async function guarded(
  c: LimitFetchConfig,
  send: Send,
  input: unknown,
  init: RequestInit | undefined,
  request: LimitFetchRequest,
  deadline: FetchDeadline,
): Promise<Response> {
  const guard = c.guard as NonNullable<LimitFetchConfig['guard']>;
  publishDiagnostics(guard as unknown as LimitsSource);
  const fired = guard.fire(new GuardedAttempt(c, send, input, init, request, deadline));
  const value = await untilAborted(fired, deadline.signal);
  if (!(value instanceof Exchange)) return asFallbackResponse(value);
  if (value.failed) throw value.error;
  return value.response as Response;
}

/** The guard's action for one attempt. */
class GuardedAttempt implements HttpAttempt {
  constructor(
    readonly c: LimitFetchConfig,
    readonly send: Send,
    readonly input: unknown,
    readonly init: RequestInit | undefined,
    readonly request: LimitFetchRequest,
    readonly deadline: FetchDeadline,
  ) {}

  async run(ctx: FetchCallContext): Promise<Exchange> {
    const { c, deadline } = this;
    const signal =
      deadline.signal === undefined ? ctx.signal : anySignal(deadline.signal, ctx.signal);
    const x = await exchange(
      c,
      this.send,
      this.input,
      this.init,
      this.request,
      signal,
      deadline.callerSignal,
    );
    // Without a body to hold, the guard releases the permit when this settles, with `x.outcome`.
    if (x.failed || !keepsBody(c, x.response as Response)) return x;
    const hold = ctx.hold();
    const response = holdResponse(c, x, deadline, (outcome) => hold.release(outcome));
    if (response !== undefined) return new Exchange(x.outcome, false, response, undefined);
    // (A hold released while the action runs goes back when it settles.)
    hold.release(x.outcome);
    return x;
  }
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

/** Whether the permit stays held while `response`'s body streams. */
function keepsBody(c: LimitFetchConfig, response: Response): boolean {
  return !c.releaseAtHeaders && response.body !== null && response.body !== undefined;
}

/**
 * The response handed out, whose body releases `end` when it ends (see {@link BodyLease}); or
 * `undefined` when the response's class refuses to build it (a look-alike): then the caller
 * releases at once and hands out `x.response` as fetch gave it.
 */
function holdResponse(
  c: LimitFetchConfig,
  x: Exchange,
  deadline: FetchDeadline,
  end: (outcome: Outcome) => void,
): Response | undefined {
  const lease = new BodyLease(x.outcome, deadline.callerSignal, end);
  let held: Response;
  try {
    held = holdBody(x.response as Response, lease);
  } catch {
    return undefined;
  }
  lease.watch(deadline.signal);
  if (c.bodyTimeoutMs !== Infinity) {
    lease.startTimeout(c.clock, c.bodyTimeoutMs, (reason) => deadline.abort(reason));
  }
  leases.set(held, lease);
  if (c.retry !== undefined) outcomes.set(held, x.outcome);
  return held;
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

/** Sends the request under `signal` and classifies how it ended. */
async function exchange(
  c: LimitFetchConfig,
  send: Send,
  input: unknown,
  init: RequestInit | undefined,
  request: LimitFetchRequest,
  signal: AbortSignal | undefined,
  callerSignal: AbortSignal | undefined,
): Promise<Exchange> {
  // Aborted while it waited for its permit: never sent, says nothing about the downstream.
  if (signal?.aborted) return new Exchange('ignore', true, undefined, signal.reason);
  let response: Response;
  try {
    response = await send(input, signal === undefined ? init : { ...init, signal });
  } catch (error) {
    const outcome = fetchOutcome(c, { ...request, error }, callerSignal);
    return new Exchange(outcome, true, undefined, error);
  }
  const outcome = fetchOutcome(c, { ...request, response }, callerSignal);
  if (c.retry !== undefined) outcomes.set(response, outcome);
  return new Exchange(outcome, false, response, undefined);
}

/**
 * `limitFetch`'s classification of how a request ended: the caller's own abort is `ignore` (and not
 * asked about); otherwise the `classify` option's answer when it gives one, else the shared rules —
 * a response by `classifyStatus`, an error by `classifyError`.
 */
function fetchOutcome(
  c: LimitFetchConfig,
  result: LimitFetchResult,
  callerSignal: AbortSignal | undefined,
): Outcome {
  if (result.response === undefined && callerSignal?.aborted) return 'ignore';
  return (
    userOutcome(c.classify, result) ??
    (result.response === undefined
      ? classifyError(result.error)
      : classifyStatus(result.response.status))
  );
}
