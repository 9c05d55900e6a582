/**
 * The guard of a gRPC call: a limits-breaker guard (a circuit breaker over a limiter) whose action is
 * one gRPC call and whose breaker judges the call's outcome. {@link grpcGuard} builds it;
 * {@link limitGrpcClient} takes it as `guard`.
 */
import type { AcquireOptions, Outcome } from 'limits-core';
import { checkObject, formatValue } from 'limits-core/internal';

/**
 * What the guard's action gets as its context: limits-breaker's `CallContext` (its `signal`).
 * Declared here, structurally, so that limits-grpc's types do not need limits-breaker (an optional
 * peer dependency).
 */
export interface GrpcCallContext {
  readonly signal: AbortSignal;
}

/** How one call ended, as the guard's `classify` reads it: its outcome. The action never rejects. */
export interface GrpcCallOutcome {
  readonly outcome: Outcome;
}

/**
 * One gRPC call as the guard's action runs it: `run` starts the call (the guard has granted its
 * permit) and resolves when its status arrives, with the call's outcome.
 */
export interface GrpcAttempt {
  run(ctx: GrpcCallContext): Promise<GrpcCallOutcome>;
  /** The call's acquire options: its time left before its deadline, its criticality. */
  acquireOptions(): AcquireOptions | undefined;
}

/** The action {@link grpcGuard} gives `guard()`: one call. */
export type GrpcAction = (ctx: GrpcCallContext, attempt: GrpcAttempt) => Promise<GrpcCallOutcome>;

/**
 * A limits-breaker guard made by {@link grpcGuard}, for the `guard` option of
 * {@link limitGrpcClient} (what it uses of it; the value is the full limits-breaker `Guard`).
 */
export interface GrpcGuard {
  fire(attempt: GrpcAttempt): Promise<unknown>;
}

/**
 * What {@link grpcGuard} needs of limits-breaker's `guard` function (typed structurally): build a
 * guard from an action and options.
 */
// biome-ignore lint/suspicious/noExplicitAny: any options type: `grpcGuard` reads the real one from `typeof guard`.
export type GuardFunction = (action: GrpcAction, options?: any) => GrpcGuard;

/**
 * Options of {@link grpcGuard}: limits-breaker's `GuardOptions` without `classify` (the interceptor
 * classifies), `fallback` (a gRPC call is answered by its status) and `acquire` (each call's
 * deadline and criticality are its own), and with `attemptTimeoutMs` in place of `timeoutMs`.
 */
export type GrpcGuardOptions<O> = Omit<O, 'classify' | 'timeoutMs' | 'fallback' | 'acquire'> & {
  /**
   * One call's time limit in ms from `fire()` (the wait for the guard's permit included), or
   * `false` (the default: the call's own gRPC deadline is its limit). When it runs out the guard
   * cancels the call.
   * @default false
   */
  attemptTimeoutMs?: number | false;
};

const made = new WeakSet<object>();

/** Whether `value` was made by {@link grpcGuard}. */
export function isGrpcGuard(value: unknown): value is GrpcGuard {
  return typeof value === 'object' && value !== null && made.has(value);
}

function runAttempt(ctx: GrpcCallContext, attempt: GrpcAttempt): Promise<GrpcCallOutcome> {
  return attempt.run(ctx);
}

function attemptOutcome(error: unknown, value: unknown): Outcome | undefined {
  return error === undefined ? (value as GrpcCallOutcome).outcome : undefined;
}

function attemptAcquire(attempt: GrpcAttempt): AcquireOptions | undefined {
  return attempt.acquireOptions();
}

/**
 * Builds a limits-breaker guard (a circuit breaker over a limiter) for
 * `limitGrpcClient({ guard })`. Pass limits-breaker's `guard` function itself: limits-grpc does not
 * import limits-breaker (an optional peer dependency). Keep the guard to read its `state`, `stats()`
 * and events, and to `shutdown()` it.
 *
 * @param guardFn - `guard` from limits-breaker.
 * @param options - the guard's options, except `classify`, `fallback` and `acquire`, and with
 *   `attemptTimeoutMs` in place of `timeoutMs` (checked by `guard()` as its `timeoutMs`).
 * @returns the guard, with limits-breaker's own type (`Guard`).
 * @throws TypeError when `guardFn` is not a function or `options` has `classify`, `fallback`,
 *   `acquire` or `timeoutMs`; whatever `guard()` throws for a bad option.
 * @example
 * ```ts
 * import { guard } from 'limits-breaker';
 * const breaker = grpcGuard(guard, { probeSlots: 2, resetTimeout: 5_000 });
 * const client = new Client(address, credentials, { interceptors: [limitGrpcClient({ guard: breaker })] });
 * ```
 */
export function grpcGuard<F extends GuardFunction>(
  guardFn: F,
  options?: GrpcGuardOptions<NonNullable<Parameters<F>[1]>>,
): ReturnType<F> {
  if (typeof guardFn !== 'function') {
    throw new TypeError(
      `limits: grpcGuard(guard) needs limits-breaker's guard function, got ${formatValue(guardFn)}`,
    );
  }
  checkObject('options', options);
  const { attemptTimeoutMs, ...given } = (options ?? {}) as Record<string, unknown>;
  for (const name of ['classify', 'fallback', 'acquire', 'timeoutMs']) {
    if (given[name] !== undefined) {
      throw new TypeError(
        `limits: grpcGuard does not take "${name}": ${
          name === 'timeoutMs'
            ? 'one call\'s time limit is "attemptTimeoutMs" (and its gRPC deadline)'
            : name === 'classify'
              ? 'pass "classify" to limitGrpcClient instead'
              : name === 'fallback'
                ? 'a gRPC call is answered by its status'
                : "each call's deadline and criticality are its acquire options"
        }`,
      );
    }
  }
  const g = guardFn(runAttempt, {
    ...given,
    timeoutMs: attemptTimeoutMs ?? false,
    classify: attemptOutcome,
    acquire: attemptAcquire,
  } as never) as ReturnType<F>;
  made.add(g);
  return g;
}
