import { EventEmitter } from 'eventemitter3';
import type { Clock } from '../internal/clock.js';
import { formatValue } from '../internal/validate.js';
import { emitSafely, listeners, reportListenerError } from '../limiter/emit.js';
import { fullJitterDelay } from './backoff.js';
import type { RetryEvents } from './events.js';
import { isRefusal } from './isRefusal.js';
import {
  type AttemptResult,
  checkRun,
  type ResolvedRetryOptions,
  type RetryOptions,
  type RetryRunOptions,
  type RetryStats,
  type RunArguments,
  resolveRetryOptions,
} from './options.js';

/** `#decide`'s answer when the call ends on the attempt's result. */
const DONE = -1;

/**
 * Retries a call: up to `maxAttempts` attempts, exponential backoff with full jitter between them,
 * a `Retry-After` honoured as the minimum wait, and an optional shared {@link RetryBudget} that
 * caps retries to a share of recent requests. Usable around any async call (an HTTP request, a
 * database query).
 *
 * Rules:
 * - a refusal ({@link isRefusal}: the limiter refused, or the circuit is open) is never retried,
 *   whatever `retryIf` says: the call rejects with it at once;
 * - nor is an error whose `retryable` property is `false`: the downstream said not to retry (e.g. an
 *   HTTP client's error for a response that carried a "do not retry" signal);
 * - each call records one request in the budget; each retry must be paid for by it
 *   (`tryRetry()`), else the last result is the call's result and `budget_exhausted` is emitted;
 * - the caller's `signal` ends the wait between attempts at once (the timer is cleared) and stops
 *   further attempts;
 * - a task that throws synchronously counts as an attempt that rejected;
 * - a value thrown away because it is retried goes to `discard` (e.g. to cancel a response body).
 *
 * Events (eventemitter3): `retry` ({@link RetryEvent}), `budget_exhausted`
 * ({@link BudgetExhaustedEvent}), `error` (a listener or `discard` threw; never breaks the call).
 *
 * @example
 * ```ts
 * const policy = new RetryPolicy({ maxAttempts: 3, budget: new RetryBudget() });
 * const rows = await policy.run((attempt, signal) => db.query(sql, { signal }), { signal });
 * ```
 */
export class RetryPolicy extends EventEmitter<RetryEvents> {
  readonly #o: ResolvedRetryOptions;
  #calls = 0;
  #attempts = 0;
  #retries = 0;
  #refusedByBudget = 0;
  #exhausted = 0;

  /**
   * @param options - see {@link RetryOptions}; every option is checked here.
   * @throws TypeError for an unknown key (with the nearest valid name) or a value of the wrong
   *   type; RangeError for a value out of range.
   */
  constructor(options: RetryOptions = {}) {
    super();
    this.#o = resolveRetryOptions(options);
  }

  /**
   * Runs `task` until an attempt's result is final (see the class rules and
   * {@link RetryRunOptions.retryIf}) and returns (or throws) that result.
   * @param task - one attempt: gets the attempt number (1 for the first) and the caller's signal.
   * @param options - `signal`, `retryIf`, `discard`.
   * @returns the final attempt's value; rejects with its error, with `signal.reason` when the
   *   signal aborts during a wait, or with a TypeError for bad arguments (never a synchronous throw).
   */
  run<T>(
    task: (attempt: number, signal: AbortSignal | undefined) => Promise<T>,
    options?: RetryRunOptions<T>,
  ): Promise<T> {
    let args: RunArguments<T>;
    try {
      args = checkRun(task, options);
    } catch (error) {
      return Promise.reject(error);
    }
    if (args.signal?.aborted) return Promise.reject(args.signal.reason);
    return this.#loop(task, args);
  }

  /** Counters since the policy was made (a fresh object per call). */
  stats(): RetryStats {
    return {
      calls: this.#calls,
      attempts: this.#attempts,
      retries: this.#retries,
      refusedByBudget: this.#refusedByBudget,
      exhausted: this.#exhausted,
    };
  }

  async #loop<T>(
    task: (attempt: number, signal: AbortSignal | undefined) => Promise<T>,
    args: RunArguments<T>,
  ): Promise<T> {
    const { signal } = args;
    this.#calls++;
    this.#o.budget?.recordRequest();
    for (let attempt = 1; ; attempt++) {
      this.#attempts++;
      const result = await settle(task, attempt, signal);
      const delayMs = this.#decide(result, attempt, args);
      if (delayMs === DONE) {
        if (result.ok) return result.value;
        throw result.error;
      }
      await wait(this.#o.clock, delayMs, signal);
    }
  }

  /**
   * What follows `attempt`: {@link DONE}, or the delay before the next attempt (then the retry is
   * already counted, paid for, announced and its value discarded).
   * @throws the error of a `retryIf` that throws, or a TypeError for a bad `retryIf` answer.
   */
  #decide<T>(result: AttemptResult<T>, attempt: number, args: RunArguments<T>): number {
    if (args.signal?.aborted || (!result.ok && (isRefusal(result.error) || final(result.error)))) {
      return DONE;
    }
    const verdict = args.retryIf === undefined ? !result.ok : this.#ask(result, attempt, args);
    if (verdict === false) return DONE;
    const o = this.#o;
    if (attempt >= o.maxAttempts) {
      this.#exhausted++;
      return DONE;
    }
    let delayMs = fullJitterDelay(attempt, o.baseDelayMs, o.maxDelayMs, o.random);
    if (verdict !== true) {
      if (verdict > o.maxDelayMs) return DONE;
      delayMs = Math.max(verdict, delayMs);
    }
    if (o.budget !== undefined && !o.budget.tryRetry()) {
      this.#refusedByBudget++;
      if (listeners<RetryEvents>(this).budget_exhausted !== undefined) {
        emitSafely<RetryEvents, 'budget_exhausted'>(this, 'budget_exhausted', { attempt });
      }
      return DONE;
    }
    this.#retries++;
    if (result.ok) this.#discard(result.value, args);
    if (listeners<RetryEvents>(this).retry !== undefined) {
      emitSafely<RetryEvents, 'retry'>(
        this,
        'retry',
        result.ok
          ? { attempt, delayMs, value: result.value }
          : { attempt, delayMs, error: result.error },
      );
    }
    return delayMs;
  }

  /**
   * `retryIf`'s answer, checked: `true`, `false` or a number of ms ≥ 0.
   * @throws its own error, or a TypeError for another answer (the value, if any, is discarded).
   */
  #ask<T>(result: AttemptResult<T>, attempt: number, args: RunArguments<T>): boolean | number {
    let verdict: unknown;
    try {
      verdict = (args.retryIf as NonNullable<RunArguments<T>['retryIf']>)(result, attempt);
    } catch (error) {
      if (result.ok) this.#discard(result.value, args);
      throw error;
    }
    if (typeof verdict === 'boolean' || (typeof verdict === 'number' && verdict >= 0)) {
      return verdict;
    }
    if (result.ok) this.#discard(result.value, args);
    throw new TypeError(
      `limits: retryIf must return true, false or a number of ms ≥ 0, got ${formatValue(verdict)}`,
    );
  }

  /** Hands a value thrown away to `discard`; a `discard` that throws is reported, never thrown. */
  #discard<T>(value: T, args: RunArguments<T>): void {
    if (args.discard === undefined) return;
    try {
      args.discard(value);
    } catch (error) {
      reportListenerError<RetryEvents>(this, error);
    }
  }
}

/** Whether `error` says it must not be retried (`retryable: false`). */
function final(error: unknown): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { retryable?: unknown }).retryable === false
  );
}

/** One attempt's result; a task that throws synchronously counts as one that rejected. */
async function settle<T>(
  task: (attempt: number, signal: AbortSignal | undefined) => Promise<T>,
  attempt: number,
  signal: AbortSignal | undefined,
): Promise<AttemptResult<T>> {
  try {
    return { ok: true, value: await task(attempt, signal) };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * Waits `ms` on `clock`; an abort of `signal` rejects at once with `signal.reason` and clears the
 * timer, and the abort listener is removed when the timer fires: nothing outlives the wait.
 */
function wait(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal === undefined) {
      clock.setTimeout(resolve, ms);
      return;
    }
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(handle);
      reject(signal.reason);
    };
    const handle = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
