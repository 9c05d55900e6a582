import { type Classify, defaultClassify, type Outcome } from './outcome.js';
import type { Permit } from './Permit.js';

/** A signal that never aborts, handed to tasks run without one (no allocation per call). */
export const NEVER_ABORTED: AbortSignal = new AbortController().signal;

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
 * with `ignore` (before this function returns).
 */
export async function runUnderPermit<T>(
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
    throw error;
  }
  let value: T;
  try {
    value = await result;
  } catch (error) {
    settle(permit, error ?? new Error('task rejected with undefined'), undefined, hooks);
    throw error;
  }
  settle(permit, undefined, value, hooks);
  return value;
}

/**
 * @internal `runUnderPermit` for a queued `run()`: the caller's promise already exists, so the
 * task's result settles it through `resolve` (with the value, or with a rejected promise) instead of
 * through a second promise it would have to adopt (two microtask turns more per call).
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
  void follow(permit, result, hooks, resolve);
}

async function follow(
  permit: Permit,
  result: unknown,
  hooks: RunHooks,
  resolve: (value: unknown) => void,
): Promise<void> {
  let value: unknown;
  let error: unknown;
  let failed = false;
  try {
    value = await result;
  } catch (e) {
    failed = true;
    error = e;
  }
  // As in runUnderPermit, an error while reporting the outcome (a failing `onSettled` hook) becomes
  // the caller's error rather than an unhandled rejection of this function with the caller waiting.
  try {
    settle(
      permit,
      failed ? (error ?? new Error('task rejected with undefined')) : undefined,
      value,
      hooks,
    );
  } catch (settleError) {
    resolve(Promise.reject(settleError));
    return;
  }
  resolve(failed ? Promise.reject(error) : value);
}

/** Reports how the task ended on its permit; `error` is `undefined` when it resolved. */
function settle(permit: Permit, error: unknown, result: unknown, hooks: RunHooks): void {
  if (error === undefined && hooks.classify === undefined && hooks.onSettled === undefined) {
    permit.success(); // the common case, without classifying
    return;
  }
  hooks.onSettled?.();
  let outcome: Outcome | undefined;
  if (hooks.classify !== undefined) {
    try {
      outcome = hooks.classify(error, result);
    } catch (classifyError) {
      hooks.onError(classifyError);
    }
  }
  outcome ??= defaultClassify(error);
  if (outcome === 'success') permit.success();
  else if (outcome === 'dropped') permit.dropped();
  else permit.ignore();
}
