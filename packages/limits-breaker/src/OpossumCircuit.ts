/**
 * The one file that knows opossum: it builds the breaker, follows its state, feeds it outcomes, and
 * is the only place that relies on what opossum does not promise. Those reliances, each checked on
 * opossum 9 and 10 by test/opossum.contract.test.ts (which fails the moment one changes):
 *
 * - `status.window[0]` is the live current bucket of the rolling window (the getter copies the array,
 *   not the buckets), with `fires` and `successes` counters that `stats` sums: a success is counted by
 *   adding one to each, which skips opossum's event path (a promise round trip, and a latency sample
 *   pushed into an array only its rolling percentiles read — off here; at 10^6 calls/s that array
 *   holds 10^7 numbers over a 10-second window). Done only while nobody but opossum listens to
 *   `fire`/`success` (`listenerCount`); otherwise the guard emits those two events, as opossum's
 *   `fire()` would.
 * - The bucket is cached between rotations. Rotation is driven here: the breaker gets a
 *   `rotateBucketController` (opossum's option for rotating buckets from outside) and this adapter
 *   emits its `rotate` event every `floor(rollingCountTimeout / rollingCountBuckets)` ms, as opossum's
 *   own interval would, then forgets the cached bucket. So a success always lands in the current
 *   bucket, however short the bucket interval.
 * - `fire(rejectedPromise)` counts a failure and opens the circuit at the threshold; `open()` and
 *   `close()` force the state (a trial's outcome); the `open`, `halfOpen` and `close` events announce
 *   every state change; `emit('fallback')` is counted in `stats.fallbacks`.
 */
import { createRequire } from 'node:module';
import { EventEmitter } from 'eventemitter3';
import type { OpossumBreaker, OpossumConstructor } from './opossum.js';
import type { BreakerStats, CircuitState } from './types.js';

/** One bucket of opossum's rolling window: counts of one slice of time (a subset). */
interface MutableBucket {
  fires: number;
  successes: number;
}

/** The options the circuit is built from (the guard's, checked). */
export interface CircuitOptions {
  readonly CircuitBreaker: OpossumConstructor | undefined;
  readonly probeSlots: number;
  readonly errorThresholdPercentage: number;
  readonly resetTimeout: number;
  readonly rollingCountTimeout: number;
  readonly rollingCountBuckets: number;
  readonly volumeThreshold: number;
  readonly allowWarmUp: boolean;
  readonly name: string | undefined;
}

/**
 * What a call shows the circuit: whether it is a trial, and the episode it was admitted in. Each
 * state change starts a new episode; only calls of the current episode report to the circuit, and
 * only trials of the current HALF_OPEN episode hold one of its trial slots.
 */
export interface CircuitTicket {
  readonly trial: boolean;
  readonly episode: number;
}

const EMPTY_ARGS: unknown[] = [];
const noop = () => {};
const passThrough = (outcome: unknown) => outcome;
/** The event opossum's Status listens to on its `rotateBucketController`. */
const ROTATE = 'rotate';

let installedOpossum: OpossumConstructor | undefined;
function loadOpossum(): OpossumConstructor {
  installedOpossum ??= createRequire(import.meta.url)('opossum') as OpossumConstructor;
  return installedOpossum;
}

/**
 * The circuit a guard consults before each call and reports each outcome to, on an opossum breaker:
 * opossum keeps the state machine, the rolling window, the volume threshold and the reset timer; this
 * adds HALF_OPEN trial slots (`probeSlots` concurrent trials, where opossum alone lets one through)
 * and episodes.
 */
export class OpossumCircuit {
  /** The opossum instance (exposed as `guard.breaker`). */
  readonly breaker: OpossumBreaker;
  readonly #onStateChange: (from: CircuitState, to: CircuitState) => void;
  readonly #report: (error: unknown) => void;
  readonly #probeSlots: number;
  #state: CircuitState = 'CLOSED';
  #episode = 0;
  #trials = 0;
  /** Drives the rotation of opossum's buckets (see the file's header). */
  readonly #rotation = new EventEmitter();
  #rotateTimer: ReturnType<typeof setInterval> | undefined;
  /** opossum's own listeners of `fire` and `success` (more means someone else listens too). */
  readonly #ownFireListeners: number;
  readonly #ownSuccessListeners: number;
  /**
   * Whether only opossum listens to `fire`/`success` (successes are then counted into its bucket
   * directly); `undefined` after a listener change, recomputed at the next success; always false
   * when the breaker does not take its rotation from this adapter.
   */
  #countDirectly: boolean | undefined = undefined;
  readonly #canCountDirectly: boolean;
  /** opossum's current bucket, as read since the last rotation. */
  #bucket: MutableBucket | undefined = undefined;
  readonly #unsubscribe: () => void;

  /**
   * @param onStateChange - told of every state change, after which a new episode has begun (its
   *   trial slots are empty).
   * @param report - told of an error a listener of opossum's events threw (the circuit carries on).
   * @throws TypeError when `options.CircuitBreaker` does not build an opossum breaker.
   */
  constructor(
    options: CircuitOptions,
    onStateChange: (from: CircuitState, to: CircuitState) => void,
    report: (error: unknown) => void,
  ) {
    this.#onStateChange = onStateChange;
    this.#report = report;
    this.#probeSlots = options.probeSlots;
    const Opossum = options.CircuitBreaker ?? loadOpossum();
    // opossum sees only outcomes: the action is run by the guard, opossum's own timeout, capacity,
    // percentiles and AbortController are off (see the README for why).
    const breaker = checkBreaker(
      new Opossum(passThrough, {
        timeout: false,
        errorThresholdPercentage: options.errorThresholdPercentage,
        resetTimeout: options.resetTimeout,
        rollingCountTimeout: options.rollingCountTimeout,
        rollingCountBuckets: options.rollingCountBuckets,
        volumeThreshold: options.volumeThreshold,
        allowWarmUp: options.allowWarmUp,
        rollingPercentilesEnabled: false,
        enableSnapshots: false,
        rotateBucketController: this.#rotation,
        ...(options.name === undefined ? {} : { name: options.name }),
      }),
    );
    this.breaker = breaker;
    // A breaker that took the controller listens to it; one that did not rotates by itself, and a
    // cached bucket could go stale: then successes go through opossum's events only.
    this.#canCountDirectly = this.#rotation.listenerCount(ROTATE) > 0;
    if (this.#canCountDirectly) {
      const interval = Math.floor(options.rollingCountTimeout / options.rollingCountBuckets);
      const timer = setInterval(this.#rotate, interval);
      // Like opossum's own interval: the window does not keep the process alive.
      if (typeof timer.unref === 'function') timer.unref();
      this.#rotateTimer = timer;
    }
    this.#ownFireListeners = breaker.listenerCount('fire');
    this.#ownSuccessListeners = breaker.listenerCount('success');
    // Node's EventEmitter announces listener changes ('newListener' comes before the addition, so
    // the count is taken later, at the next success).
    const onListenerChange = (event: unknown) => {
      if (event === 'fire' || event === 'success') this.#countDirectly = undefined;
    };
    const onOpen = () => this.#transition('OPEN');
    const onHalfOpen = () => this.#transition('HALF_OPEN');
    const onClose = () => this.#transition('CLOSED');
    breaker.on('newListener', onListenerChange);
    breaker.on('removeListener', onListenerChange);
    breaker.on('open', onOpen);
    breaker.on('halfOpen', onHalfOpen);
    breaker.on('close', onClose);
    this.#unsubscribe = () => {
      breaker.removeListener('newListener', onListenerChange);
      breaker.removeListener('removeListener', onListenerChange);
      breaker.removeListener('open', onOpen);
      breaker.removeListener('halfOpen', onHalfOpen);
      breaker.removeListener('close', onClose);
    };
  }

  /** The current state. */
  get state(): CircuitState {
    return this.#state;
  }

  /** State changes so far (a call carries the episode it was admitted in). */
  get episode(): number {
    return this.#episode;
  }

  /** Trial calls of the current HALF_OPEN episode in flight (0 in any other state). */
  get trials(): number {
    return this.#trials;
  }

  /** HALF_OPEN with a trial slot free: takes the slot and returns true; false otherwise. */
  admitTrial(): boolean {
    if (this.#state !== 'HALF_OPEN' || this.#trials >= this.#probeSlots) return false;
    this.#trials++;
    return true;
  }

  /** A call ended without an outcome for the circuit (ignored, refused, never started): frees its trial slot. */
  endTrial(ticket: CircuitTicket): void {
    if (ticket.trial && ticket.episode === this.#episode) this.#trials--;
  }

  /** A call succeeded: counted in the window; a trial's success closes the circuit. */
  success(ticket: CircuitTicket): void {
    // A call admitted in an earlier episode (the circuit changed state since) says nothing about the
    // state the circuit is in now, and holds no trial slot of this episode.
    if (ticket.episode !== this.#episode) return;
    if (ticket.trial) {
      this.#trials--;
      this.#force(true);
      return;
    }
    // A success never changes a CLOSED circuit: it only counts in opossum's rolling window.
    const b = this.breaker;
    this.#countDirectly ??=
      this.#canCountDirectly &&
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
    // Otherwise add to the current bucket's counts directly (see the file's header).
    let bucket = this.#bucket;
    if (bucket === undefined) {
      bucket = b.status.window[0] as unknown as MutableBucket;
      this.#bucket = bucket;
    }
    bucket.fires++;
    bucket.successes++;
  }

  /** A call failed with `error`: the window may open the circuit; a trial's failure re-opens it. */
  failure(ticket: CircuitTicket, error: unknown): void {
    if (ticket.episode !== this.#episode) return;
    if (ticket.trial) {
      this.#trials--;
      this.#force(false);
      return;
    }
    // A failure goes through fire(), so opossum judges volume and error percentage and may open.
    // (opossum emits 'fire' synchronously: a listener of its own may throw.)
    try {
      this.breaker.fire(Promise.reject(error)).catch(noop);
    } catch (listenerError) {
      this.#report(listenerError);
    }
  }

  /** A fallback answered a call with `result` (counted in the window's `fallbacks`). */
  fallback(result: unknown, error: unknown): void {
    // opossum's rolling window counts its `fallback` event (as after its own fallbacks); a listener
    // of its own that throws must not take the caller's answer.
    try {
      this.breaker.emit('fallback', result, error);
    } catch (listenerError) {
      this.#report(listenerError);
    }
  }

  /** Rolling counts of the window. */
  stats(): BreakerStats {
    // Only the counts the guard feeds; opossum's other fields stay at their "off" values here.
    const { fires, successes, failures, fallbacks } = this.breaker.stats;
    return { fires, successes, failures, fallbacks };
  }

  /** Stops the circuit's timers and listeners, and opossum. */
  shutdown(): void {
    if (this.#rotateTimer !== undefined) clearInterval(this.#rotateTimer);
    this.#rotateTimer = undefined;
    this.#unsubscribe();
    this.breaker.shutdown();
  }

  /** A trial's outcome closes (`ok`) or re-opens the circuit. */
  #force(ok: boolean): void {
    // opossum emits 'close'/'open' here: a listener of its own that throws must not strand the
    // settling call (the circuit's own handlers never throw).
    try {
      if (ok) this.breaker.close();
      else this.breaker.open();
    } catch (error) {
      this.#report(error);
    }
  }

  /** opossum's buckets move on: the cached one is no longer the current one. */
  readonly #rotate = (): void => {
    this.#rotation.emit(ROTATE);
    this.#bucket = undefined;
  };

  /**
   * Every state change starts a new episode: trial slots start empty, and calls of earlier episodes
   * no longer report to the circuit.
   */
  #transition(to: CircuitState): void {
    const from = this.#state;
    if (from === to) return;
    this.#state = to;
    this.#episode++;
    this.#trials = 0;
    this.#onStateChange(from, to);
  }
}

/** What the guard calls on the breaker it builds. */
const BREAKER_METHODS = [
  'fire',
  'open',
  'close',
  'shutdown',
  'on',
  'emit',
  'removeListener',
  'listenerCount',
] as const;

/**
 * Checks that the `CircuitBreaker` option built something the guard can drive; shuts down what it
 * built otherwise.
 * @throws TypeError naming the option.
 */
function checkBreaker(breaker: unknown): OpossumBreaker {
  const missing = BREAKER_METHODS.filter(
    (m) => typeof (breaker as Record<string, unknown> | null)?.[m] !== 'function',
  );
  if (missing.length === 0) return breaker as OpossumBreaker;
  try {
    (breaker as { shutdown?: () => void } | null)?.shutdown?.();
  } catch {
    // best effort: the instance is discarded anyway
  }
  throw new TypeError(
    `limits: option "CircuitBreaker" must be opossum's CircuitBreaker (9 or 10), got a class whose instances lack ${missing.join(', ')}`,
  );
}
