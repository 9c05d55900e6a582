import { createRequire } from 'node:module';
import { EventEmitter } from 'eventemitter3';
import {
  type AcquireOptions,
  type Clock,
  defaultClassify,
  formatValue,
  type LimitEvent,
  LimitExceededError,
  Limiter,
  type LimiterOptions,
  type LimiterSnapshot,
  LimitsError,
  type Permit,
  type PermitRequest,
  type QueueTicket,
  type RejectEvent,
  type ReleaseEvent,
  systemClock,
  VegasLimit,
} from 'limits-core';
import { CallContext } from './CallContext.js';
import { CallTimeoutError, CircuitOpenError } from './errors.js';
import { type LatencySummary, LatencyWindow } from './LatencyWindow.js';
import type {
  OpossumBreaker,
  OpossumBucket,
  OpossumConstructor,
  OpossumOptions,
  OpossumStats,
} from './opossum.js';
import { checkBreaker, checkGuardOptions } from './options.js';
import { type Timed, TimeoutList } from './TimeoutList.js';

/** Circuit states. */
export type CircuitState = 'CLOSED' | 'OPEN' | 'HALF_OPEN';

/** Why a call went to the fallback. */
export type FallbackReason = 'open' | 'limit' | 'timeout' | 'error';

/**
 * Why a call went to the fallback, and the error the caller would have got without one: the first
 * argument of `fallback` and the payload of the `fallback` event.
 * - `open`: a `CircuitOpenError` (the circuit was OPEN, HALF_OPEN with every trial slot taken, or
 *   opened while the call waited for a permit);
 * - `limit`: the limiter's `LimitExceededError` (its `reason` says why: queue full, expired, …);
 * - `timeout`: a `CallTimeoutError`;
 * - `error`: what the action threw or rejected with.
 */
export type FallbackCause =
  | { readonly reason: 'open'; readonly error: CircuitOpenError }
  | { readonly reason: 'limit'; readonly error: LimitExceededError }
  | { readonly reason: 'timeout'; readonly error: CallTimeoutError }
  | { readonly reason: 'error'; readonly error: unknown };

/**
 * How a finished call counts:
 * - `success`: a latency sample for the limiter, a success for the breaker;
 * - `dropped`: congestion — a dropped sample for the limiter, a failure for the breaker;
 * - `failure`: a failure for the breaker, no sample for the limiter (e.g. a 500 that says nothing about load);
 * - `ignore`: neither (e.g. a 404 or a validation error).
 */
export type GuardOutcome = 'success' | 'dropped' | 'failure' | 'ignore';

/** Decides a call's outcome; `error` is `undefined` when the action resolved. Return `undefined` for the default. */
export type GuardClassify = (error: unknown, result?: unknown) => GuardOutcome | undefined;

/** A guarded action: `ctx.signal` aborts on timeout and shutdown. */
export type GuardedAction<A extends unknown[], R> = (
  ctx: CallContext,
  ...args: A
) => R | PromiseLike<R>;

/** Options of {@link guard}. */
export interface GuardOptions<A extends unknown[], R> extends OpossumOptions {
  /** A limiter to share (the guard does not close it on shutdown). Default: a limiter of its own. */
  limiter?: Limiter;
  /** Options of the guard's own limiter. @default { limit: new VegasLimit(), probeSlots } */
  limit?: LimiterOptions;
  /**
   * Trial calls let through concurrently while HALF_OPEN (opossum alone lets one), and the own
   * limiter's probe slots.
   * @default 1
   */
  probeSlots?: number;
  /**
   * Per-call timeout in ms, or `false`. The caller is answered at the timeout (fallback `timeout` or
   * `CallTimeoutError`); the call is aborted and keeps its permit until it really ends.
   * @default 10000 (opossum's default)
   */
  timeout?: number | false;
  /**
   * Answers a call that did not succeed: `fallback({ reason, error }, ...args)`, with the call's
   * arguments; `error` is what the caller would get without a fallback (see {@link FallbackCause}).
   * Without it the caller gets that error. Counted in `stats().breaker.fallbacks` when it returns.
   */
  fallback?: (cause: FallbackCause, ...args: A) => R | PromiseLike<R>;
  /** Outcome of a call; see {@link GuardOutcome}. Default: resolved → success, timeout/abort → dropped, other errors → failure. */
  classify?: GuardClassify;
  /** Acquire options for every call (e.g. `{ timeout: 200 }` to bound the wait for a permit). */
  acquire?: AcquireOptions;
  /** Rolling window of the latency percentiles in ms. @default 60000 */
  latencyWindowMs?: number;
  /** Histograms in the latency window (memory is bounded by their number). @default 6 */
  latencyBuckets?: number;
  /** Time source and timers (for per-call timeouts and latency). @default the system clock */
  clock?: Clock;
  /** The opossum CircuitBreaker class to use. @default the installed `opossum` peer dependency */
  CircuitBreaker?: OpossumConstructor;
}

/** Events of a {@link Guard}. */
export interface GuardEvents {
  /** The circuit changed state. */
  state: (event: { from: CircuitState; to: CircuitState }) => void;
  /**
   * A call went to the fallback (or was rejected with a typed error, when there is none): the same
   * `{ reason, error }` object the fallback receives.
   */
  fallback: (event: FallbackCause) => void;
  /** The limiter's limit changed (re-emitted). */
  limit: (event: LimitEvent) => void;
  /** The limiter refused a request (re-emitted). */
  reject: (event: RejectEvent) => void;
  /** A permit came back (re-emitted). */
  release: (event: ReleaseEvent) => void;
  /**
   * A listener of the guard's events (or of opossum's events, when the guard calls into opossum)
   * threw. The guard catches it and carries on: its state stays consistent and every caller is still
   * answered. Without an `error` listener here, the error goes to the limiter's `error` event; without
   * one there either, it is rethrown on a microtask (an uncaught exception, as the limiter does).
   */
  error: (error: unknown) => void;
}

/** What {@link Guard.stats} returns. */
export interface GuardStats {
  state: CircuitState;
  /** opossum's rolling counts (`fallbacks`: calls answered by the `fallback` option). */
  breaker: OpossumStats;
  /** The limiter's counters. */
  limiter: LimiterSnapshot;
  /** Latency of completed calls over the rolling window, in ms (HDR histogram). */
  latency: LatencySummary;
  /** Trial calls of the current HALF_OPEN episode in flight (0 in any other state). */
  trials: number;
}

const EMPTY_ARGS: unknown[] = [];
/** Bits of a call's flags. */
const LIVE = 1;
const ANSWERED = 2;
const TIMED_OUT = 4;
const TRIAL = 8;
const SHED = 16;
/** How long the guard keeps counting successes into the same opossum bucket before re-reading it. */
const BUCKET_REFRESH_MS = 10;
const noop = () => {};
const passThrough = (outcome: unknown) => outcome;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** limits-core's classification, with every error that is not congestion counted as a failure. */
function defaultOutcome(error: unknown): GuardOutcome {
  const outcome = defaultClassify(error);
  return outcome === 'ignore' ? 'failure' : outcome;
}

let installedOpossum: OpossumConstructor | undefined;
function loadOpossum(): OpossumConstructor {
  installedOpossum ??= createRequire(import.meta.url)('opossum') as OpossumConstructor;
  return installedOpossum;
}

/**
 * @internal One call, from `fire()` to the end of its action: it waits in the limiter's queue (as the
 * limiter's sink: no promise there), is the action's context (a `CallContext`: no second object),
 * sits in the timeout list and the list of calls in flight. One object and one caller promise per
 * call, where a promise chain through `limiter.acquire()` took several of each.
 */
class Call extends CallContext implements Timed, PermitRequest {
  /** Links in the timeout list. */
  prev: Timed | undefined = undefined;
  next: Timed | undefined = undefined;
  /**
   * Links in the guard's list of calls in flight, or, before that, of calls waiting in the limiter's
   * queue (never both at once).
   */
  cprev: Call | undefined = undefined;
  cnext: Call | undefined = undefined;
  /** LIVE, ANSWERED, TIMED_OUT, TRIAL and SHED bits (one field: the queue may hold 10^5 calls). */
  #flags: number;
  /**
   * The permit, once granted; before that, while the call waits in the limiter's queue, its queue
   * ticket (to take it out of the queue; one field less per queued call).
   */
  permit: Permit | QueueTicket | undefined = undefined;
  /** Clock ms when the action started. */
  start = 0;
  /**
   * The circuit episode (the guard's count of state changes) the call was admitted in: only calls of
   * the current episode report to the circuit, and only trials of the current HALF_OPEN episode hold
   * one of its trial slots.
   */
  readonly episode: number;
  /**
   * Answers the caller: the resolve function of the caller's promise (a rejection resolves it with a
   * rejected promise); `noop` when the caller's promise is derived from the action's.
   */
  resolve: (value: unknown) => void = noop;
  constructor(
    readonly guard: Guard<never, unknown>,
    trial: boolean,
    readonly args: unknown[],
    episode: number,
  ) {
    super();
    this.#flags = trial ? LIVE | TRIAL : LIVE;
    this.episode = episode;
  }
  /** A trial call (admitted while HALF_OPEN). */
  get trial(): boolean {
    return (this.#flags & TRIAL) !== 0;
  }
  /** Still in flight for the guard (not settled, not shut down). */
  get live(): boolean {
    return (this.#flags & LIVE) !== 0;
  }
  set live(on: boolean) {
    this.#flags = on ? this.#flags | LIVE : this.#flags & ~LIVE;
  }
  /** The caller was answered (by the result, the timeout, or shutdown). */
  get answered(): boolean {
    return (this.#flags & ANSWERED) !== 0;
  }
  set answered(on: boolean) {
    this.#flags = on ? this.#flags | ANSWERED : this.#flags & ~ANSWERED;
  }
  /** The caller was answered at the timeout; the action is still running. */
  get timedOut(): boolean {
    return (this.#flags & TIMED_OUT) !== 0;
  }
  set timedOut(on: boolean) {
    this.#flags = on ? this.#flags | TIMED_OUT : this.#flags & ~TIMED_OUT;
  }
  /** Taken out of the limiter's queue because the circuit opened. */
  get shed(): boolean {
    return (this.#flags & SHED) !== 0;
  }
  set shed(on: boolean) {
    this.#flags = on ? this.#flags | SHED : this.#flags & ~SHED;
  }
  expire(): void {
    this.guard._timeout(this);
  }
  queued(ticket: QueueTicket): void {
    this.guard._queued(this, ticket);
  }
  granted(permit: Permit): void {
    this.guard._granted(this, permit);
  }
  refused(error: LimitExceededError): void {
    this.guard._refused(this, error);
  }
}

/**
 * A circuit breaker (opossum) layered over a limiter. Per call: OPEN → fail fast without touching the
 * limiter (reason `open`); otherwise take a permit (a refusal goes to the fallback with reason
 * `limit` and never counts as a breaker failure); then run the action with its own abort signal.
 * Create one with {@link guard}.
 */
export class Guard<A extends unknown[], R> extends EventEmitter<GuardEvents> {
  /** The limiter in front of the action. */
  readonly limiter: Limiter;
  /** The opossum instance (its state machine, rolling window, volume threshold, reset timeout). */
  readonly breaker: OpossumBreaker;
  readonly #action: GuardedAction<A, R>;
  readonly #fallback: GuardOptions<A, R>['fallback'];
  readonly #classify: GuardClassify | undefined;
  readonly #acquire: AcquireOptions | undefined;
  readonly #timeoutMs: number | false;
  readonly #probeSlots: number;
  readonly #clock: Clock;
  readonly #timeouts: TimeoutList;
  readonly #latency: LatencyWindow;
  readonly #ownsLimiter: boolean;
  /** Calls in flight (an intrusive list: no hashing per call, unlike a Set). */
  #callsHead: Call | undefined = undefined;
  readonly #unsubscribe: Array<() => void> = [];
  readonly #forwarding = new Set<string>();
  #state: CircuitState = 'CLOSED';
  /** Circuit episodes so far: +1 at every state change (calls carry the one they were admitted in). */
  #episode = 0;
  /** Trial calls of the current HALF_OPEN episode in flight (or waiting for a permit). */
  #trials = 0;
  #shut = false;
  /**
   * Calls waiting in the limiter's queue, oldest first: when the circuit opens, each is taken out of
   * the queue (its `QueueTicket`) and answered `open`. Filing a call costs a few field writes;
   * calls that get a permit at once are never filed. (An AbortSignal passed with each queued acquire
   * would do it through public API, but it made every queued call carry the limiter's per-waiter
   * extras: 25 % more per call with 10,000 queued, and Node's EventTarget scans its listener list on
   * every add, so one signal shared by the queue was quadratic.)
   */
  #queuedHead: Call | undefined = undefined;
  #queuedTail: Call | undefined = undefined;
  /** opossum's own listeners of `fire` and `success` (more means someone else listens too). */
  readonly #ownFireListeners: number;
  readonly #ownSuccessListeners: number;
  /**
   * Whether only opossum listens to `fire`/`success` (successes are then counted into its bucket
   * directly); `undefined` after a listener change, recomputed at the next success.
   */
  #countDirectly: boolean | undefined = undefined;
  /** opossum's current rolling-count bucket, as last read, and when it was read. */
  #bucket: OpossumBucket | undefined = undefined;
  #bucketReadAt = -Infinity;
  /**
   * The clock as read by the settling call whose release is starting the next ones (`NaN` outside):
   * a call granted in that same synchronous stretch starts at that time, one clock read less per call.
   */
  #freshNow = Number.NaN;
  /** Start time of the last call started: starts never go backwards (the timeout list relies on it). */
  #lastStart = -Infinity;
  /**
   * The answer of a call the limiter refused at admission, inside `acquireWith` (taken at once by
   * `fire`, which had no promise for that caller yet).
   */
  #refusal: Promise<R> | undefined = undefined;
  /** The resolve function `#capture` just received (taken at once by `fire`). */
  #captured: ((value: unknown) => void) | undefined = undefined;
  /** One shared promise executor instead of a closure per call. */
  readonly #capture = (resolve: (value: unknown) => void): void => {
    this.#captured = resolve;
  };

  /**
   * @internal Use {@link guard}.
   * @throws TypeError/RangeError for a bad option (before anything is built).
   */
  constructor(action: GuardedAction<A, R>, options: GuardOptions<A, R> = {}) {
    super();
    if (typeof action !== 'function') {
      throw new TypeError(`limits: guard(action) needs a function, got ${formatValue(action)}`);
    }
    const o = checkGuardOptions(options);
    this.#action = action;
    this.#fallback = o.fallback as GuardOptions<A, R>['fallback'];
    this.#classify = o.classify as GuardClassify | undefined;
    this.#acquire = o.acquire;
    this.#clock = o.clock ?? systemClock;
    this.#probeSlots = o.probeSlots;
    this.#timeoutMs = o.timeout;
    this.#ownsLimiter = o.limiter === undefined;
    // The own limiter checks its options itself (and starts no timer until used).
    this.limiter =
      o.limiter ??
      new Limiter({
        limit: new VegasLimit(),
        probeSlots: o.probeSlots,
        // The guard completes every permit it takes (no user code holds one), so its own limiter
        // needs no leak tracking; `limit: { trackLeaks }` still overrides it.
        trackLeaks: 'off',
        ...(o.clock === undefined ? {} : { clock: o.clock }),
        ...o.limit,
      });
    const Opossum = o.CircuitBreaker ?? loadOpossum();
    // opossum sees only outcomes: the action is run by the guard, opossum's own timeout, capacity,
    // percentiles and AbortController are off (see the README for why).
    this.breaker = checkBreaker(
      new Opossum(passThrough, {
        timeout: false,
        errorThresholdPercentage: o.errorThresholdPercentage,
        resetTimeout: o.resetTimeout,
        rollingCountTimeout: o.rollingCountTimeout,
        rollingCountBuckets: o.rollingCountBuckets,
        volumeThreshold: o.volumeThreshold,
        allowWarmUp: o.allowWarmUp,
        rollingPercentilesEnabled: false,
        enableSnapshots: false,
        ...(o.name === undefined ? {} : { name: o.name }),
      }),
    );
    this.#latency = new LatencyWindow(o.latencyWindowMs, o.latencyBuckets, () => this.#clock.now());
    this.#timeouts = new TimeoutList(this.#clock, o.timeout === false ? Infinity : o.timeout);
    this.#ownFireListeners = this.breaker.listenerCount('fire');
    this.#ownSuccessListeners = this.breaker.listenerCount('success');
    // Node's EventEmitter announces listener changes ('newListener' comes before the addition, so
    // the count is taken later, at the next success).
    const onListenerChange = (event: unknown) => {
      if (event === 'fire' || event === 'success') this.#countDirectly = undefined;
    };
    this.breaker.on('newListener', onListenerChange);
    this.breaker.on('removeListener', onListenerChange);
    const onOpen = () => this.#transition('OPEN');
    const onHalfOpen = () => this.#transition('HALF_OPEN');
    const onClose = () => this.#transition('CLOSED');
    this.breaker.on('open', onOpen);
    this.breaker.on('halfOpen', onHalfOpen);
    this.breaker.on('close', onClose);
    this.#unsubscribe.push(() => {
      this.breaker.removeListener('newListener', onListenerChange);
      this.breaker.removeListener('removeListener', onListenerChange);
      this.breaker.removeListener('open', onOpen);
      this.breaker.removeListener('halfOpen', onHalfOpen);
      this.breaker.removeListener('close', onClose);
    });
  }

  /**
   * Subscribes like eventemitter3's `on`; the limiter's `limit`, `reject` and `release` events are
   * forwarded only once someone listens to them here (a `release` listener makes the limiter time
   * every call, which a guard nobody charts should not pay for).
   */
  override on<T extends EventEmitter.EventNames<GuardEvents>>(
    event: T,
    fn: EventEmitter.EventListener<GuardEvents, T>,
    context?: unknown,
  ): this {
    this.#forward(event);
    return super.on(event, fn, context);
  }

  /** Like {@link Guard.on}, once. */
  override once<T extends EventEmitter.EventNames<GuardEvents>>(
    event: T,
    fn: EventEmitter.EventListener<GuardEvents, T>,
    context?: unknown,
  ): this {
    this.#forward(event);
    return super.once(event, fn, context);
  }

  #forward(event: string): void {
    if (
      (event !== 'limit' && event !== 'reject' && event !== 'release') ||
      this.#forwarding.has(event)
    ) {
      return;
    }
    this.#forwarding.add(event);
    const source = this.limiter as unknown as {
      on(e: string, f: (p: unknown) => void): unknown;
      off(e: string, f: (p: unknown) => void): unknown;
    };
    // Through #emit: a guard listener's error is the guard's to report, not the limiter's.
    const forward = (payload: unknown) => this.#emit(event as 'release', payload as ReleaseEvent);
    source.on(event, forward);
    this.#unsubscribe.push(() => source.off(event, forward));
  }

  /** The circuit state. */
  get state(): CircuitState {
    return this.#state;
  }

  /**
   * Calls the action through the breaker and the limiter.
   * @returns the action's result, or the fallback's.
   * @throws (rejects) `CircuitOpenError`, `LimitExceededError`, `CallTimeoutError` or the action's
   *   error when there is no fallback; whatever the fallback throws when there is one.
   */
  fire(...args: A): Promise<R> {
    if (this.#shut) return Promise.reject(new LimitsError('SHUTDOWN', 'limits: guard shut down'));
    let trial = false;
    if (this.#state !== 'CLOSED') {
      if (this.#state === 'HALF_OPEN' && this.#trials < this.#probeSlots) {
        trial = true;
        this.#trials++;
      } else {
        return this.#fail('open', args, new CircuitOpenError(this.#state));
      }
    }
    // A call without arguments keeps the shared empty array: its rest array dies young.
    const call = new Call(
      this as never,
      trial,
      args.length === 0 ? (EMPTY_ARGS as A) : args,
      this.#episode,
    );
    // (The `acquire` option was checked at construction: this does not throw.)
    const permit = this.limiter.acquireWith(call, this.#acquire);
    if (permit !== undefined) return this.#start(call, permit) as Promise<R>;
    const refusal = this.#refusal;
    if (refusal !== undefined) {
      // Refused at admission, before acquireWith returned (see `_refused`).
      this.#refusal = undefined;
      return refusal;
    }
    // Queued: the call itself waits in the limiter's queue; one promise answers the caller.
    const promise = new Promise<R>(this.#capture as (resolve: (value: R) => void) => void);
    call.resolve = this.#captured as (value: unknown) => void;
    this.#captured = undefined;
    return promise;
  }

  /** @internal The limiter queued `call`: filed with its ticket, to be shed if the circuit opens. */
  _queued(call: Call, ticket: QueueTicket): void {
    call.permit = ticket;
    const tail = this.#queuedTail;
    call.cprev = tail;
    call.cnext = undefined;
    if (tail === undefined) this.#queuedHead = call;
    else tail.cnext = call;
    this.#queuedTail = call;
  }

  /**
   * The circuit opened: every call still waiting for a permit leaves the limiter's queue, oldest
   * first, and is answered `open` (through `_refused`), all synchronously. No call can queue
   * meanwhile (the circuit is OPEN); a waiter granted by a refusal before it is answered `open` by
   * `_granted`.
   */
  #shedQueued(): void {
    for (let call = this.#queuedHead; call !== undefined; call = this.#queuedHead) {
      const ticket = call.permit as QueueTicket;
      this.#leaveQueue(call);
      call.shed = true;
      ticket.cancel();
    }
  }

  /**
   * Takes a call that left the limiter's queue off the guard's list of queued calls (a queued call
   * not started yet has a `permit` only while filed there).
   */
  #leaveQueue(call: Call): void {
    if (call.permit === undefined) return;
    call.permit = undefined;
    if (call.cprev === undefined) this.#queuedHead = call.cnext;
    else call.cprev.cnext = call.cnext;
    if (call.cnext === undefined) this.#queuedTail = call.cprev;
    else call.cnext.cprev = call.cprev;
    call.cprev = undefined;
    call.cnext = undefined;
  }

  /** A trial call ended (or never started): frees its slot, if it belongs to the current episode. */
  #endTrial(call: Call): void {
    if (call.trial && call.episode === this.#episode) this.#trials--;
  }

  /** @internal The limiter granted a queued call its permit. */
  _granted(call: Call, permit: Permit): void {
    this.#leaveQueue(call);
    if (this.#shut) {
      // A shared limiter outlives the guard: its late grant goes straight back.
      permit.ignore();
      this.#endTrial(call);
      call.answered = true;
      call.resolve(Promise.reject(new LimitsError('SHUTDOWN', 'limits: guard shut down')));
      return;
    }
    if (this.#state === 'OPEN') {
      // Granted while the circuit was opening (by a waiter shed just before): it must not run.
      permit.ignore();
      this.#endTrial(call);
      call.answered = true;
      call.resolve(this.#fail('open', call.args as A, new CircuitOpenError('OPEN')));
      return;
    }
    this.#start(call, permit);
  }

  /**
   * @internal The limiter refused a queued call: reason `limit`, never a breaker failure; or the
   * circuit opened while it waited: reason `open`.
   */
  _refused(call: Call, error: LimitExceededError): void {
    this.#leaveQueue(call);
    this.#endTrial(call);
    call.answered = true;
    const answer = call.shed
      ? this.#fail('open', call.args as A, new CircuitOpenError('OPEN'))
      : this.#fail('limit', call.args as A, error);
    // Refused at admission: `fire` has no promise for the caller yet and returns this one.
    if (call.resolve === noop) this.#refusal = answer;
    else call.resolve(answer);
  }

  /** Counts, limiter snapshot and latency percentiles. */
  stats(): GuardStats {
    return {
      state: this.#state,
      breaker: this.breaker.stats,
      limiter: this.limiter.snapshot(),
      latency: this.#latency.summary(),
      trials: this.#trials,
    };
  }

  /**
   * Shuts the guard down: no new calls; every call in flight is aborted (its signal fires) and its
   * permit released; with a `timeout` its caller is rejected at once (code `SHUTDOWN`), without one the
   * caller's promise follows the action (derived from it), which the aborted signal should end. opossum
   * is shut down; the timeout timer and every listener the guard added are removed; an own limiter is
   * closed. An action that ignores its signal keeps running, but holds nothing of the guard's any more.
   */
  async shutdown(): Promise<void> {
    if (this.#shut) return;
    this.#shut = true;
    this.#timeouts.clear();
    const error = new LimitsError('SHUTDOWN', 'limits: guard shut down');
    for (let call = this.#callsHead; call !== undefined; call = call.cnext) {
      call.live = false;
      call._abort(error);
      if (!call.answered) {
        call.answered = true;
        call.resolve(Promise.reject(error));
      }
      // Calls in flight have started: `permit` is their permit.
      (call.permit as Permit).ignore();
    }
    this.#callsHead = undefined;
    for (const off of this.#unsubscribe) off();
    this.breaker.shutdown();
    if (this.#ownsLimiter) await this.limiter.close();
  }

  /**
   * Runs the action of `call` under `permit`. A call that waited in the queue already has its caller's
   * promise (`call.resolve`): it is answered through it, and this returns `undefined`. A call that got
   * its permit at once gets its promise here (returned), derived from the action's when there is no
   * timeout to answer it earlier.
   */
  #start(call: Call, permit: Permit): Promise<R> | undefined {
    call.permit = permit;
    const queued = call.resolve !== noop;
    const args = call.args as A;
    let result: R | PromiseLike<R>;
    let thenable: boolean;
    try {
      // A call without arguments skips the spread (a builtin call of its own).
      result =
        args.length === 0
          ? (this.#action as unknown as (ctx: CallContext) => R | PromiseLike<R>)(call)
          : this.#action(call, ...args);
      // (Inside the try: a `then` getter may throw too.)
      thenable = isThenable(result);
    } catch (error) {
      // Threw before starting anything: the permit goes back at once, the breaker does not count it.
      permit.ignore();
      this.#endTrial(call);
      call.answered = true;
      const answer = this.#fail('error', args, error);
      if (!queued) return answer;
      call.resolve(answer);
      return undefined;
    }
    if (!thenable) {
      this.#track(call);
      call.answered = true;
      this.#settled(call, undefined, result);
      if (!queued) return Promise.resolve(result);
      call.resolve(result);
      return undefined;
    }
    if (this.#timeoutMs === false && !queued) {
      // Without a timeout the caller is answered exactly when the action settles: derive its promise
      // from the action's instead of making a second one.
      this.#track(call);
      call.answered = true;
      return Promise.resolve(result).then(
        (value) => {
          this.#settled(call, undefined, value);
          return value;
        },
        (error: unknown) => {
          this.#settled(call, error ?? new Error('action rejected with undefined'), undefined);
          return this.#fail('error', args, error);
        },
      );
    }
    let promise: Promise<R> | undefined;
    if (!queued) {
      promise = new Promise<R>(this.#capture as (resolve: (value: R) => void) => void);
      call.resolve = this.#captured as (value: unknown) => void;
      this.#captured = undefined;
    }
    this.#track(call);
    try {
      (result as PromiseLike<R>).then(
        (value) => this.#settled(call, undefined, value),
        (error: unknown) =>
          this.#settled(call, error ?? new Error('action rejected with undefined'), undefined),
      );
    } catch (error) {
      // A thenable whose then() throws: the action failed with that error (as `await` would have
      // it), and its caller is answered now, through `call.resolve`.
      this.#settled(call, error ?? new Error('then() threw undefined'), undefined);
    }
    return promise;
  }

  /** Lists a started call as in flight (and in the timeout list, with a timeout). */
  #track(call: Call): void {
    const fresh = this.#freshNow;
    const start = Number.isNaN(fresh) ? this.#clock.now() : Math.max(fresh, this.#lastStart);
    this.#lastStart = start;
    call.start = start;
    const head = this.#callsHead;
    call.cnext = head;
    if (head !== undefined) head.cprev = call;
    this.#callsHead = call;
    if (this.#timeoutMs !== false) this.#timeouts.add(call);
  }

  /** The action settled (possibly long after its caller timed out). */
  #settled(call: Call, error: unknown, value: unknown): void {
    if (!call.live) return; // shut down meanwhile: already released
    call.live = false;
    if (call.cprev === undefined) this.#callsHead = call.cnext;
    else call.cprev.cnext = call.cnext;
    if (call.cnext !== undefined) call.cnext.cprev = call.cprev;
    this.#timeouts.remove(call);
    const now = this.#clock.now();
    this.#latency.record(now - call.start, now);
    const permit = call.permit as Permit;
    if (call.timedOut) {
      // Counted as a breaker failure when it timed out; now the permit can go back, as congestion.
      permit.dropped();
      return;
    }
    let outcome: GuardOutcome | undefined;
    try {
      outcome = this.#classify?.(error, value);
    } catch {
      outcome = undefined;
    }
    outcome ??= defaultOutcome(error);
    // Releasing may start queued calls right here: they take `now` as their start time.
    const outer = this.#freshNow;
    this.#freshNow = now;
    try {
      if (outcome === 'success') permit.success();
      else if (outcome === 'dropped') permit.dropped();
      else permit.ignore();
    } finally {
      this.#freshNow = outer;
    }
    if (outcome !== 'ignore') this.#record(outcome === 'success', call, error, now);
    else this.#endTrial(call);
    // A caller already answered (by a derived promise, or at its timeout) is not answered again.
    if (call.answered) return;
    call.answered = true;
    if (error === undefined) call.resolve(value);
    else call.resolve(this.#fail('error', call.args as A, error));
  }

  /** @internal The call's timeout elapsed: answer the caller now, keep the permit until it ends. */
  _timeout(call: Call): void {
    if (call.answered) return;
    call.timedOut = true;
    call.answered = true;
    const error = new CallTimeoutError(this.#timeoutMs as number);
    call._abort(error);
    this.#record(false, call, error, Number.NaN);
    call.resolve(this.#fail('timeout', call.args as A, error));
  }

  /** Reports a call's outcome to the circuit (`now`: the clock, for a success). */
  #record(ok: boolean, call: Call, error: unknown, now: number): void {
    // A call admitted in an earlier episode (the circuit changed state since) says nothing about the
    // state the circuit is in now, and holds no trial slot of this episode.
    if (call.episode !== this.#episode) return;
    if (call.trial) {
      this.#trials--;
      // opossum emits 'close'/'open' here: a listener of its own that throws must not strand the
      // settling call (the guard's own handlers never throw).
      try {
        if (ok) this.breaker.close();
        else this.breaker.open();
      } catch (error) {
        this.#report(error);
      }
      return;
    }
    if (ok) {
      // A success never changes a CLOSED circuit: it only counts in opossum's rolling window.
      const b = this.breaker;
      this.#countDirectly ??=
        b.listenerCount('fire') <= this.#ownFireListeners &&
        b.listenerCount('success') <= this.#ownSuccessListeners;
      if (!this.#countDirectly) {
        // Someone else listens to opossum's events (e.g. a metrics exporter): tell it as opossum's
        // own fire() would, minus the promise plumbing; opossum counts from these events.
        try {
          b.emit('fire', EMPTY_ARGS);
          b.emit('success', undefined, 0);
        } catch (error) {
          this.#report(error);
        }
        return;
      }
      // Otherwise add to the current bucket's counts directly. opossum's event path would also push
      // a latency sample per success into an array that only its rolling percentiles read (off
      // here): at 10^6 calls/s that array holds 10^7 numbers over a 10-second window.
      if (this.#bucket === undefined || now - this.#bucketReadAt >= BUCKET_REFRESH_MS) {
        this.#bucket = b.status.window[0];
        this.#bucketReadAt = now;
      }
      const bucket = this.#bucket as OpossumBucket;
      bucket.fires++;
      bucket.successes++;
    } else {
      // A failure goes through fire(), so opossum judges volume and error percentage and may open.
      // (opossum emits 'fire' synchronously: a listener of its own may throw.)
      try {
        this.breaker.fire(Promise.reject(error)).catch(noop);
      } catch (listenerError) {
        this.#report(listenerError);
      }
    }
  }

  /**
   * Answers a call that did not succeed: the fallback's result, or `error` without a fallback. A
   * fallback that returns is counted in opossum's `fallbacks` (as opossum's own fallback is).
   */
  #fail(reason: FallbackReason, args: A, error: unknown): Promise<R> {
    const fallback = this.#fallback;
    const listened = this.listenerCount('fallback') > 0;
    if (fallback === undefined && !listened) return Promise.reject(error);
    const cause = { reason, error } as FallbackCause;
    if (listened) this.#emit('fallback', cause);
    if (fallback === undefined) return Promise.reject(error);
    let result: R | PromiseLike<R>;
    try {
      result = fallback(cause, ...args);
    } catch (fallbackError) {
      return Promise.reject(fallbackError);
    }
    // opossum's rolling window counts its `fallback` event (as after its own fallbacks); a listener
    // of its own that throws must not take the caller's answer.
    try {
      this.breaker.emit('fallback', result, error);
    } catch (listenerError) {
      this.#report(listenerError);
    }
    return Promise.resolve(result);
  }

  /**
   * Every state change starts a new episode: trial slots start empty, calls of earlier episodes no
   * longer report to the circuit, and on opening every call still queued for a permit is shed.
   */
  #transition(to: CircuitState): void {
    const from = this.#state;
    if (from === to) return;
    this.#state = to;
    this.#episode++;
    this.#trials = 0;
    if (to === 'OPEN') this.#shedQueued();
    if (this.listenerCount('state') > 0) this.#emit('state', { from, to });
  }

  /**
   * Emits one of the guard's events. Every event the guard emits goes through here (callers check
   * that someone listens first): a listener that throws is reported (`#report`), never
   * thrown into the guard, the limiter or opossum, so the guard's state stays consistent and every
   * caller is answered.
   */
  #emit<E extends Exclude<keyof GuardEvents, 'error'>>(
    event: E,
    payload: Parameters<GuardEvents[E]>[0],
  ): void {
    try {
      (this.emit as (e: E, p: unknown) => boolean)(event, payload);
    } catch (error) {
      this.#report(error);
    }
  }

  /**
   * Reports a listener's error: on the guard's `error` event; without a listener there, on the
   * limiter's `error` event; without one there either (or when an `error` listener throws itself),
   * rethrown on a microtask — the limiter's rule for its own listeners.
   */
  #report(error: unknown): void {
    if (this.listenerCount('error') > 0) {
      try {
        this.emit('error', error);
        return;
      } catch {
        // An error listener that throws: rethrown below, like any listener error nobody handles.
      }
    } else if (this.limiter.listenerCount('error') > 0) {
      try {
        this.limiter.emit('error', error);
        return;
      } catch {
        // As above.
      }
    }
    queueMicrotask(() => {
      throw error;
    });
  }
}

/**
 * Guards `action` with a circuit breaker (opossum) over an adaptive limiter, with fallbacks.
 *
 * @param action - called as `action(ctx, ...args)`; `ctx.signal` aborts on timeout and shutdown.
 * @example
 * ```ts
 * const getUser = guard((ctx, id: string) => fetch(`${API}/users/${id}`, { signal: ctx.signal }).then((r) => r.json()), {
 *   timeout: 2000,
 *   probeSlots: 3,
 *   fallback: (_cause, id) => cache.get(id),
 * });
 * const user = await getUser.fire('42');
 * ```
 */
export function guard<A extends unknown[], R>(
  action: GuardedAction<A, R>,
  options?: GuardOptions<A, R>,
): Guard<A, R> {
  return new Guard(action, options);
}

export { LimitExceededError };
