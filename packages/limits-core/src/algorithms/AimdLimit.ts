import { checkBoolean, checkKeys, checkLimits, checkNumber, clamp } from '../internal/validate.js';
import type { LimitAlgorithm, LimitDecision, LimitReason, Sample } from './LimitAlgorithm.js';
import { usableSample } from './usableSample.js';

const KEYS = [
  'initialLimit',
  'minLimit',
  'maxLimit',
  'backoffRatio',
  'increaseBy',
  'timeoutMs',
  'slowStart',
] as const;

/** Options of {@link AimdLimit}. */
export interface AimdLimitOptions {
  /** Starting limit, ≥ 1. @default 20, clamped into `[minLimit, maxLimit]` */
  initialLimit?: number;
  /** Lowest limit, ≥ 1. @default 1 */
  minLimit?: number;
  /** Highest limit, ≥ 1. @default `max(1000, minLimit, initialLimit)` */
  maxLimit?: number;
  /**
   * Multiplier applied on a drop, in [0.5, 1). 0.9 (Netflix's default) gives up 10 % per
   * congestion event; TCP Reno uses 0.5.
   * @default 0.9
   */
  backoffRatio?: number;
  /** Units the limit grows per round of `limit` successful samples once past slow start. @default 1 */
  increaseBy?: number;
  /**
   * A sample slower than this counts as a drop, in ms (Netflix's AIMD has the same option), and a
   * call still in flight past it is late (see {@link AimdLimit.lateAfterMs}). Unset, both use a
   * retransmission timeout learned from the samples, as TCP's (RFC 6298): `srtt + max(4 × rttvar,
   * srtt)`.
   * @default Infinity (the learned retransmission timeout)
   */
  timeoutMs?: number;
  /**
   * Grow by `increaseBy` per sample (doubling per round) until the first drop, like TCP slow start,
   * then by `increaseBy` per round. Off: per-round growth from the start.
   * @default true
   */
  slowStart?: boolean;
}

/**
 * Additive increase, multiplicative decrease: loss-based, for downstreams whose only congestion
 * signal is a timeout or an explicit overload reply.
 *
 * A call that takes longer than a timeout is a loss, whether it comes back late or not at all: the
 * timeout is `timeoutMs` when set, else TCP's retransmission timeout over the successful samples,
 * `srtt + max(4 × rttvar, srtt)` ({@link AimdLimit.lateAfterMs}). A limiter reports calls still in
 * flight past it, and each report counts as a drop (reason `late`). Without it a limit whose calls
 * never come back (a downstream that drops requests silently, a task that retries inside its
 * permit) would never hear a sample and never come down.
 *
 * Per sample:
 * - dropped (or slower than the timeout) → `limit × backoffRatio` (reason `drop`), **once per round**: a drop
 *   from a call that started before the last decrease is ignored, since that decrease already answered
 *   the load it was admitted under (TCP's one reduction per window; per-sample backoff would collapse
 *   the limit when a whole round times out together);
 * - success while the limit is in use (`2 × inflight ≥ limit`) → `limit + increaseBy` in slow start,
 *   else `limit + increaseBy / limit` (reason `increase`);
 * - success while app-limited → unchanged (reason `app_limited`).
 *
 * @example
 * ```ts
 * const limiter = new Limiter({ algorithm: new AimdLimit({ initialLimit: 10, timeoutMs: 500 }) });
 * ```
 */
export class AimdLimit implements LimitAlgorithm {
  /** Why the last update decided what it did. */
  lastDecision?: LimitDecision;
  readonly #minLimit: number;
  readonly #maxLimit: number;
  readonly #backoff: number;
  readonly #increaseBy: number;
  readonly #timeoutMs: number;
  #slowStart: boolean;
  #limit: number;
  #lastDecreaseAt = -Infinity;
  /** Smoothed RTT and its mean deviation over the successful samples (RFC 6298); NaN before the first. */
  #srtt = Number.NaN;
  #rttvar = 0;

  /**
   * @throws RangeError/TypeError naming the option, the allowed range and the value given; TypeError
   *   for an unknown option (with the nearest valid name).
   */
  constructor(options: AimdLimitOptions = {}) {
    checkKeys('AimdLimit', options, KEYS, 'aimd.');
    const { initial, min, max } = checkLimits('aimd', options);
    this.#minLimit = min;
    this.#maxLimit = max;
    this.#backoff = checkNumber('aimd.backoffRatio', options.backoffRatio, 0.9, { min: 0.5 });
    if (this.#backoff >= 1) {
      throw new RangeError(
        `limits: option "aimd.backoffRatio" must be a number in [0.5, 1), got ${this.#backoff}`,
      );
    }
    this.#increaseBy = checkNumber('aimd.increaseBy', options.increaseBy, 1, {
      min: 0,
      minExclusive: true,
    });
    this.#timeoutMs = checkNumber('aimd.timeoutMs', options.timeoutMs, Infinity, {
      min: 0,
      minExclusive: true,
      allowInfinity: true,
    });
    this.#slowStart = checkBoolean('aimd.slowStart', options.slowStart, true);
    this.#limit = initial;
  }

  /** The highest limit this algorithm can answer (the limiter refuses costlier requests). */
  get maxLimit(): number {
    return this.#maxLimit;
  }

  /** The current limit. */
  get limit(): number {
    return this.#limit;
  }

  /**
   * The age in ms past which a call still in flight is late: `timeoutMs` when set, else the
   * retransmission timeout over the successful samples, `srtt + max(4 × rttvar, srtt)` (at least
   * twice the smoothed RTT; `Infinity` before the first sample).
   */
  get lateAfterMs(): number {
    if (this.#timeoutMs !== Infinity) return this.#timeoutMs;
    const srtt = this.#srtt;
    return Number.isNaN(srtt) ? Infinity : srtt + Math.max(4 * this.#rttvar, srtt);
  }

  /**
   * `count` calls still in flight have just passed {@link AimdLimit.lateAfterMs}: a drop (reason
   * `late`), `limit × backoffRatio`, once per report (a hanging call says as much as a timeout); ends
   * slow start. Called by the limiter; a count < 1 does nothing.
   */
  onLate(count: number, _inflight: number): void {
    if (!(count >= 1)) return;
    this.#slowStart = false;
    this.#limit = clamp(this.#limit * this.#backoff, this.#minLimit, this.#maxLimit);
    this.lastDecision = { reason: 'late', rttMs: this.lateAfterMs };
  }

  /** Feeds one sample; returns the new limit. */
  update(input: Sample): number {
    const sample = usableSample(input);
    if (sample === undefined) return this.#limit;
    // Slower than the timeout (the retransmission timeout before this sample when `timeoutMs` is
    // unset): a loss, as a call still out at that age is.
    const slow = sample.rtt > this.lateAfterMs;
    if (!sample.dropped) this.#smooth(sample.rtt);
    const L = this.#limit;
    let next = L;
    let reason: LimitReason;
    if (sample.dropped || slow) {
      reason = 'drop';
      if (sample.startTime >= this.#lastDecreaseAt) {
        next = L * this.#backoff;
        this.#lastDecreaseAt = sample.startTime + sample.rtt;
        this.#slowStart = false;
      }
    } else if (2 * sample.inflight >= L) {
      reason = 'increase';
      next = this.#slowStart ? L + this.#increaseBy : L + this.#increaseBy / L;
    } else {
      reason = 'app_limited';
    }
    this.#limit = clamp(next, this.#minLimit, this.#maxLimit);
    this.lastDecision = { reason, rttMs: sample.rtt };
    return this.#limit;
  }

  /** RFC 6298's smoothed RTT and mean deviation, from one successful sample. */
  #smooth(rtt: number): void {
    if (Number.isNaN(this.#srtt)) {
      this.#srtt = rtt;
      this.#rttvar = rtt / 2;
      return;
    }
    this.#rttvar += (Math.abs(this.#srtt - rtt) - this.#rttvar) / 4;
    this.#srtt += (rtt - this.#srtt) / 8;
  }
}
