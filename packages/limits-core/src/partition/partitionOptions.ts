import { resolveAlgorithm } from '../algorithms/checkAlgorithm.js';
import { FixedLimit } from '../algorithms/FixedLimit.js';
import type { LimitAlgorithm } from '../algorithms/LimitAlgorithm.js';
import { checkClock } from '../internal/checkClock.js';
import type { Clock } from '../internal/clock.js';
import {
  checkFunction,
  checkKeys,
  checkNumber,
  checkObject,
  formatValue,
} from '../internal/validate.js';
import type { LimiterOptions } from '../limiter/options.js';
import type { Classify } from '../permit/outcome.js';

/** Settings of one partition of a {@link PartitionedLimiter}. */
export interface PartitionOptions
  extends Pick<
    LimiterOptions,
    | 'maxQueued'
    | 'maxQueuedBytes'
    | 'maxQueueWaitMs'
    | 'queueOrder'
    | 'standingQueueMs'
    | 'codel'
    | 'fairness'
    | 'priority'
    | 'initialServiceMs'
  > {
  /**
   * Capacity reserved for this partition and never lent to others: a whole number of units ≥ 0, or a
   * fraction in (0, 1) of the current total limit (rounded down). Fractions add up to at most 1, and
   * all reserves to at most the total (a fixed one, or an adaptive one's `maxLimit`).
   * @default 0
   */
  reserved?: number;
  /**
   * Most units this partition may borrow from the shared pool on top of its reserve: an integer ≥ 0,
   * or `Infinity`.
   * @default Infinity
   */
  maxBorrow?: number;
}

/** Options of {@link PartitionedLimiter}. */
export interface PartitionedLimiterOptions {
  /** Total capacity, fixed: an integer ≥ 1. Give this or `algorithm`. */
  limit?: number;
  /**
   * Total capacity, adaptive: an algorithm fed by every partition's calls (its `maxLimit`, when it has
   * one, bounds what a partition can ever have). Give this or `limit`.
   */
  algorithm?: LimitAlgorithm;
  /** The partitions by name (at least one); each partition's options are checked like a Limiter's. */
  partitions: Record<string, PartitionOptions>;
  /** Time source and timers. @default the system clock */
  clock?: Clock;
  /** Outcome of `run` tasks, for every partition. */
  classify?: Classify;
  /** Event-loop stall threshold for adaptive totals; see {@link LimiterOptions.stallThresholdMs}. */
  stallThresholdMs?: number;
}

const OPTION_KEYS = [
  'limit',
  'algorithm',
  'partitions',
  'clock',
  'classify',
  'stallThresholdMs',
] as const;
const PARTITION_KEYS = [
  'reserved',
  'maxBorrow',
  'maxQueued',
  'maxQueuedBytes',
  'maxQueueWaitMs',
  'queueOrder',
  'standingQueueMs',
  'codel',
  'fairness',
  'priority',
  'initialServiceMs',
] as const;

/** @internal One partition's checked settings. */
export interface PartitionSpec {
  name: string;
  reserved: number;
  maxBorrow: number;
  /** Its queue options, handed to its Limiter (which checks them). */
  queue: PartitionOptions;
}

/** @internal {@link PartitionedLimiterOptions} checked. */
export interface ResolvedPartitionedOptions {
  /** The total: the user's algorithm, or a `FixedLimit` for a number. */
  total: LimitAlgorithm;
  /** The total is a fixed number. */
  fixed: boolean;
  /** The largest total: the fixed one, or the algorithm's `maxLimit` (floored; `Infinity` without one). */
  maxTotal: number;
  partitions: PartitionSpec[];
}

/**
 * @internal Checks every option of a {@link PartitionedLimiter} but the partitions' queue options
 * (their Limiters check those).
 * @throws TypeError for a wrong type or an unknown key (with the nearest valid name), RangeError for
 *   a value out of range: each names the option, the allowed range and the value given.
 */
export function resolvePartitionedOptions(
  options: PartitionedLimiterOptions,
): ResolvedPartitionedOptions {
  if (options === undefined) {
    throw new TypeError(
      'limits: PartitionedLimiter options must be an object with "limit" (or "algorithm") and "partitions", got undefined',
    );
  }
  checkKeys('PartitionedLimiter', options, OPTION_KEYS);
  if (options.limit === undefined && options.algorithm === undefined) {
    throw new TypeError(
      'limits: PartitionedLimiter needs its total: "limit" (an integer ≥ 1) or "algorithm" (a LimitAlgorithm)',
    );
  }
  const total = resolveAlgorithm('PartitionedLimiter', options, 1);
  const fixed = total instanceof FixedLimit;
  const maxTotal = fixed
    ? total.limit
    : Math.floor(
        checkNumber('algorithm.maxLimit', total.maxLimit, Infinity, {
          min: 0,
          allowInfinity: true,
        }),
      );
  checkClock('clock', options.clock);
  checkFunction('classify', options.classify);
  checkNumber('stallThresholdMs', options.stallThresholdMs, 50, {
    min: 0,
    minExclusive: true,
    allowInfinity: true,
  });
  const partitions = options.partitions as unknown;
  if (partitions === undefined) {
    throw new TypeError(
      'limits: option "partitions" must be an object naming at least one partition, got undefined',
    );
  }
  checkObject('partitions', partitions);
  const specs: PartitionSpec[] = [];
  let absolute = 0;
  let fractions = 0;
  for (const name of Object.keys(partitions as object)) {
    const p = (partitions as Record<string, unknown>)[name] as PartitionOptions | undefined;
    checkKeys('PartitionedLimiter', p, PARTITION_KEYS, `partitions.${name}.`);
    const reserved = checkNumber(`partitions.${name}.reserved`, p?.reserved, 0, { min: 0 });
    if (reserved > 0 && reserved < 1) fractions += reserved;
    else if (!Number.isInteger(reserved)) {
      throw new RangeError(
        `limits: option "partitions.${name}.reserved" must be a whole number of units or a fraction in (0, 1), got ${formatValue(reserved)}`,
      );
    } else absolute += reserved;
    const maxBorrow = checkNumber(`partitions.${name}.maxBorrow`, p?.maxBorrow, Infinity, {
      min: 0,
      integer: true,
      allowInfinity: true,
    });
    const { reserved: _r, maxBorrow: _m, ...queue } = p ?? {};
    specs.push({ name, reserved, maxBorrow, queue });
  }
  if (specs.length === 0)
    throw new RangeError('limits: option "partitions" must name at least one partition');
  if (fractions > 1) {
    throw new RangeError(
      `limits: the fractional reserves of "partitions" add up to ${fractions}, more than 1`,
    );
  }
  if (maxTotal !== Infinity && absolute + Math.floor(fractions * maxTotal) > maxTotal) {
    throw new RangeError(
      `limits: the reserves of "partitions" add up to ${absolute} units (+ fractions), more than the total limit ${maxTotal}${fixed ? '' : " (the algorithm's maxLimit)"}`,
    );
  }
  return { total, fixed, maxTotal, partitions: specs };
}

/**
 * A partition's Limiter refused one of its options: the same error, naming the option by its full
 * path (`partitions.<name>.maxQueued`).
 */
export function prefixed(error: unknown, prefix: string): unknown {
  if (!(error instanceof TypeError || error instanceof RangeError)) return error;
  const message = error.message
    .replace(/(options? ")/g, `$1${prefix}`)
    .replace(/(did you mean ")/g, `$1${prefix}`)
    .replace(/ for Limiter\b/g, ' for PartitionedLimiter');
  const Ctor = error instanceof TypeError ? TypeError : RangeError;
  return new Ctor(message, { cause: error });
}
