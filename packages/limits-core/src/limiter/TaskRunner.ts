import type { CostEstimator } from '../fairness/CostEstimator.js';
import type { MonotonicTime } from '../internal/MonotonicTime.js';
import type { PromiseCapture } from '../internal/PromiseCapture.js';
import type { Permit } from '../permit/Permit.js';
import type { Waiter } from '../queue/Waiter.js';
import type { LeakTracker } from './LeakTracker.js';
import type { AcquireOptions } from './options.js';
import type { PlainRuns } from './PlainRuns.js';
import {
  NEVER_ABORTED,
  type RunHooks,
  runQueued,
  runTimed,
  runUnderPermit,
} from './runUnderPermit.js';

/**
 * @internal Hands granted permits over for one limiter (what its queued calls need when granted): leak
 * tracking for `acquire()` callers, and `run()` tasks started under their permits: the plain path
 * ({@link PlainRuns}, or `runUnderPermit` for a timed or classified call), or with a time
 * time limit or a caller signal the task's scope (its own signal, the deadline timer) set up by
 * `runTimed`; and with a cost estimator, what each kind of call really cost fed back to it.
 */
export class TaskRunner {
  readonly #time: MonotonicTime;
  readonly #capture: PromiseCapture;
  readonly #estimator: CostEstimator | undefined;
  readonly #leaks: LeakTracker | undefined;
  /** The hooks of a call without a kind (classify, listener errors). */
  readonly hooks: RunHooks;
  /** The plain path (see {@link PlainRuns}), when the limiter's algorithm allows it. */
  readonly plain: PlainRuns | undefined;

  constructor(
    time: MonotonicTime,
    capture: PromiseCapture,
    hooks: RunHooks,
    estimator: CostEstimator | undefined,
    leaks: LeakTracker | undefined,
    plain: PlainRuns | undefined,
  ) {
    this.#time = time;
    this.#capture = capture;
    this.hooks = hooks;
    this.#estimator = estimator;
    this.#leaks = leaks;
    this.plain = plain;
  }

  /** Leak-tracks a permit handed to an `acquire()` caller (when leak tracking is on). */
  track(permit: Permit): void {
    this.#leaks?.track(permit);
  }

  /** Runs a task admitted at once; the returned promise settles with its result. */
  start(
    permit: Permit,
    task: (signal: AbortSignal) => unknown,
    options: AcquireOptions | undefined,
    deadline: number,
    now: number,
  ): Promise<unknown> {
    const signal = options?.signal;
    if (signal === undefined && deadline === Infinity) {
      return runUnderPermit(permit, task, NEVER_ABORTED, this.#hooksFor(options));
    }
    const promise = this.#capture.promise();
    this.#timed(permit, task, options, deadline, now, this.#capture.take());
    return promise;
  }

  /**
   * Starts a lane request's task (see `RunLane`: a queued plain run, no waiter; its unit is already
   * counted): under `permit` when the grant is timed, else on the plain path.
   * @param sample - a plain run to time for the service-time estimate (see `PlainRuns.runLane`).
   */
  startLane(task: unknown, resolve: unknown, permit: Permit | undefined, sample: boolean): void {
    const run = task as (signal: AbortSignal) => unknown;
    const answer = resolve as (value: unknown) => void;
    if (permit !== undefined) runQueued(permit, run, NEVER_ABORTED, this.hooks, answer);
    else (this.plain as PlainRuns).runLane(run, answer, sample);
  }

  /** Starts a queued `run()`'s task under its granted waiter; the result settles its caller's promise. */
  startQueued(
    w: Waiter,
    task: (signal: AbortSignal) => unknown,
    resolve: (value: unknown) => void,
    known: number,
  ): void {
    const options = w.options as AcquireOptions | undefined;
    const plain = this.plain;
    if (options === undefined && plain !== undefined && Number.isNaN(w.startTime)) {
      plain.runQueued(w, task, resolve);
      return;
    }
    const signal = options?.signal;
    const deadline = w.deadline;
    if (signal === undefined && deadline === Infinity) {
      runQueued(w, task, NEVER_ABORTED, this.#hooksFor(options), resolve);
      return;
    }
    const now = deadline === Infinity || !Number.isNaN(known) ? known : this.#time.now();
    this.#timed(w, task, options, deadline, now, resolve);
  }

  /** Runs a task with a time limit (to `deadline`, from `now`) or a caller signal; see `runTimed`. */
  #timed(
    permit: Permit,
    task: (signal: AbortSignal) => unknown,
    options: AcquireOptions | undefined,
    deadline: number,
    now: number,
    resolve: (value: unknown) => void,
  ): void {
    runTimed(
      permit,
      task,
      options?.signal,
      deadline === Infinity ? Infinity : deadline - now,
      this.#time.clock,
      this.#hooksFor(options),
      resolve,
    );
  }

  #hooksFor(options: AcquireOptions | undefined): RunHooks {
    const estimator = this.#estimator;
    const kind = options?.kind;
    if (estimator === undefined || kind === undefined) return this.hooks;
    // Fair queueing charges estimates: feed it what this kind of call really cost (ms held).
    const time = this.#time;
    const start = time.now();
    const bytes = options?.bytes ?? 0;
    return {
      ...this.hooks,
      onSettled: () => estimator.observe(kind, Math.max(0, time.now() - start), bytes),
    };
  }
}
