import type { Outcome } from '../permit/outcome.js';
import {
  NEVER_ABORTED,
  onSettled,
  outcomeOf,
  promiseThen,
  type RunHooks,
} from './runUnderPermit.js';

/** Free slots kept for reuse (more in flight at once are made, and dropped when they come back). */
const KEEP = 128;

/**
 * @internal `run()` without options, granted at once, where the plain path ({@link PlainRuns}) does
 * not apply: a timed grant, or an adaptive algorithm (whose drops need the call's in-flight count).
 * It does what `runUnderPermit` does for a permit, without a permit object or two closures per call:
 * a slot keeps the call's start time and in-flight count, and has its own pair of reactions, made
 * once. Exactly one of them runs, once, when the task settles; the slot then goes back to the pool
 * and a later call reuses it. (A closure made per call also cost V8 a `CompileLazy` at its first
 * and only call.)
 * Reactions run in the order they were added, so the unit is back before the caller resumes.
 *
 * Kept because it pays where users look: without it the Vegas `Limiter.run` rows of
 * bench/overhead.mjs took about a fifth longer (2.9× the semaphore sequentially against 2.4×, 5.5×
 * against 4.4× for 10,000 at once).
 */
export class RunSlots {
  readonly #free: RunSlot[] = [];
  readonly #hooks: RunHooks;
  readonly #release: (startTime: number, inflight: number, outcome: Outcome) => void;

  /** @param release - gives one unit back, as a permit with this start time and in-flight count would. */
  constructor(
    hooks: RunHooks,
    release: (startTime: number, inflight: number, outcome: Outcome) => void,
  ) {
    this.#hooks = hooks;
    this.#release = release;
  }

  /**
   * Runs `task` under a unit already counted, granted at `startTime` (`NaN`: untimed) with `inflight`
   * units in flight. A task that throws synchronously never started: its unit goes back at once, as
   * `ignore`. The caller gets the task's own promise (a plain value or a thenable wrapped in one).
   */
  run(
    task: (signal: AbortSignal) => unknown,
    startTime: number,
    inflight: number,
  ): Promise<unknown> {
    let result: unknown;
    try {
      result = task(NEVER_ABORTED);
    } catch (error) {
      this.#release(startTime, inflight, 'ignore');
      return Promise.reject(error);
    }
    const slot = this.#free.pop() ?? new RunSlot(this);
    slot.startTime = startTime;
    slot.inflight = inflight;
    const promise = Promise.resolve(result);
    // One of them, once: the slot is reused after it (see `onSettled`).
    if (promise.then === promiseThen) promise.then(slot.ok, slot.fail);
    else onSettled(promise, slot.ok, slot.fail);
    return promise;
  }

  /** @internal A slot's task settled (`error` is `undefined` when it resolved): release its unit. */
  _settled(slot: RunSlot, error: unknown, value: unknown): void {
    const startTime = slot.startTime;
    const inflight = slot.inflight;
    if (this.#free.length < KEEP) this.#free.push(slot);
    const hooks = this.#hooks;
    try {
      // (The common case without classifying, as `runUnderPermit` does.)
      const outcome =
        error === undefined && hooks.classify === undefined
          ? 'success'
          : outcomeOf(error, value, hooks);
      this.#release(startTime, inflight, outcome);
    } catch (releaseError) {
      // Nothing may escape a reaction (it would be an unhandled rejection of a promise nobody holds).
      hooks.onError(releaseError);
    }
  }
}

/** @internal One call's state while its task runs, and the reactions that end it. */
class RunSlot {
  /** The grant's start time on the limiter's clock (`NaN`: untimed). A double from the start. */
  startTime = Number.NaN;
  /** Units in flight when it was granted. */
  inflight = 0;
  readonly ok: (value: unknown) => void;
  readonly fail: (error: unknown) => void;

  constructor(owner: RunSlots) {
    this.ok = (value) => owner._settled(this, undefined, value);
    this.fail = (error) =>
      owner._settled(this, error ?? new Error('task rejected with undefined'), undefined);
  }
}
