/**
 * The hold-time guess for deadline admission before any call was timed, when `initialServiceMs` is
 * not given.
 */
const DEFAULT_INITIAL_MS = 1000;
/** Weight of a new hold time in the service-time average. */
const SERVICE_WEIGHT = 1 / 16;
/**
 * A single hold time counts at most this many times the current service-time estimate: a clock that
 * jumps forward (an injected `Date.now`-style clock) must not set the estimate to hours, while a
 * real slow-down still moves it (by up to ×1.56 per sample, so 10 ms → 5 s in about 14 samples).
 */
const SERVICE_SAMPLE_CAP = 10;

/**
 * @internal A limiter's estimate of how long a permit is held (its service time): an exponentially
 * weighted mean of the timed hold times and of their absolute deviation. It sizes deadline-aware
 * admission, the deadline checks at dispatch and `retryAfterMs`. Before a hold time was measured,
 * deadline checks use `initialServiceMs` (1000 ms when not given), while `retryAfterMs` has an
 * estimate only when `initialServiceMs` was given: a default guess is no basis for telling a caller
 * when to come back.
 */
export class ServiceTime {
  readonly #initialMs: number;
  /** `initialServiceMs` was given: the user's guess counts as an estimate for `retryAfterMs`. */
  readonly #guessGiven: boolean;
  /** Mean hold time (ms); 0 until the first timed release. */
  meanMs = 0;
  /** Mean absolute deviation of the hold time (same weight): the margin of deadline checks. */
  devMs = 0;

  /**
   * @param initialMs - the estimate before any call was timed (`initialServiceMs`; `undefined`
   *   when not given).
   */
  constructor(initialMs: number | undefined) {
    this.#initialMs = initialMs ?? DEFAULT_INITIAL_MS;
    this.#guessGiven = initialMs !== undefined;
  }

  /** The estimate: the mean hold time, or the initial estimate before the first sample. */
  estimate(): number {
    return this.meanMs > 0 ? this.meanMs : this.#initialMs;
  }

  /**
   * The estimate for `retryAfterMs`: {@link estimate} once a hold time was measured (one of 0 ms,
   * under the clock's resolution, does not count) or when `initialServiceMs` was given; `undefined`
   * before that (no estimate exists).
   */
  retryEstimate(): number | undefined {
    return this.meanMs > 0 || this.#guessGiven ? this.estimate() : undefined;
  }

  /**
   * Time a call needs to finish once started, for deadline checks: the mean hold time plus twice its
   * mean deviation, so a call with just the mean left is not started to finish late half the time.
   */
  finishMargin(): number {
    return this.estimate() + 2 * this.devMs;
  }

  /** Adds a timed hold time (ms, never negative: the limiter's time does not go backwards). */
  observe(rtt: number): void {
    if (this.meanMs === 0) {
      this.meanMs = Math.min(rtt, SERVICE_SAMPLE_CAP * this.#initialMs);
      return;
    }
    // A clock jump forward must not set the estimate to hours: one sample counts at most
    // SERVICE_SAMPLE_CAP times the current estimate.
    const sample = Math.min(rtt, SERVICE_SAMPLE_CAP * this.meanMs);
    this.devMs += (Math.abs(sample - this.meanMs) - this.devMs) * SERVICE_WEIGHT;
    this.meanMs += (sample - this.meanMs) * SERVICE_WEIGHT;
  }
}
