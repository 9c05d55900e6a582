import type { Clock } from '../internal/clock.js';
import { type Classify, defaultClassify, OUTCOMES, type Outcome } from '../permit/outcome.js';
import type { Permit } from '../permit/Permit.js';

/**
 * The signal handed to a task that can never be aborted (no caller `signal`, no time limit): a
 * real `AbortSignal` that never aborts and whose `addEventListener`/`removeEventListener` do
 * nothing, so the listeners every task adds (`fetch` adds one per call) are not kept on this one
 * shared object (they could never fire anyway). Creating a signal per task instead costs about 2 µs
 * on Node 20 (measured; a bare limited call costs about 0.1 µs), and even deciding per call whether the
 * task can read one (`task.length`, an accessor V8 does not inline) cost 10–20 ns per `run()`.
 */
export const NEVER_ABORTED: AbortSignal = inert(new AbortController().signal);

function inert(signal: AbortSignal): AbortSignal {
  const noop = { value: () => {}, writable: false, enumerable: false, configurable: false };
  Object.defineProperty(signal, 'addEventListener', noop);
  Object.defineProperty(signal, 'removeEventListener', noop);
  Object.defineProperty(signal, 'onabort', {
    get: () => null,
    set: () => {},
    enumerable: false,
    configurable: false,
  });
  return signal;
}

/** @internal The native `then` (see {@link onSettled}). */
export const promiseThen = Promise.prototype.then;

/**
 * @internal The shared or reused reactions of `PlainRuns` and `RunSlots` must run once, one of them
 * (else a unit is released twice). The native `then` guarantees it; a native promise with an own
 * `then` (an override that could call one twice) does not. The callers check `promise.then ===
 * promiseThen` in line (about 50 machine instructions per call; a call to a helper for the check
 * cost more) and call this otherwise: `promise` is followed through a fresh promise, whose resolve
 * functions act once, and `ok` or `fail` runs a few microtasks after the caller's own reactions.
 */
export function onSettled(
  promise: Promise<unknown>,
  ok: (value: unknown) => void,
  fail: (error: unknown) => void,
): void {
  new Promise((resolve) => resolve(promise)).then(ok, fail);
}

/** @internal What `runUnderPermit` needs from the limiter. */
export interface RunHooks {
  classify: Classify | undefined;
  /** Reports an error thrown by `classify` (listener-error path). */
  onError(error: unknown): void;
  /** Called when the task settled, before the permit is released (e.g. to observe its cost). */
  onSettled?: (() => void) | undefined;
}

/**
 * @internal Calls `task(signal)` under `permit` and reports the outcome on the permit when the task
 * really settles. A synchronous throw means the task never started: the permit is released at once
 * with `ignore` (before this function returns). The caller gets the task's own promise (a plain
 * value or a thenable wrapped in one); the permit is reported by a reaction added before the caller
 * can add its own, so it is back before the caller resumes. Two closures per call: cheaper than an
 * `async` function's frame and promise.
 */
export function runUnderPermit<T>(
  permit: Permit,
  task: (signal: AbortSignal) => T | PromiseLike<T>,
  signal: AbortSignal | undefined,
  hooks: RunHooks,
): Promise<T> {
  let result: T | PromiseLike<T>;
  try {
    result = task(signal ?? NEVER_ABORTED);
  } catch (error) {
    permit.ignore();
    return Promise.reject(error);
  }
  const promise = Promise.resolve(result);
  promise.then(
    (value) => settleOrReport(permit, undefined, value, hooks),
    (error: unknown) => settleOrReport(permit, rejection(error), undefined, hooks),
  );
  return promise;
}

/**
 * @internal `runUnderPermit` for a queued `run()`: the caller's promise already exists, so the
 * task's result settles it through `resolve` (with the value, or with a rejected promise) once the
 * permit is reported.
 */
export function runQueued(
  permit: Permit,
  task: (signal: AbortSignal) => unknown,
  signal: AbortSignal | undefined,
  hooks: RunHooks,
  resolve: (value: unknown) => void,
): void {
  let result: unknown;
  try {
    result = task(signal ?? NEVER_ABORTED);
  } catch (error) {
    permit.ignore();
    resolve(Promise.reject(error));
    return;
  }
  Promise.resolve(result).then(
    (value) => answer(permit, false, undefined, value, hooks, resolve),
    (error: unknown) => answer(permit, true, error, undefined, hooks, resolve),
  );
}

/** What a rejection reports as the task's error (`undefined` is no error for classification). */
function rejection(error: unknown): unknown {
  return error ?? new Error('task rejected with undefined');
}

/** Reports the outcome; an error while doing so is reported like a listener's (no unhandled rejection). */
function settleOrReport(permit: Permit, error: unknown, value: unknown, hooks: RunHooks): void {
  try {
    settle(permit, error, value, hooks);
  } catch (settleError) {
    hooks.onError(settleError);
  }
}

/**
 * Reports a settled task's outcome on its permit, then answers the caller through `resolve`. An
 * error while reporting the outcome becomes the caller's error rather than an unhandled rejection
 * with the caller waiting.
 */
function answer(
  permit: Permit,
  failed: boolean,
  error: unknown,
  value: unknown,
  hooks: RunHooks,
  resolve: (value: unknown) => void,
): void {
  try {
    settle(permit, failed ? rejection(error) : undefined, value, hooks);
  } catch (settleError) {
    resolve(Promise.reject(settleError));
    return;
  }
  resolve(failed ? Promise.reject(error) : value);
}

/**
 * @internal The per-task state of a `run()` with a time limit or a caller `signal`: the task's own
 * `AbortController` (when the task declares a parameter), the caller's signal it follows, and the
 * deadline timer on the limiter's clock. It is its own abort listener on the caller's signal.
 */
class TaskScope {
  controller: AbortController | undefined = undefined;
  timer: unknown = undefined;
  /** The deadline passed: the caller got the `TimeoutError`, the permit is released as `dropped`. */
  timedOut = false;
  /** Clock ms at which the time limit runs out (`Infinity`: no time limit). */
  dueAt = Infinity;
  constructor(
    readonly permit: Permit,
    readonly caller: AbortSignal | undefined,
    readonly clock: Clock,
    readonly hooks: RunHooks,
    readonly resolve: (value: unknown) => void,
  ) {}

  /** The caller's signal aborted: so does the task's. */
  handleEvent(): void {
    this.controller?.abort(this.caller?.reason);
  }

  readonly onTimeout = (): void => {
    this.timer = undefined;
    this.timedOut = true;
    const reason = new DOMException('limits: the time limit of this run() ran out', 'TimeoutError');
    this.controller?.abort(reason);
    this.resolve(Promise.reject(reason));
  };

  /** The task settled: stop following the caller and the clock. */
  end(): void {
    if (this.timer !== undefined) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.controller !== undefined) this.caller?.removeEventListener('abort', this);
  }
}

/**
 * @internal `runQueued` for a run with a time limit (`timeoutMs`, from now; `Infinity` for none) or a
 * caller `signal`. The task gets a signal of its own that follows the caller's and aborts with a
 * `TimeoutError` (a `DOMException`, as `AbortSignal.timeout()` gives) when the time limit runs out; the
 * caller's promise then rejects at once with that reason, while the permit stays held until the task
 * really settles and is then released as `dropped`. The task's own signal is created only when the
 * task declares a parameter (`task.length > 0`): it costs about 2 µs on Node 20. A task declaring none
 * receives the caller's signal (or the never-aborting one) and is still bounded by the time limit.
 */
export function runTimed(
  permit: Permit,
  task: (signal: AbortSignal) => unknown,
  caller: AbortSignal | undefined,
  timeoutMs: number,
  clock: Clock,
  hooks: RunHooks,
  resolve: (value: unknown) => void,
): void {
  const scope = new TaskScope(permit, caller, clock, hooks, resolve);
  if (timeoutMs !== Infinity) scope.dueAt = clock.now() + Math.max(0, timeoutMs);
  let signal = caller ?? NEVER_ABORTED;
  if (task.length > 0) {
    const controller = new AbortController();
    scope.controller = controller;
    signal = controller.signal;
    if (caller !== undefined) {
      if (caller.aborted) controller.abort(caller.reason);
      else caller.addEventListener('abort', scope);
    }
  }
  if (timeoutMs !== Infinity)
    scope.timer = clock.setTimeout(scope.onTimeout, Math.max(0, timeoutMs));
  let result: unknown;
  try {
    result = task(signal);
  } catch (error) {
    scope.end();
    permit.ignore();
    if (!scope.timedOut) resolve(Promise.reject(error));
    return;
  }
  void followScoped(scope, result);
}

async function followScoped(scope: TaskScope, result: unknown): Promise<void> {
  let value: unknown;
  let error: unknown;
  let failed = false;
  try {
    value = await result;
  } catch (e) {
    failed = true;
    error = e;
  }
  // The deadline timer may not have fired yet although its time has passed: when the event loop runs
  // late, Node fires all due timers of one duration list before the next list, so a task's own later
  // timer can settle it first. The deadline is what counts, not which callback ran first.
  if (!scope.timedOut && scope.timer !== undefined && scope.clock.now() >= scope.dueAt) {
    scope.clock.clearTimeout(scope.timer);
    scope.onTimeout();
  }
  scope.end();
  if (scope.timedOut) {
    // The caller already has its TimeoutError; the call ran past its time limit: a congestion signal.
    try {
      scope.hooks.onSettled?.();
    } catch (hookError) {
      scope.hooks.onError(hookError);
    }
    scope.permit.dropped();
    return;
  }
  answer(scope.permit, failed, error, value, scope.hooks, scope.resolve);
}

/** Reports how the task ended on its permit; `error` is `undefined` when it resolved. */
function settle(permit: Permit, error: unknown, result: unknown, hooks: RunHooks): void {
  if (error === undefined && hooks.classify === undefined && hooks.onSettled === undefined) {
    permit.success(); // the common case, without classifying
    return;
  }
  // A plug-in's error (a cost estimator's `observe`) must not keep the permit: reported, then on.
  try {
    hooks.onSettled?.();
  } catch (hookError) {
    hooks.onError(hookError);
  }
  permit.release(outcomeOf(error, result, hooks));
}

/**
 * @internal How a settled task counts: the `classify` hook's answer (one that throws is reported and
 * ignored), else {@link defaultClassify}. `error` is `undefined` when the task resolved.
 */
export function outcomeOf(error: unknown, result: unknown, hooks: RunHooks): Outcome {
  let outcome: Outcome | undefined;
  if (hooks.classify !== undefined) {
    try {
      outcome = hooks.classify(error, result);
    } catch (classifyError) {
      hooks.onError(classifyError);
    }
  }
  if (outcome === undefined) return defaultClassify(error);
  // An answer that is not an outcome says nothing of the call: `ignore`.
  return OUTCOMES.includes(outcome) ? outcome : 'ignore';
}
