import type { EventEmitter } from 'eventemitter3';
import type { CostEstimator } from '../fairness/CostEstimator.js';
import type { Clock } from '../internal/clock.js';
import type { MonotonicTime } from '../internal/MonotonicTime.js';
import type { PromiseCapture } from '../internal/PromiseCapture.js';
import { type Classify, defaultClassify, OUTCOMES, type Outcome } from '../permit/outcome.js';
import { Permit } from '../permit/Permit.js';
import type { Waiter } from '../queue/Waiter.js';
import { reportListenerError } from './emit.js';
import type { LimiterEvents } from './events.js';
import type { LeakTracker } from './LeakTracker.js';
import type { AcquireOptions } from './options.js';
import type { ServiceTime } from './ServiceTime.js';

/**
 * The signal handed to a task that can never be aborted (no caller `signal`, no time limit): a
 * real `AbortSignal` that never aborts and whose `addEventListener`/`removeEventListener` do
 * nothing, so the listeners every task adds (`fetch` adds one per call) are not kept on this one
 * shared object (they could never fire anyway). Creating a signal per task instead costs about 2 µs
 * on Node 20 (measured; a bare limited call costs about 0.1 µs), and even deciding per call whether the
 * task can read one (`task.length`, an accessor V8 does not inline) cost 10–20 ns per `run()`.
 */
const NEVER_ABORTED: AbortSignal = inert(new AbortController().signal);

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

/** The native `then` (see {@link onSettled}). */
const promiseThen = Promise.prototype.then;

/** Free run slots kept for reuse (more in flight at once are made, and dropped when they come back). */
const KEEP_SLOTS = 128;

/**
 * The shared or reused reactions of the plain path and of the run slots must run once, one of them
 * (else a unit is released twice). The native `then` guarantees it; a native promise with an own
 * `then` (an override that could call one twice) does not. The callers check `promise.then ===
 * promiseThen` in line (about 50 machine instructions per call; a call to a helper for the check
 * cost more) and call this otherwise: `promise` is followed through a fresh promise, whose resolve
 * functions act once, and `ok` or `fail` runs a few microtasks after the caller's own reactions.
 */
function onSettled(
  promise: Promise<unknown>,
  ok: (value: unknown) => void,
  fail: (error: unknown) => void,
): void {
  new Promise((resolve) => resolve(promise)).then(ok, fail);
}

/** What a rejection reports as the task's error (`undefined` is no error for classification). */
function rejection(error: unknown): unknown {
  return error ?? new Error('task rejected with undefined');
}

/**
 * What a call of a `kind` holds for the cost estimator of fair queueing, which charges estimates:
 * when it settles, the estimator learns what this kind of call really cost (ms held, bytes).
 */
class Charge {
  constructor(
    readonly kind: string,
    readonly bytes: number,
    /** When the task started (the limiter's time). */
    readonly start: number,
  ) {}
}

/**
 * @internal Runs a limiter's `run()` tasks under their permits and reports how each ended: calls
 * `task(signal)`, and when its promise really settles classifies the outcome (the `classify` option,
 * else {@link defaultClassify}) and releases the permit with it. A task that throws synchronously never
 * started: its permit is released at once as `ignore`. The caller gets the task's own promise (or,
 * queued, its promise is resolved with it); the permit is released by a reaction added before the
 * caller can add its own, so it is back before the caller resumes.
 *
 * The ways a task runs, from the most to the least common:
 * - the plain path (`runPlain`, `startLane`): a call without options, untimed, on a limiter whose
 *   algorithm learns nothing from an untimed call (a fixed limit): no permit object; one pair of
 *   reactions shared by every call releases one unit.
 * - a run slot (`runCounted`): a call without options granted at once where the plain path does not
 *   apply (a timed grant, an adaptive algorithm): a pooled slot keeps its start time and in-flight
 *   count, with its own pair of reactions made once.
 * - under a permit (`start`, `startQueued`): two closures per call.
 * - with a time limit or a caller signal: the task's scope ({@link TaskScope}: its own signal, the
 *   deadline timer).
 *
 * It also leak-tracks the permits handed to `acquire()` callers, and with a cost estimator feeds back
 * what each kind of call really cost.
 */
export class TaskRunner {
  readonly #time: MonotonicTime;
  readonly #capture: PromiseCapture;
  readonly #classify: Classify | undefined;
  /** The limiter: a `classify` hook's or estimator's error is reported like a listener's. */
  readonly #emitter: EventEmitter<LimiterEvents>;
  readonly #estimator: CostEstimator | undefined;
  readonly #leaks: LeakTracker | undefined;
  readonly #service: ServiceTime;
  /**
   * Gives one unit back to the limiter without a permit (plain path and run slots), as a permit with
   * this start time (`NaN`: untimed) and in-flight count would: the permit's release, by other means.
   */
  readonly #releaseUnit: (startTime: number, inflight: number, outcome: Outcome) => void;
  /**
   * The plain path applies (the algorithm learns nothing from an untimed call). Kept because it pays
   * where users look: without it a fixed `Limiter.run` took 1.3× as long sequentially and 1.4× for
   * 10,000 at once, measured in the same run against a build without it.
   */
  readonly plain: boolean;
  readonly #free: RunSlot[] = [];
  /** What a plain task threw synchronously (taken at once by the caller of `#startPlain`). */
  #thrown: unknown = undefined;
  readonly #ok = (value: unknown): void => {
    this.#plainSettled(undefined, value);
  };
  readonly #fail = (error: unknown): void => {
    this.#plainSettled(rejection(error), undefined);
  };

  /**
   * @param plain - the limiter's algorithm learns nothing from an untimed call (an adaptive one is
   *   fed a drop with its in-flight count, which only a permit or a slot carries).
   * @param releaseUnit - the limiter's release of one unit without a permit.
   */
  constructor(
    time: MonotonicTime,
    capture: PromiseCapture,
    emitter: EventEmitter<LimiterEvents>,
    classify: Classify | undefined,
    estimator: CostEstimator | undefined,
    leaks: LeakTracker | undefined,
    service: ServiceTime,
    plain: boolean,
    releaseUnit: (startTime: number, inflight: number, outcome: Outcome) => void,
  ) {
    this.#time = time;
    this.#capture = capture;
    this.#emitter = emitter;
    this.#classify = classify;
    this.#estimator = estimator;
    this.#leaks = leaks;
    this.#service = service;
    this.plain = plain;
    this.#releaseUnit = releaseUnit;
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
      return this.#underPermit(permit, task, this.#charge(options));
    }
    const promise = this.#capture.promise();
    this.#timed(permit, task, options, deadline, now, this.#capture.take());
    return promise;
  }

  /**
   * `run()` at its cheapest, as a hand-written semaphore does it: runs `task` under a unit already
   * counted, with no permit object (nothing else could report on it). Such a call's release needs
   * nothing but the outcome, so one pair of reaction functions serves every call: the task's own
   * promise gets them, no promise or closure is made per call, and the caller gets it.
   */
  runPlain(task: (signal: AbortSignal) => unknown): Promise<unknown> {
    const promise = this.#startPlain(task);
    if (promise !== undefined) return promise;
    const thrown = this.#thrown;
    this.#thrown = undefined;
    return Promise.reject(thrown);
  }

  /**
   * Runs `task` under a unit already counted, granted at `startTime` (`NaN`: untimed) with `inflight`
   * units in flight, without a permit object or two closures per call: a pooled slot keeps the
   * start time and in-flight count, and has its own pair of reactions, made once; exactly one of them
   * runs, once, when the task settles, and the slot goes back to the pool. (A closure made per call
   * also cost V8 a `CompileLazy` at its first and only call.) Kept because it pays where users look:
   * without it the sequential Vegas `Limiter.run` row took 1.06–1.32× as long (best rounds of three
   * same-run comparisons against a build without it).
   */
  runCounted(
    task: (signal: AbortSignal) => unknown,
    startTime: number,
    inflight: number,
  ): Promise<unknown> {
    let result: unknown;
    try {
      result = task(NEVER_ABORTED);
    } catch (error) {
      this.#releaseUnit(startTime, inflight, 'ignore');
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

  /**
   * Starts a lane request's task (see `RunLane`: a queued plain run, no waiter; its unit is already
   * counted): under `permit` when the grant is timed, else on the plain path.
   * @param sample - time a plain run for the service-time estimate (one grant in 32, as for a timed
   *   permit, but without one: a reaction of its own reads the clock when the task settles; granting
   *   the sampled runs as timed permits cost about a fifth of a 10,000-call burst's time).
   */
  startLane(task: unknown, resolve: unknown, permit: Permit | undefined, sample: boolean): void {
    const run = task as (signal: AbortSignal) => unknown;
    const answer = resolve as (value: unknown) => void;
    if (permit !== undefined) this.#queued(permit, run, undefined, answer);
    else this.#runLane(run, answer, sample);
  }

  /** Starts a queued `run()`'s task under its granted waiter; the result settles its caller's promise. */
  startQueued(
    w: Waiter,
    task: (signal: AbortSignal) => unknown,
    resolve: (value: unknown) => void,
    known: number,
  ): void {
    const options = w.options as AcquireOptions | undefined;
    if (options === undefined && this.plain && Number.isNaN(w.startTime)) {
      // The waiter is spent: the shared reactions release its unit.
      Permit._detach(w);
      this.#runLane(task, resolve, false);
      return;
    }
    const signal = options?.signal;
    const deadline = w.deadline;
    if (signal === undefined && deadline === Infinity) {
      this.#queued(w, task, this.#charge(options), resolve);
      return;
    }
    const now = deadline === Infinity || !Number.isNaN(known) ? known : this.#time.now();
    this.#timed(w, task, options, deadline, now, resolve);
  }

  /** @internal A slot's task settled (`error` is `undefined` when it resolved): release its unit. */
  _slotSettled(slot: RunSlot, error: unknown, value: unknown): void {
    const startTime = slot.startTime;
    const inflight = slot.inflight;
    if (this.#free.length < KEEP_SLOTS) this.#free.push(slot);
    try {
      // (The common case without classifying, as `#settle` does.)
      const outcome =
        error === undefined && this.#classify === undefined
          ? 'success'
          : this.#outcome(error, value);
      this.#releaseUnit(startTime, inflight, outcome);
    } catch (releaseError) {
      // Nothing may escape a reaction (it would be an unhandled rejection of a promise nobody holds).
      this.#report(releaseError);
    }
  }

  /**
   * Calls `task` under `permit`; the caller gets the task's own promise (a plain value or a thenable
   * wrapped in one). Two closures per call: cheaper than an `async` function's frame and promise.
   */
  #underPermit(
    permit: Permit,
    task: (signal: AbortSignal) => unknown,
    charge: Charge | undefined,
  ): Promise<unknown> {
    let result: unknown;
    try {
      result = task(NEVER_ABORTED);
    } catch (error) {
      permit.ignore();
      return Promise.reject(error);
    }
    const promise = Promise.resolve(result);
    promise.then(
      (value) => this.#settleOrReport(permit, undefined, value, charge),
      (error: unknown) => this.#settleOrReport(permit, rejection(error), undefined, charge),
    );
    return promise;
  }

  /**
   * `#underPermit` for a queued `run()`: the caller's promise already exists, so the task's result
   * settles it through `resolve` (with the value, or with a rejected promise) once the permit is
   * reported.
   */
  #queued(
    permit: Permit,
    task: (signal: AbortSignal) => unknown,
    charge: Charge | undefined,
    resolve: (value: unknown) => void,
  ): void {
    let result: unknown;
    try {
      result = task(NEVER_ABORTED);
    } catch (error) {
      permit.ignore();
      resolve(Promise.reject(error));
      return;
    }
    Promise.resolve(result).then(
      (value) => this.#answer(permit, false, undefined, value, charge, resolve),
      (error: unknown) => this.#answer(permit, true, error, undefined, charge, resolve),
    );
  }

  /**
   * Runs a task with a time limit (to `deadline`, from `now`; `Infinity` for none) or a caller
   * signal. The task gets a signal of its own that follows the caller's and aborts with a
   * `TimeoutError` (a `DOMException`, as `AbortSignal.timeout()` gives) when the time limit runs
   * out; the caller's promise then rejects at once with that reason, while the permit stays held
   * until the task really settles and is then released as `dropped`. The task's own signal is created
   * only when the task declares a parameter (`task.length > 0`): it costs about 2 µs on Node 20. A
   * task declaring none receives the caller's signal (or the never-aborting one) and is still
   * bounded by the time limit.
   */
  #timed(
    permit: Permit,
    task: (signal: AbortSignal) => unknown,
    options: AcquireOptions | undefined,
    deadline: number,
    now: number,
    resolve: (value: unknown) => void,
  ): void {
    const caller = options?.signal;
    const timeoutMs = deadline === Infinity ? Infinity : deadline - now;
    const clock = this.#time.clock;
    const scope = new TaskScope(permit, caller, clock, this.#charge(options), resolve);
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
    void this.#followScoped(scope, result);
  }

  async #followScoped(scope: TaskScope, result: unknown): Promise<void> {
    let value: unknown;
    let error: unknown;
    let failed = false;
    try {
      value = await result;
    } catch (e) {
      failed = true;
      error = e;
    }
    // The deadline timer may not have fired yet although its time has passed: when the event loop
    // runs late, Node fires all due timers of one duration list before the next list, so a task's own
    // later timer can settle it first. The deadline is what counts, not which callback ran first.
    if (!scope.timedOut && scope.timer !== undefined && scope.clock.now() >= scope.dueAt) {
      scope.clock.clearTimeout(scope.timer);
      scope.onTimeout();
    }
    scope.end();
    if (scope.timedOut) {
      // The caller already has its TimeoutError; the call ran past its time limit: a congestion
      // signal.
      this.#observe(scope.charge);
      scope.permit.dropped();
      return;
    }
    this.#answer(scope.permit, failed, error, value, scope.charge, scope.resolve);
  }

  /**
   * Runs a plain `task` whose unit is already counted; its caller's promise follows the task's.
   * @param sample - time this run for the service-time estimate (see `startLane`).
   */
  #runLane(
    task: (signal: AbortSignal) => unknown,
    resolve: (value: unknown) => void,
    sample: boolean,
  ): void {
    const start = sample ? this.#time.now() : Number.NaN;
    const promise = this.#startPlain(task);
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

  #startPlain(task: (signal: AbortSignal) => unknown): Promise<unknown> | undefined {
    let result: unknown;
    try {
      result = task(NEVER_ABORTED);
    } catch (error) {
      this.#thrown = error;
      this.#releaseUnit(Number.NaN, 0, 'ignore');
      return undefined;
    }
    // The task's own promise when it returns a native one; a plain value or a thenable is wrapped.
    const promise = Promise.resolve(result);
    // One of the shared reactions, once (see `onSettled`).
    if (promise.then === promiseThen) promise.then(this.#ok, this.#fail);
    else onSettled(promise, this.#ok, this.#fail);
    return promise;
  }

  /** A plain task settled: classify and release its unit. */
  #plainSettled(error: unknown, value: unknown): void {
    const outcome = this.#outcome(error, value);
    try {
      this.#releaseUnit(Number.NaN, 0, outcome);
    } catch (releaseError) {
      // Nothing may escape a reaction (it would be an unhandled rejection of a promise nobody holds).
      this.#report(releaseError);
    }
  }

  /** What a call of `options.kind` will tell the cost estimator, when there is one. */
  #charge(options: AcquireOptions | undefined): Charge | undefined {
    const kind = options?.kind;
    if (this.#estimator === undefined || kind === undefined) return undefined;
    return new Charge(kind, options?.bytes ?? 0, this.#time.now());
  }

  /** Feeds the estimator what the call of `charge` really cost (a plug-in's error is reported). */
  #observe(charge: Charge | undefined): void {
    if (charge === undefined) return;
    try {
      (this.#estimator as CostEstimator).observe(
        charge.kind,
        Math.max(0, this.#time.now() - charge.start),
        charge.bytes,
      );
    } catch (estimatorError) {
      this.#report(estimatorError);
    }
  }

  /** Reports the outcome; an error while doing so is reported like a listener's (no unhandled rejection). */
  #settleOrReport(
    permit: Permit,
    error: unknown,
    value: unknown,
    charge: Charge | undefined,
  ): void {
    try {
      this.#settle(permit, error, value, charge);
    } catch (settleError) {
      this.#report(settleError);
    }
  }

  /**
   * Reports a settled task's outcome on its permit, then answers the caller through `resolve`. An
   * error while reporting the outcome becomes the caller's error rather than an unhandled rejection
   * with the caller waiting.
   */
  #answer(
    permit: Permit,
    failed: boolean,
    error: unknown,
    value: unknown,
    charge: Charge | undefined,
    resolve: (value: unknown) => void,
  ): void {
    try {
      this.#settle(permit, failed ? rejection(error) : undefined, value, charge);
    } catch (settleError) {
      resolve(Promise.reject(settleError));
      return;
    }
    resolve(failed ? Promise.reject(error) : value);
  }

  /** Reports how the task ended on its permit; `error` is `undefined` when it resolved. */
  #settle(permit: Permit, error: unknown, result: unknown, charge: Charge | undefined): void {
    if (error === undefined && this.#classify === undefined && charge === undefined) {
      permit.success(); // the common case, without classifying
      return;
    }
    // A plug-in's error (a cost estimator's `observe`) must not keep the permit: reported, then on.
    this.#observe(charge);
    permit.release(this.#outcome(error, result));
  }

  /**
   * How a settled task counts: the `classify` hook's answer (one that throws is reported and
   * ignored), else {@link defaultClassify}. `error` is `undefined` when the task resolved.
   */
  #outcome(error: unknown, result: unknown): Outcome {
    let outcome: Outcome | undefined;
    const classify = this.#classify;
    if (classify !== undefined) {
      try {
        outcome = classify(error, result);
      } catch (classifyError) {
        this.#report(classifyError);
      }
    }
    if (outcome === undefined) return defaultClassify(error);
    // An answer that is not an outcome says nothing of the call: `ignore`.
    return OUTCOMES.includes(outcome) ? outcome : 'ignore';
  }

  /** A plug-in's error (classify, estimator) or a release's, reported like a listener error. */
  #report(error: unknown): void {
    reportListenerError(this.#emitter, error);
  }
}

/** One counted call's state while its task runs (see `runCounted`), and the reactions that end it. */
class RunSlot {
  /** The grant's start time on the limiter's clock (`NaN`: untimed). A double from the start. */
  startTime = Number.NaN;
  /** Units in flight when it was granted. */
  inflight = 0;
  readonly ok: (value: unknown) => void;
  readonly fail: (error: unknown) => void;

  constructor(runner: TaskRunner) {
    this.ok = (value) => runner._slotSettled(this, undefined, value);
    this.fail = (error) => runner._slotSettled(this, rejection(error), undefined);
  }
}

/**
 * The per-task state of a `run()` with a time limit or a caller `signal`: the task's own
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
    readonly charge: Charge | undefined,
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
