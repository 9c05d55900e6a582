import type { CallContext, Guard, GuardOptions, guard } from 'limits-breaker';
import { checkObject, formatValue, type Outcome } from 'limits-core';

/**
 * @internal One attempt of a `limitFetch` call, as the guard's action gets it: `run` sends the
 * request under the call's signal and `ctx.signal`, and holds the permit while the body streams.
 */
export interface FetchAttempt {
  run(ctx: CallContext): Promise<FetchExchange>;
}

/** @internal How an attempt ended: with a response, or with an error (`failed`). */
export interface FetchExchange {
  readonly outcome: Outcome;
  readonly failed: boolean;
  readonly response: Response | undefined;
  readonly error: unknown;
}

/** A limits-breaker guard made by {@link fetchGuard}, for `limitFetch`'s `guard` option. */
export type LimitFetchGuard = Guard<[FetchAttempt], FetchExchange | Response>;

/**
 * Options of {@link fetchGuard}: limits-breaker's `GuardOptions` without `classify` (`limitFetch`
 * classifies). `timeoutMs` defaults to `false` here: `limitFetch`'s own `timeoutMs` is the budget
 * (it covers the body too). A `fallback` must return a `Response` (e.g. from a cache).
 */
export type FetchGuardOptions = Omit<
  GuardOptions<[FetchAttempt], FetchExchange | Response>,
  'classify'
>;

const made = new WeakSet<object>();

/** Whether `value` was made by {@link fetchGuard}. */
export function isFetchGuard(value: unknown): value is LimitFetchGuard {
  return typeof value === 'object' && value !== null && made.has(value);
}

/** The guard's action: one attempt. */
function fetchAction(ctx: CallContext, attempt: FetchAttempt): Promise<FetchExchange> {
  return attempt.run(ctx);
}

/** The guard's `classify`: the attempt's outcome (an attempt never rejects). */
function classifyExchange(error: unknown, value: unknown): Outcome | undefined {
  return error === undefined ? (value as FetchExchange).outcome : undefined;
}

/**
 * Builds a limits-breaker guard (circuit breaker over a limiter) for `limitFetch({ guard })`. Pass
 * limits-breaker's `guard` function itself: limits-node-http does not import limits-breaker (an
 * optional peer dependency). Keep the guard to read its `state`, `stats()` and events, and to
 * `shutdown()` it.
 *
 * @param guardFn - `guard` from limits-breaker.
 * @param options - the guard's options, except `classify`. @default `{ timeoutMs: false }`
 * @throws TypeError when `guardFn` is not a function or `options` has `classify`; whatever
 *   `guard()` throws for a bad option.
 * @example
 * ```ts
 * import { guard } from 'limits-breaker';
 * const breaker = fetchGuard(guard, { probeSlots: 2, resetTimeout: 5_000 });
 * const api = limitFetch(fetch, { guard: breaker, timeoutMs: 2_000 });
 * ```
 */
export function fetchGuard(
  guardFn: typeof guard,
  options: FetchGuardOptions = {},
): LimitFetchGuard {
  if (typeof guardFn !== 'function') {
    throw new TypeError(
      `limits: fetchGuard(guard) needs limits-breaker's guard function, got ${formatValue(guardFn)}`,
    );
  }
  checkObject('options', options);
  if ((options as { classify?: unknown }).classify !== undefined) {
    throw new TypeError(
      'limits: fetchGuard sets the guard\'s "classify" itself; pass "classify" to limitFetch instead',
    );
  }
  const g = guardFn<[FetchAttempt], FetchExchange | Response>(fetchAction, {
    timeoutMs: false,
    ...options,
    classify: classifyExchange,
  });
  made.add(g);
  return g;
}

/** A fallback's answer must be a `Response`. */
export function asFallbackResponse(value: unknown): Response {
  if (typeof value === 'object' && value !== null && typeof (value as Response).status === 'number')
    return value as Response;
  throw new TypeError(
    `limits: a fetchGuard fallback must return a Response, got ${formatValue(value)}`,
  );
}
