import { LimitExceededError, type Limiter } from 'limits-core';
import type { PropagateOption, Propagation } from '../context/Propagation.js';
import type { Context } from '../context/RequestContext.js';
import { publishDiagnostics } from '../metrics/diagnostics.js';
import type { LimitsSource } from '../metrics/source.js';
import type { LimitFetchGuard } from '../shared/httpGuard.js';
import type {
  Dispatch,
  DispatchHandler,
  DispatchInterceptor,
  DispatchOptions,
} from './dispatcher.js';
import { LimitHandler } from './LimitHandler.js';
import {
  type InterceptorConfig,
  type LimiterSource,
  type LimitInterceptorOptions,
  resolveInterceptorOptions,
} from './options.js';
import { isReplayable, RetryingHandler } from './RetryingHandler.js';

/**
 * An undici interceptor that puts every request under a limits-core {@link Limiter}, for
 * `Dispatcher.compose` (undici 7 and 8): a request is sent only with a permit, waits for one in the
 * limiter's bounded queue (the caller's abort takes it out), is refused with the limiter's
 * `LimitExceededError` without touching the network, and holds its permit until the response body
 * has been read, errored or aborted (or until the headers, with `release: 'headers'`). The outcome
 * fed to the limiter: 429, 502, 503, 504, network errors and timeouts `dropped`; other 5xx
 * `failure`; a caller's abort `ignore`; anything else `success` (override with `classify`).
 *
 * With `retry` (a limits-core `RetryPolicy`), failed attempts are retried under its budget, each
 * attempt with a permit of its own; the caller sees the final attempt.
 *
 * With `guard` (a limits-breaker guard made by `fetchGuard`, the one `limitFetch` takes) instead of
 * `limiter`, each request is one `guard.fire()`: an OPEN circuit answers with `CircuitOpenError`
 * without touching the network, the breaker is judged at the headers, the permit is held until the
 * body ends, and a guard `fallback` may answer the request (see {@link LimitInterceptorOptions.guard}).
 *
 * Order in `compose`: interceptors listed earlier sit closer to the network, so
 * `agent.compose(limitInterceptor(…), interceptors.redirect())` takes one permit per redirect hop,
 * while listing `limitInterceptor` last takes one permit for the whole chain.
 *
 * @param options - the limiter (or one per origin) or a guard, `classify`, `timeoutMs`, `bodyTimeoutMs`,
 *   `release`, `onRetryAfter`, `retry`, `retryable`, `maxOrigins`, `clock`; see
 *   {@link LimitInterceptorOptions}.
 * @returns an interceptor `(dispatch) => dispatch`.
 * @throws TypeError for a missing limiter (without a guard), both, or a wrong type; RangeError for a
 *   value out of range.
 * @example
 * ```ts
 * import { Agent, request } from 'undici';
 * import { Limiter, VegasLimit } from 'limits-core';
 * import { limitInterceptor } from 'limits-node-http';
 *
 * const limiter = new Limiter({ algorithm: new VegasLimit(), maxQueued: 100 });
 * const agent = new Agent().compose(limitInterceptor({ limiter, timeoutMs: 2_000 }));
 * const { statusCode, body } = await request('https://api.example.com/items', { dispatcher: agent });
 * const items = await body.json(); // the permit goes back when the body has been read
 *
 * // or under a circuit breaker (limits-breaker), with a cached answer while it is open:
 * const breaker = fetchGuard(guard, { limiter, fallback: () => new Response('[]') });
 * const guarded = new Agent().compose(limitInterceptor({ guard: breaker, timeoutMs: 2_000 }));
 * ```
 */
export function limitInterceptor(options: LimitInterceptorOptions): DispatchInterceptor {
  const config = resolveInterceptorOptions(options);
  const guard = config.guard;
  if (guard !== undefined) {
    return (dispatch: Dispatch): Dispatch =>
      function limitInterceptor(opts: DispatchOptions, handler: DispatchHandler): boolean {
        const origin = originOf(opts.origin);
        publishDiagnostics(guard as unknown as LimitsSource);
        return admit(config, dispatch, opts, handler, origin, guard);
      };
  }
  const limiters = originLimiters(config.limiter as LimiterSource, config.maxOrigins);
  return (dispatch: Dispatch): Dispatch =>
    function limitInterceptor(opts: DispatchOptions, handler: DispatchHandler): boolean {
      const origin = originOf(opts.origin);
      let limiter: Limiter | undefined;
      if (limiters instanceof OriginLimiters) {
        try {
          limiter = limiters.for(origin);
        } catch (error) {
          return new LimitHandler(config, dispatch, opts, handler, origin).fail(error as Error);
        }
        if (limiter === undefined) return dispatch(opts, handler);
      } else limiter = limiters;
      publishDiagnostics(limiter);
      return admit(config, dispatch, opts, handler, origin, limiter);
    };
}

/**
 * Starts one request through `source` (a limiter or a guard): retried under the policy when it may
 * be, carrying the request context on when there is one (its budget as the deadline, its signal as
 * the caller's abort).
 */
function admit(
  config: InterceptorConfig,
  dispatch: Dispatch,
  opts: DispatchOptions,
  handler: DispatchHandler,
  origin: string,
  source: Limiter | LimitFetchGuard,
): boolean {
  let context: Context | undefined;
  let deadline: number | undefined;
  const propagation = config.propagation;
  if (propagation !== undefined) {
    try {
      context = contextOf(propagation, opts);
    } catch (error) {
      return new LimitHandler(config, dispatch, opts, handler, origin).fail(error as Error);
    }
    if (context !== undefined) {
      const limitMs = propagation.timeLimitMs(context, config.timeoutMs);
      deadline = limitMs === Infinity ? Infinity : config.clock.now() + limitMs;
    }
  }
  const retry = config.retry;
  if (retry !== undefined && retries(config, opts, origin)) {
    const retried = new RetryingHandler(
      config,
      retry,
      dispatch,
      opts,
      handler,
      origin,
      source,
      context,
    );
    if (context !== undefined) retried.abortWith(context.signal);
    return retried.start(deadline);
  }
  const one = new LimitHandler(config, dispatch, opts, handler, origin, context);
  if (context !== undefined) one.abortWith(context.signal);
  return config.guard === undefined
    ? one.start(source as Limiter, deadline)
    : one.startGuarded(source as LimitFetchGuard, deadline);
}

/**
 * The request context a request carries on (none when its dispatch options say `propagate: false`).
 * @throws the context's abort reason when its client is already gone; a `LimitExceededError`
 *   (reason `deadline`) when it has no time left to give the request.
 */
function contextOf(propagation: Propagation, opts: DispatchOptions): Context | undefined {
  const context = propagation.contextOf((opts as PropagateOption).propagate);
  if (context?.signal.aborted) throw context.signal.reason;
  return context;
}

/** Whether the request may be retried: `retryable` says yes and its body can be sent again. */
function retries(config: InterceptorConfig, opts: DispatchOptions, origin: string): boolean {
  return isReplayable(opts) && config.retryable({ method: opts.method, url: origin + opts.path });
}

function originOf(origin: string | URL | undefined): string {
  if (typeof origin === 'string') return origin;
  return origin instanceof URL ? origin.origin : String(origin);
}

/**
 * The limiter of each origin for a function `limiter` option: the function's answer per origin,
 * kept in a table of at most `max` origins ordered by last use. A new origin with the table full
 * evicts the least recently used origin whose limiter is idle (nothing in flight or queued): a
 * limiter with work in flight is never forgotten, or the origin's next requests would get a fresh
 * limiter and exceed its limit. With every limiter busy, the new origin is refused.
 */
export class OriginLimiters {
  readonly #source: (origin: string) => Limiter | undefined;
  readonly #max: number;
  readonly #table = new Map<string, Limiter | undefined>();

  constructor(source: (origin: string) => Limiter | undefined, max: number) {
    this.#source = source;
    this.#max = max;
  }

  /** Origins kept right now. */
  get size(): number {
    return this.#table.size;
  }

  /**
   * The origin's limiter (`undefined`: not limited).
   * @throws LimitExceededError (reason `at_limit`) when the table is full of busy limiters; whatever
   *   the `limiter` function throws, or a TypeError when it returns something else than a Limiter.
   */
  for(origin: string): Limiter | undefined {
    const table = this.#table;
    if (table.has(origin)) {
      const known = table.get(origin);
      // Move to the end: the Map's order is the order of last use.
      table.delete(origin);
      table.set(origin, known);
      return known;
    }
    if (table.size >= this.#max && !this.#evictIdle()) {
      throw new LimitExceededError(
        `limits: no room for origin ${origin}: ${this.#max}/${this.#max} origins have work in flight (maxOrigins)`,
        { reason: 'at_limit' },
      );
    }
    const limiter = this.#source(origin);
    if (
      limiter !== undefined &&
      (typeof limiter !== 'object' ||
        limiter === null ||
        typeof (limiter as Limiter).acquireWith !== 'function')
    ) {
      throw new TypeError(
        `limits: option "limiter" returned something else than a Limiter or undefined for ${origin}`,
      );
    }
    table.set(origin, limiter);
    return limiter;
  }

  #evictIdle(): boolean {
    for (const [origin, limiter] of this.#table) {
      if (limiter === undefined || (limiter.inflight === 0 && limiter.queued === 0)) {
        this.#table.delete(origin);
        return true;
      }
    }
    return false;
  }
}

/** A single limiter for every origin, or the per-origin table of a function source. */
export function originLimiters(source: LimiterSource, max: number): Limiter | OriginLimiters {
  return typeof source === 'function' ? new OriginLimiters(source, max) : source;
}
