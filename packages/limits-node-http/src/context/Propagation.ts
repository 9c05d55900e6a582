/**
 * Outbound propagation: how `limitFetch` and `limitInterceptor` carry the request context to the
 * next service (the `propagate` option, checked once), and what one outbound call takes from it — its
 * time limit, its acquire options and the headers it sends.
 */
import { type AcquireOptions, LimitExceededError } from 'limits-core';
import { checkKeys, checkNumber, formatValue } from 'limits-core/internal';
import { checkHeaderName } from '../shared/headerName.js';
import { activeContext, type Context } from './RequestContext.js';

/** The `propagate` option of `limitFetch` and `limitInterceptor`, as an object. */
export interface PropagateOptions {
  /**
   * Ms kept back from the request's remaining budget for the way back (the network, reading the
   * answer): the time limit sent and used is the budget minus this. A call whose budget is at most
   * this is refused before it is sent. A number in [0, 60_000].
   * @default 10
   */
  marginMs?: number;
  /** The header carrying the time limit (relative ms); `false`: not sent. @default 'x-request-timeout-ms' */
  timeoutHeader?: string | false;
  /** The header carrying the criticality; `false`: not sent. @default 'x-request-criticality' */
  criticalityHeader?: string | false;
  /** The header carrying this call's attempt number; `false`: not sent. @default 'x-request-attempt' */
  attemptHeader?: string | false;
}

/**
 * The per-call opt-out: `propagate: false` in `limitFetch`'s `init` or in `limitInterceptor`'s
 * dispatch options sends the call as if there were no request context.
 */
export interface PropagateOption {
  /** `false`: this call ignores the request context (no headers, budget, criticality or signal). */
  propagate?: boolean;
}

/** The default time limit header, read by `loadShed` and sent by `limitFetch` / `limitInterceptor`. */
export const TIMEOUT_HEADER = 'x-request-timeout-ms';
/** The default criticality header. */
export const CRITICALITY_HEADER = 'x-request-criticality';
/** The default attempt header. */
export const ATTEMPT_HEADER = 'x-request-attempt';

const KEYS = ['marginMs', 'timeoutHeader', 'criticalityHeader', 'attemptHeader'] as const;
const MARGIN_RANGE = { min: 0, max: 60_000 };

/** The `propagate` option, checked: one per `limitFetch` / `limitInterceptor`. */
export class Propagation {
  readonly marginMs: number;
  readonly #timeoutHeader: string | undefined;
  readonly #criticalityHeader: string | undefined;
  readonly #attemptHeader: string | undefined;

  private constructor(o: PropagateOptions) {
    this.marginMs = checkNumber('propagate.marginMs', o.marginMs, 10, MARGIN_RANGE);
    this.#timeoutHeader = checkHeaderName(
      'propagate.timeoutHeader',
      o.timeoutHeader,
      TIMEOUT_HEADER,
    );
    this.#criticalityHeader = checkHeaderName(
      'propagate.criticalityHeader',
      o.criticalityHeader,
      CRITICALITY_HEADER,
    );
    this.#attemptHeader = checkHeaderName(
      'propagate.attemptHeader',
      o.attemptHeader,
      ATTEMPT_HEADER,
    );
  }

  /**
   * Checks the `propagate` option: `true` or left out (the defaults), `false` (off: `undefined`), or
   * {@link PropagateOptions}.
   * @throws TypeError/RangeError naming the option.
   */
  static resolve(value: unknown): Propagation | undefined {
    if (value === false) return undefined;
    if (value === undefined || value === true) return new Propagation({});
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new TypeError(
        `limits: option "propagate" must be true, false or an object, got ${formatValue(value)}`,
      );
    }
    checkKeys('propagate', value, KEYS, 'propagate.');
    return new Propagation(value as PropagateOptions);
  }

  /**
   * The context a call carries: the current one, unless the call opted out (`perCall === false`).
   * @throws LimitExceededError (reason `deadline`) when the request has no more than `marginMs`
   *   left: nothing is sent.
   */
  contextOf(perCall: unknown): Context | undefined {
    if (perCall === false) return undefined;
    const context = activeContext();
    if (context === undefined || context.deadline === undefined) return context;
    const leftMs = context.remainingMs();
    if (leftMs <= this.marginMs) {
      throw new LimitExceededError(
        `limits: the request's time budget is spent (${Math.floor(leftMs)} ms left, margin ${this.marginMs} ms): not sent`,
        { reason: 'deadline' },
      );
    }
    return context;
  }

  /** A call's time limit in ms: its own `timeoutMs`, or less when the request has less left. */
  timeLimitMs(context: Context, ownMs: number): number {
    return Math.min(ownMs, context.remainingMs() - this.marginMs);
  }

  /**
   * One attempt's acquire options: what is left of its time limit (`leftMs`, `Infinity`: none),
   * the request's criticality and cohort, the attempt's number, and `signal` when given.
   */
  acquireOptions(
    context: Context,
    leftMs: number,
    attempt: number,
    signal: AbortSignal | undefined,
  ): AcquireOptions {
    const options: AcquireOptions = { criticality: context.criticality, attempt };
    if (leftMs !== Infinity) options.timeoutMs = Math.max(0, leftMs);
    if (context.cohort !== undefined) options.cohort = context.cohort;
    if (signal !== undefined) options.signal = signal;
    return options;
  }

  /**
   * The headers one attempt sends, as `[name, value]` pairs: the time left (`leftMs`, in whole ms;
   * none when `Infinity`), the criticality and the attempt's number, each unless turned off.
   */
  headers(context: Context, leftMs: number, attempt: number): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    const timeout = this.#timeoutHeader;
    if (timeout !== undefined && leftMs !== Infinity) {
      out.push([timeout, String(Math.max(0, Math.floor(leftMs)))]);
    }
    if (this.#criticalityHeader !== undefined) {
      out.push([this.#criticalityHeader, context.criticality]);
    }
    if (this.#attemptHeader !== undefined) out.push([this.#attemptHeader, String(attempt)]);
    return out;
  }
}
