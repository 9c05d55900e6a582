import type { MonotonicTime } from '../internal/MonotonicTime.js';
import type { Outcome } from '../permit/outcome.js';
import { Permit } from '../permit/Permit.js';
import {
  NEVER_ABORTED,
  onSettled,
  outcomeOf,
  promiseThen,
  type RunHooks,
} from './runUnderPermit.js';
import type { ServiceTime } from './ServiceTime.js';

/**
 * @internal `run()` at its cheapest, as a hand-written semaphore does it: for a call without options
 * (cost 1, no signal, no time limit, no kind) that is not timed, on a limiter whose algorithm learns
 * nothing from an untimed call (a fixed limit). Such a call's release needs nothing from its permit
 * but the outcome, so one pair of reaction functions serves every call: the task's own promise gets
 * them (`then(ok, fail)`), no promise or closure is made per call, and the caller gets the task's
 * promise itself (a queued caller's promise is resolved with it).
 * Reactions run in the order they were added, so the permit is back before the caller resumes.
 *
 * Kept because it pays where users look: without it a fixed `Limiter.run` took 1.7× the hand-written
 * semaphore's time sequentially in bench/overhead.mjs, against 1.0× with it.
 */
export class PlainRuns {
  readonly #hooks: RunHooks;
  readonly #release: (outcome: Outcome) => void;
  readonly #time: MonotonicTime;
  readonly #service: ServiceTime;
  /** What the task threw synchronously (taken at once by the caller of `#start`). */
  #thrown: unknown = undefined;
  readonly #ok = (value: unknown): void => {
    this.#settled(undefined, value);
  };
  readonly #fail = (error: unknown): void => {
    this.#settled(error ?? new Error('task rejected with undefined'), undefined);
  };

  /**
   * @param release - releases one untimed unit with an outcome (the limiter's release).
   * @param service - the service-time estimate a sampled lane run feeds (see `runLane`).
   */
  constructor(
    hooks: RunHooks,
    release: (outcome: Outcome) => void,
    time: MonotonicTime,
    service: ServiceTime,
  ) {
    this.#hooks = hooks;
    this.#release = release;
    this.#time = time;
    this.#service = service;
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
    this.runLane(task, resolve, false);
  }

  /**
   * Runs a lane request's `task` (its unit already counted); its caller's promise follows the task's.
   * @param sample - time this run for the service-time estimate (one grant in 32, as for a timed
   *   permit, but without one: a reaction of its own reads the clock when the task settles; granting
   *   the sampled runs as timed permits cost about a fifth of a 10,000-call burst's time).
   */
  runLane(
    task: (signal: AbortSignal) => unknown,
    resolve: (value: unknown) => void,
    sample: boolean,
  ): void {
    const start = sample ? this.#time.now() : Number.NaN;
    const promise = this.#start(task);
    if (promise !== undefined) {
      if (sample) {
        const done = () => this.#service.observe(this.#time.now() - start);
        promise.then(done, done);
      }
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
    // One of the shared reactions, once (see `onSettled`).
    if (promise.then === promiseThen) promise.then(this.#ok, this.#fail);
    else onSettled(promise, this.#ok, this.#fail);
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
