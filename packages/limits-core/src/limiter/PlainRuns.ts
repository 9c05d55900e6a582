import type { Outcome } from '../permit/outcome.js';
import { Permit } from '../permit/Permit.js';
import { NEVER_ABORTED, outcomeOf, type RunHooks } from './runUnderPermit.js';

/**
 * @internal `run()` at its cheapest, as a hand-written semaphore does it: for a call without options
 * (cost 1, no signal, no budget, no kind) that is not timed, on a limiter whose algorithm learns
 * nothing from an untimed call (a fixed limit). Such a call's release needs nothing from its permit
 * but the outcome, so one pair of reaction functions serves every call: the task's own promise gets
 * them (`then(ok, fail)`), no promise or closure is made per call, and the caller gets the task's
 * promise itself (a queued caller's promise is resolved with it).
 * Reactions run in the order they were added, so the permit is back before the caller resumes.
 */
export class PlainRuns {
  readonly #hooks: RunHooks;
  readonly #release: (outcome: Outcome) => void;
  /** What the task threw synchronously (taken at once by the caller of `#start`). */
  #thrown: unknown = undefined;
  readonly #ok = (value: unknown): void => {
    this.#settled(undefined, value);
  };
  readonly #fail = (error: unknown): void => {
    this.#settled(error ?? new Error('task rejected with undefined'), undefined);
  };

  /** @param release - releases one untimed unit with an outcome (the limiter's release). */
  constructor(hooks: RunHooks, release: (outcome: Outcome) => void) {
    this.#hooks = hooks;
    this.#release = release;
  }

  /**
   * Runs `task` under a unit already counted (no permit object: nothing else could report on it).
   * A task that throws synchronously never started: its unit goes back at once, as `ignore`.
   */
  run(task: (signal: AbortSignal) => unknown): Promise<unknown> {
    const promise = this.#start(task);
    if (promise !== undefined) return promise;
    const thrown = this.#thrown;
    this.#thrown = undefined;
    return Promise.reject(thrown);
  }

  /** Runs a queued call's `task` under its granted `waiter`; its caller's promise follows the task's. */
  runQueued(
    waiter: Permit,
    task: (signal: AbortSignal) => unknown,
    resolve: (value: unknown) => void,
  ): void {
    // The waiter is spent: the shared reactions release its unit.
    Permit._detach(waiter);
    const promise = this.#start(task);
    if (promise !== undefined) {
      resolve(promise);
      return;
    }
    const thrown = this.#thrown;
    this.#thrown = undefined;
    resolve(Promise.reject(thrown));
  }

  #start(task: (signal: AbortSignal) => unknown): Promise<unknown> | undefined {
    let result: unknown;
    try {
      result = task(NEVER_ABORTED);
    } catch (error) {
      this.#thrown = error;
      this.#release('ignore');
      return undefined;
    }
    // The task's own promise when it returns a native one; a plain value or a thenable is wrapped.
    const promise = Promise.resolve(result);
    promise.then(this.#ok, this.#fail);
    return promise;
  }

  /** The task settled: classify (see `outcomeOf`) and release. */
  #settled(error: unknown, value: unknown): void {
    const outcome = outcomeOf(error, value, this.#hooks);
    try {
      this.#release(outcome);
    } catch (releaseError) {
      // Nothing may escape a reaction (it would be an unhandled rejection of a promise nobody holds).
      this.#hooks.onError(releaseError);
    }
  }
}
