/**
 * The guard of an HTTP call: a limits-breaker guard (a circuit breaker over a limiter) whose action is
 * one HTTP attempt and whose breaker judges the attempt's own outcome. {@link fetchGuard} builds it;
 * `limitFetch` and `limitInterceptor` both take it (one guard may serve both), and each hands
 * `guard.fire()` an {@link HttpAttempt} of its own.
 */
import type { AcquireOptions, Outcome } from 'limits-core';
import { checkObject, formatValue } from 'limits-core/internal';

/**
 * What the guard's action gets as its context: limits-breaker's `CallContext` (its `signal`, and
 * `hold()` to keep the permit while the body streams). Declared here, structurally, so that
 * limits-node-http's types do not need limits-breaker (an optional peer dependency).
 */
export interface FetchCallContext {
  readonly signal: AbortSignal;
  hold(): { release(outcome?: Outcome): void };
}

/**
 * How one attempt ended, as the guard's `classify` reads it: the attempt's outcome. An attempt never
 * rejects: a failed request is an attempt with its outcome.
 */
export interface AttemptOutcome {
  readonly outcome: Outcome;
}

/**
 * One HTTP attempt, as the guard's action runs it (one `limitFetch` attempt or one
 * `limitInterceptor` request): `run` sends the request under `ctx.signal` and resolves when its
 * headers arrive (or it failed), holding the permit with `ctx.hold()` while the body streams.
 */
export interface HttpAttempt {
  run(ctx: FetchCallContext): Promise<AttemptOutcome>;
  /**
   * What the attempt is worth to a limiter with `shedding`: the request context's criticality and
   * cohort and the attempt's number (`undefined` outside a request context, or with propagation off).
   */
  importance(): AcquireOptions | undefined;
}

/**
 * The action {@link fetchGuard} gives `guard()`: one attempt of a `limitFetch` call or of a
 * `limitInterceptor` request.
 */
export type FetchAction = (ctx: FetchCallContext, attempt: HttpAttempt) => Promise<AttemptOutcome>;

/**
 * A limits-breaker guard made by {@link fetchGuard}, for the `guard` option of `limitFetch` and of
 * `limitInterceptor` (what they use of it; the value is the full limits-breaker `Guard`). One guard
 * may serve both.
 */
export interface LimitFetchGuard {
  fire(attempt: HttpAttempt): Promise<unknown>;
}

/**
 * What {@link fetchGuard} needs of limits-breaker's `guard` function (typed structurally, so that
 * limits-node-http's types do not need limits-breaker): build a guard from an action and options.
 */
// biome-ignore lint/suspicious/noExplicitAny: any options type: `fetchGuard` reads the real one from `typeof guard`.
export type GuardFunction = (action: FetchAction, options?: any) => LimitFetchGuard;

/**
 * Options of {@link fetchGuard}: limits-breaker's `GuardOptions` without `classify` (`limitFetch` and
 * `limitInterceptor` classify), and with `attemptTimeoutMs` in place of the guard's `timeoutMs`: the
 * `timeoutMs` of `limitFetch` / `limitInterceptor` is the whole call's (the queue wait, every attempt
 * and the body), `attemptTimeoutMs` one attempt's. A
 * `fallback` must return a `Response` (e.g. from a cache); for `limitInterceptor` it may also return
 * `{ statusCode, headers?, body? }` (see its `guard` option).
 */
export type FetchGuardOptions<O> = Omit<O, 'classify' | 'timeoutMs'> & {
  /**
   * One attempt's time limit in ms, or `false` (the default): counted from the attempt's `fire()`,
   * the wait for the guard's permit included; when it runs out the guard answers with its fallback
   * (reason `timeout`) or a `CallTimeoutError` and aborts the request. The whole call's time limit
   * is the `timeoutMs` of `limitFetch` / `limitInterceptor`.
   * @default false
   */
  attemptTimeoutMs?: number | false;
};

const made = new WeakSet<object>();

/** Whether `value` was made by {@link fetchGuard}. */
export function isHttpGuard(value: unknown): value is LimitFetchGuard {
  return typeof value === 'object' && value !== null && made.has(value);
}

/** The guard's action: one attempt. */
function runAttempt(ctx: FetchCallContext, attempt: HttpAttempt): Promise<AttemptOutcome> {
  return attempt.run(ctx);
}

/** The guard's `classify`: the attempt's outcome (an attempt never rejects). */
function attemptOutcome(error: unknown, value: unknown): Outcome | undefined {
  return error === undefined ? (value as AttemptOutcome).outcome : undefined;
}

/**
 * Builds a limits-breaker guard (circuit breaker over a limiter) for `limitFetch({ guard })` and
 * `limitInterceptor({ guard })` (one builder for both; one guard may serve both). Pass
 * limits-breaker's `guard` function itself: limits-node-http does not import limits-breaker (an
 * optional peer dependency). Keep the guard to read its `state`, `stats()` and events, and to
 * `shutdown()` it.
 *
 * @param guardFn - `guard` from limits-breaker (typed structurally: any function that builds a
 *   guard from an action and options).
 * @param options - the guard's options (limits-breaker's `GuardOptions`), except `classify`, and
 *   with `attemptTimeoutMs` in place of `timeoutMs` (checked by `guard()` as its `timeoutMs`).
 * @returns the guard, with limits-breaker's own type (`Guard`).
 * @throws TypeError when `guardFn` is not a function or `options` has `classify` or `timeoutMs`; whatever
 *   `guard()` throws for a bad option.
 * @example
 * ```ts
 * import { guard } from 'limits-breaker';
 * const breaker = fetchGuard(guard, { probeSlots: 2, resetTimeout: 5_000 });
 * const api = limitFetch(fetch, { guard: breaker, timeoutMs: 2_000 });
 * const agent = new Agent().compose(limitInterceptor({ guard: breaker, timeoutMs: 2_000 }));
 * ```
 */
export function fetchGuard<F extends GuardFunction>(
  guardFn: F,
  options?: FetchGuardOptions<NonNullable<Parameters<F>[1]>>,
): ReturnType<F> {
  if (typeof guardFn !== 'function') {
    throw new TypeError(
      `limits: fetchGuard(guard) needs limits-breaker's guard function, got ${formatValue(guardFn)}`,
    );
  }
  checkObject('options', options);
  const { attemptTimeoutMs, ...given } = (options ?? {}) as {
    attemptTimeoutMs?: unknown;
    classify?: unknown;
    timeoutMs?: unknown;
  };
  if (given.classify !== undefined) {
    throw new TypeError(
      'limits: fetchGuard sets the guard\'s "classify" itself; pass "classify" to limitFetch or limitInterceptor instead',
    );
  }
  if (given.timeoutMs !== undefined) {
    throw new TypeError(
      'limits: fetchGuard does not take "timeoutMs": the whole call\'s time limit is the "timeoutMs" of limitFetch or limitInterceptor, and one attempt\'s is "attemptTimeoutMs"',
    );
  }
  const acquire = (given as { acquire?: unknown }).acquire;
  if (acquire !== undefined && (acquire === null || typeof acquire !== 'object')) {
    throw new TypeError(
      `limits: fetchGuard's "acquire" must be acquire options (an object), got ${formatValue(acquire)}`,
    );
  }
  const g = guardFn(runAttempt, {
    ...given,
    timeoutMs: attemptTimeoutMs ?? false,
    classify: attemptOutcome,
    // Each attempt's criticality, cohort and number, over the options given.
    acquire: (attempt: HttpAttempt): AcquireOptions | undefined => {
      const own = attempt.importance();
      if (own === undefined) return acquire as AcquireOptions | undefined;
      return acquire === undefined ? own : { ...(acquire as AcquireOptions), ...own };
    },
  } as never) as ReturnType<F>;
  made.add(g);
  return g;
}
