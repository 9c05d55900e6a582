/**
 * The request context: what a request carries from the door of a service (`loadShed`, or
 * `runWithContext`) to every call it makes on its way (`limitFetch`, `limitInterceptor`): its
 * deadline, its criticality, its attempt number, its cohort and a signal that aborts when its
 * client leaves. It lives in one `AsyncLocalStorage`, so code in between passes nothing along.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { CRITICALITIES, type Criticality, DEFAULT_CRITICALITY } from 'limits-core';
import {
  checkKeys,
  checkNumber,
  checkOneOf,
  checkSignal,
  checkString,
  formatValue,
} from 'limits-core/internal';

/**
 * What the request being served carries, as {@link currentContext} returns it: set by `loadShed`
 * for each request it admits (from the request's headers and its options), or by
 * {@link runWithContext}. Read-only: a call made on the request's behalf reads it, never changes it.
 */
export interface RequestContext {
  /**
   * When the request's time budget runs out, in ms on `performance.now()`; `undefined` without
   * one. Prefer {@link RequestContext.remainingMs}.
   */
  readonly deadline: number | undefined;
  /** How much the request matters (limits-core's `Criticality`). @default 'critical' */
  readonly criticality: Criticality;
  /** Which attempt of the request this is, an integer ≥ 1 (2 and more: a retry). @default 1 */
  readonly attempt: number;
  /** Whose request it is (a user or account id, for consistent shedding), or `undefined`. */
  readonly cohort: string | undefined;
  /**
   * Aborts when the request is no longer wanted: its client disconnected before the response was
   * sent, or the response closed early (for `runWithContext`: the `signal` given, if any). Calls
   * made on the request's behalf by `limitFetch` and `limitInterceptor` abort with it.
   */
  readonly signal: AbortSignal;
  /** Ms left before the deadline: `Infinity` without one, never negative. */
  remainingMs(): number;
}

/**
 * The one implementation of {@link RequestContext}: one object per request. Its signal is made only
 * when someone reads it (most requests never do); an abort before that is kept as a reason.
 */
export class Context implements RequestContext {
  readonly deadline: number | undefined;
  readonly criticality: Criticality;
  readonly attempt: number;
  readonly cohort: string | undefined;
  /** The signal given (`runWithContext`), or ours once made. */
  #signal: AbortSignal | undefined;
  #controller: AbortController | undefined = undefined;
  /** Why the request was given up, when that came before anyone read the signal. */
  #reason: unknown = undefined;

  constructor(
    deadline: number | undefined,
    criticality: Criticality,
    attempt: number,
    cohort: string | undefined,
    signal: AbortSignal | undefined,
  ) {
    this.deadline = deadline;
    this.criticality = criticality;
    this.attempt = attempt;
    this.cohort = cohort;
    this.#signal = signal;
  }

  get signal(): AbortSignal {
    let signal = this.#signal;
    if (signal === undefined) {
      if (this.#reason !== undefined) signal = AbortSignal.abort(this.#reason);
      else {
        this.#controller = new AbortController();
        signal = this.#controller.signal;
      }
      this.#signal = signal;
    }
    return signal;
  }

  remainingMs(): number {
    const deadline = this.deadline;
    return deadline === undefined ? Infinity : Math.max(0, deadline - performance.now());
  }

  /** The request is given up (its client left): the signal aborts with `reason`. */
  abort(reason: unknown): void {
    if (this.#signal === undefined) this.#reason ??= reason;
    else this.#controller?.abort(reason);
  }
}

const storage = new AsyncLocalStorage<Context>();

/**
 * The context of the request being served: inside a `loadShed`ed handler (and everything it awaits
 * or schedules), or inside {@link runWithContext}; `undefined` elsewhere.
 *
 * Events of streams and emitters run in the context of whoever emits them: read the context in the
 * handler, or consume a request body with `await` (`for await (const chunk of req)`), which keeps it.
 * @example
 * ```ts
 * const ctx = currentContext();
 * if (ctx !== undefined && ctx.remainingMs() < 50) return res.end('too late');
 * ```
 */
export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}

/** @internal The context in effect, as its implementation. */
export function activeContext(): Context | undefined {
  return storage.getStore();
}

/** @internal Runs `fn(arg)` inside `context`. */
export function runInContext<A, T>(context: Context, fn: (arg: A) => T, arg: A): T {
  return storage.run(context, fn, arg);
}

/** What {@link runWithContext} starts a context from; every field is optional. */
export interface RequestContextInit {
  /** The time budget from now, in ms: a number ≥ 0 (`Infinity`: none). Not with `deadline`. */
  timeoutMs?: number | undefined;
  /** The deadline, in ms on `performance.now()` (a finite number). Not with `timeoutMs`. */
  deadline?: number | undefined;
  /** One of limits-core's `CRITICALITIES`. @default the enclosing context's, else 'critical' */
  criticality?: Criticality | undefined;
  /** An integer ≥ 1. @default the enclosing context's, else 1 */
  attempt?: number | undefined;
  /** Whose work it is. @default the enclosing context's, else none */
  cohort?: string | undefined;
  /** Aborts the work. @default the enclosing context's signal, else one that never aborts */
  signal?: AbortSignal | undefined;
}

const INIT_KEYS = ['timeoutMs', 'deadline', 'criticality', 'attempt', 'cohort', 'signal'] as const;
const TIMEOUT_RANGE = { min: 0, allowInfinity: true };
const ATTEMPT_RANGE = { min: 1, integer: true };

/**
 * Runs `fn` inside a request context, for work that does not come through `loadShed` (a queue
 * worker, a scheduled job, a test): `limitFetch` and `limitInterceptor` then propagate it as they
 * do a `loadShed`ed request's. Inside another context, what `init` leaves out is inherited, and the
 * deadline is the earlier of the two; a `signal` given then replaces the enclosing one.
 * @param init - see {@link RequestContextInit}; every field is checked.
 * @param fn - the work; its return value (a promise included) is returned as is.
 * @throws TypeError/RangeError for a bad `init` field, naming it, before `fn` runs.
 * @example
 * ```ts
 * await runWithContext({ timeoutMs: 2_000, criticality: 'sheddable' }, async () => {
 *   await api('http://127.0.0.1:8080/report'); // sends x-request-timeout-ms ≤ 1990
 * });
 * ```
 */
export function runWithContext<T>(init: RequestContextInit, fn: () => T): T {
  if (init === undefined) {
    throw new TypeError('limits: runWithContext(init, fn) needs an init object, got undefined');
  }
  checkKeys('runWithContext', init, INIT_KEYS);
  if (typeof fn !== 'function') {
    throw new TypeError(
      `limits: runWithContext(init, fn) needs a function, got ${formatValue(fn)}`,
    );
  }
  const timeoutMs = checkNumber('timeoutMs', init.timeoutMs, Infinity, TIMEOUT_RANGE);
  const deadline = init.deadline;
  if (deadline !== undefined) {
    checkNumber('deadline', deadline, 0, {});
    if (init.timeoutMs !== undefined) {
      throw new TypeError('limits: runWithContext takes "timeoutMs" or "deadline", not both');
    }
  }
  // (Left out: inherited, so no default here.)
  const criticality =
    init.criticality === undefined
      ? undefined
      : checkOneOf('criticality', init.criticality, DEFAULT_CRITICALITY, CRITICALITIES);
  const attempt = checkNumber('attempt', init.attempt, 0, ATTEMPT_RANGE);
  const cohort = checkString('cohort', init.cohort);
  const signal = checkSignal('signal', init.signal);
  const outer = storage.getStore();
  let at = deadline ?? (timeoutMs === Infinity ? undefined : performance.now() + timeoutMs);
  const outerAt = outer?.deadline;
  if (outerAt !== undefined && (at === undefined || outerAt < at)) at = outerAt;
  const context = new Context(
    at,
    criticality ?? outer?.criticality ?? DEFAULT_CRITICALITY,
    attempt === 0 ? (outer?.attempt ?? 1) : attempt,
    cohort ?? outer?.cohort,
    signal ?? outer?.signal,
  );
  return storage.run(context, fn);
}
