import { checkClock } from '../internal/checkClock.js';
import { type Clock, systemClock } from '../internal/clock.js';
import { checkKeys, checkNumber } from '../internal/validate.js';

/** Options of {@link RetryBudget}. */
export interface RetryBudgetOptions {
  /**
   * Retries allowed per request recorded in the window (`0.1`: one retry per ten requests), in
   * `[0, 1000]`.
   * @default 0.1
   */
  ratio?: number;
  /**
   * Retries per second allowed even with no traffic (a floor, so a service with few requests can
   * still retry), in `[0, 1e6]`. Counted over the same window: the floor is
   * `minPerSecond × windowMs / 1000` retries per window.
   * @default 10
   */
  minPerSecond?: number;
  /**
   * How long a request or a retry counts, in ms, in `(0, 3_600_000]` (1 hour).
   * @default 10_000
   */
  windowMs?: number;
  /** The source of time (only `now()` is used). @default the system clock */
  clock?: Clock;
}

const KEYS = ['ratio', 'minPerSecond', 'windowMs', 'clock'] as const;

/** Time buckets of the sliding window: memory is two arrays of this length, whatever the traffic. */
const BUCKETS = 10;

/**
 * Absorbs the rounding of `ratio × requests`, which can land just below the whole number it stands
 * for (`0.57 × 100` is `56.99999999999999`), relative to the allowance.
 */
const EPSILON = 1e-9;

/**
 * A retry budget, as Finagle's `RetryBudget` and gRPC's retry throttling: retries may add only a
 * bounded share of load to a dependency, whatever each caller's retry policy says. Every first
 * attempt deposits (`recordRequest()`), every retry withdraws (`tryRetry()`); a retry the budget
 * cannot pay for is refused, so a dependency failing 100 % of its calls sees at most
 * `1 + ratio` times its normal traffic (plus the small floor of `minPerSecond` retries per second),
 * not `maxAttempts` times.
 *
 * The arithmetic: requests and retries are counted over a sliding window of `windowMs`, kept as
 * 10 time buckets of `windowMs / 10` (bounded memory; an entry counts for between
 * 0.9 × and 1 × `windowMs`, until its bucket leaves the window). `tryRetry()` grants a retry only
 * if, after it, the retries counted in the window stay within the allowance, so **at every moment**
 *
 * `retries in the window ≤ ratio × requests in the window + minPerSecond × windowMs / 1000`.
 *
 * For example with `ratio: 0.1, minPerSecond: 0`, a burst of 1,000 calls that all fail gets at
 * most `0.1 × 1000 = 100` retries in total until the window slides past them; with the default
 * `minPerSecond: 10` and `windowMs: 10_000`, 100 more (the floor).
 *
 * Share one budget between every call to the same dependency (pass it to each
 * {@link RetryPolicy} that calls it).
 *
 * @example
 * ```ts
 * const budget = new RetryBudget({ ratio: 0.2, minPerSecond: 5 });
 * const retry = new RetryPolicy({ maxAttempts: 3, budget });
 * ```
 */
export class RetryBudget {
  readonly #ratio: number;
  /** `minPerSecond × windowMs / 1000`: retries per window allowed without requests. */
  readonly #reserve: number;
  readonly #bucketMs: number;
  readonly #clock: Clock;
  readonly #requests = new Float64Array(BUCKETS);
  readonly #retries = new Float64Array(BUCKETS);
  #requestTotal = 0;
  #retryTotal = 0;
  /** Absolute index of the current bucket: `floor(now / bucketMs)`. */
  #head: number;

  /**
   * @param options - see {@link RetryBudgetOptions}.
   * @throws TypeError for an unknown key (with the nearest valid name) or a value of the wrong
   *   type; RangeError for a value out of range.
   */
  constructor(options: RetryBudgetOptions = {}) {
    checkKeys('RetryBudget', options, KEYS);
    this.#ratio = checkNumber('ratio', options.ratio, 0.1, { min: 0, max: 1000 });
    const minPerSecond = checkNumber('minPerSecond', options.minPerSecond, 10, {
      min: 0,
      max: 1e6,
    });
    const windowMs = checkNumber('windowMs', options.windowMs, 10_000, {
      min: 0,
      minExclusive: true,
      max: 3_600_000,
    });
    this.#clock = checkClock('clock', options.clock) ?? systemClock;
    this.#reserve = (minPerSecond * windowMs) / 1000;
    this.#bucketMs = windowMs / BUCKETS;
    this.#head = Math.floor(this.#clock.now() / this.#bucketMs);
  }

  /** Records a request (a first attempt): deposits `ratio` retries for the next `windowMs`. */
  recordRequest(): void {
    const slot = this.#roll();
    this.#requests[slot] = (this.#requests[slot] as number) + 1;
    this.#requestTotal++;
  }

  /**
   * Withdraws one retry if the budget has one.
   * @returns `true` when the retry may go ahead (it is counted), `false` when it is refused by the
   *   budget (nothing is counted).
   */
  tryRetry(): boolean {
    const slot = this.#roll();
    const allowance = this.#allowance();
    if (this.#retryTotal + 1 > allowance + EPSILON * Math.max(1, allowance)) return false;
    this.#retries[slot] = (this.#retries[slot] as number) + 1;
    this.#retryTotal++;
    return true;
  }

  /** Retries available right now (whole retries, never negative), e.g. for a metrics gauge. */
  get available(): number {
    this.#roll();
    const allowance = this.#allowance();
    return Math.max(0, Math.floor(allowance + EPSILON * Math.max(1, allowance) - this.#retryTotal));
  }

  /** `ratio × requests in the window + reserve`. */
  #allowance(): number {
    return this.#ratio * this.#requestTotal + this.#reserve;
  }

  /**
   * Moves the window to now: empties the buckets that left it (a clock that goes back is ignored).
   * @returns the slot of the current bucket.
   */
  #roll(): number {
    const now = Math.floor(this.#clock.now() / this.#bucketMs);
    const passed = now - this.#head;
    if (passed >= BUCKETS) {
      this.#requests.fill(0);
      this.#retries.fill(0);
      this.#requestTotal = 0;
      this.#retryTotal = 0;
      this.#head = now;
    } else if (passed > 0) {
      for (let i = 1; i <= passed; i++) {
        const slot = slotOf(this.#head + i);
        this.#requestTotal -= this.#requests[slot] as number;
        this.#retryTotal -= this.#retries[slot] as number;
        this.#requests[slot] = 0;
        this.#retries[slot] = 0;
      }
      this.#head = now;
    }
    return slotOf(this.#head);
  }
}

/** The ring slot of an absolute bucket index (negative indexes too: a clock may start below 0). */
function slotOf(bucket: number): number {
  return ((bucket % BUCKETS) + BUCKETS) % BUCKETS;
}
