import { resolveAlgorithm } from '../algorithms/checkAlgorithm.js';
import { FixedLimit } from '../algorithms/FixedLimit.js';
import type { LimitAlgorithm } from '../algorithms/LimitAlgorithm.js';
import type { CostEstimator } from '../fairness/CostEstimator.js';
import { DeficitRoundRobin } from '../fairness/DeficitRoundRobin.js';
import { checkClock } from '../internal/checkClock.js';
import { type Clock, systemClock } from '../internal/clock.js';
import {
  checkFunction,
  checkKeys,
  checkNumber,
  checkOneOf,
  formatValue,
} from '../internal/validate.js';
import type { Classify } from '../permit/outcome.js';
import { PriorityAging, type PriorityOptions } from '../queue/PriorityAging.js';
import { RankOrder } from '../queue/RankOrder.js';
import type { Selector } from '../queue/Selector.js';
import type { ResolvedShedding } from '../shedding/AdmissionThreshold.js';
import type { SheddingOptions } from '../shedding/options.js';
import {
  type CapacityGate,
  type CodelOptions,
  GATE,
  type GatedOptions,
  type LimiterOptions,
  type QueueOrder,
} from './options.js';

/** @internal Validated limiter options with their defaults applied. */
export interface ResolvedOptions {
  algorithm: LimitAlgorithm;
  adaptive: boolean;
  probeSlots: number;
  maxQueued: number;
  maxQueuedBytes: number;
  maxQueueWaitMs: number;
  order: QueueOrder;
  codelTargetMs: number;
  standingMs: number;
  clock: Clock;
  stallThresholdMs: number;
  sampleEvery: number;
  /** The user's service-time guess; `undefined` when not given (see {@link ServiceTime}). */
  initialServiceMs: number | undefined;
  /** The largest cost the limiter can ever admit: `max(algorithm maxLimit, probeSlots)`. */
  maxCost: number;
  selector: Selector | undefined;
  estimator: CostEstimator | undefined;
  gate: CapacityGate | undefined;
  classify: Classify | undefined;
  trackLeaks: 'off' | 'on' | 'stack';
  /** Importance-based shedding, when on (its selector is then a {@link RankOrder}). */
  shedding: ResolvedShedding | undefined;
}

const unbounded = { min: 0, minExclusive: true, allowInfinity: true };
const positive = { min: 0, minExclusive: true };

/**
 * @internal Every key {@link LimiterOptions} accepts (unknown keys are refused with the nearest one).
 * An option added to `LimiterOptions` must be added here, and to the README's options table.
 */
export const LIMITER_OPTION_KEYS: readonly string[] = [
  'limit',
  'algorithm',
  'probeSlots',
  'maxQueued',
  'maxQueuedBytes',
  'maxQueueWaitMs',
  'queueOrder',
  'standingQueueMs',
  'codel',
  'clock',
  'classify',
  'stallThresholdMs',
  'sampleEvery',
  'initialServiceMs',
  'fairness',
  'priority',
  'trackLeaks',
  'shedding',
];

/** @internal The keys of {@link LimiterOptions.fairness}. */
export const FAIRNESS_OPTION_KEYS: readonly string[] = [
  'quantum',
  'maxCredit',
  'maxQueuedPerTenant',
  'estimator',
];
/** @internal The keys of {@link LimiterOptions.priority}. */
export const PRIORITY_OPTION_KEYS: readonly string[] = [
  'agingPerSecond',
  'maxAgedPriority',
  'minShare',
];
/** @internal The keys of {@link LimiterOptions.shedding}. */
export const SHEDDING_OPTION_KEYS: readonly string[] = [
  'targetWaitMs',
  'intervalMs',
  'cohorts',
  'resaltMs',
  'salt',
];
/** @internal The keys of {@link LimiterOptions.codel}. */
export const CODEL_OPTION_KEYS: readonly string[] = ['targetMs', 'intervalMs'];

/** Algorithm bounds a user may try to give the limiter itself. */
const ALGORITHM_BOUNDS = ['initialLimit', 'minLimit', 'maxLimit'];

/**
 * A feature switched on by an options object (`codel`, `fairness`, `priority`): `undefined` leaves it
 * off; `{}` turns it on with its defaults; anything else (`true`, `false`, `null`, `0`, `''`) is a
 * TypeError, so a flag cannot turn a feature on or off by accident.
 */
function checkFeature<T extends object>(
  name: string,
  value: unknown,
  keys: readonly string[],
): T | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(
      `limits: option "${name}" must be an object ({} for the defaults; leave it out for off), got ${formatValue(value)}`,
    );
  }
  checkKeys('Limiter', value, keys, `${name}.`);
  return value as T;
}

/**
 * @throws TypeError unless `value` is CostEstimator-like: `estimate` and `observe` functions and a
 *   `ceiling` that is a number > 0 (or absent).
 */
function checkEstimator(value: unknown): CostEstimator | undefined {
  if (value === undefined) return undefined;
  const shape = 'a CostEstimator (an object with estimate and observe functions)';
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(
      `limits: option "fairness.estimator" must be ${shape}, got ${formatValue(value)}`,
    );
  }
  const e = value as Partial<CostEstimator>;
  for (const fn of ['estimate', 'observe'] as const) {
    if (typeof e[fn] !== 'function') {
      throw new TypeError(
        `limits: option "fairness.estimator" must be ${shape}, got an object whose ${fn} is ${formatValue(e[fn])}`,
      );
    }
  }
  checkNumber('fairness.estimator.ceiling', e.ceiling, 1, unbounded);
  return value as CostEstimator;
}

/**
 * @internal Validates {@link LimiterOptions} and applies the defaults. Everything is checked before
 * anything is built, so a refused construction leaves nothing behind.
 * @throws TypeError for a wrong type or an unknown key (with the nearest valid name); RangeError for a
 *   value out of range. The message names the option, the allowed range and the value given.
 */
export function resolveOptions(options: LimiterOptions): ResolvedOptions {
  if (options !== null && typeof options === 'object') {
    for (const key of ALGORITHM_BOUNDS) {
      if (key in options && !LIMITER_OPTION_KEYS.includes(key)) {
        throw new TypeError(
          `limits: unknown option "${key}" for Limiter; the limit's bounds belong to its algorithm: new VegasLimit({ ${key} }) (or AimdLimit, GradientLimit)`,
        );
      }
    }
  }
  checkKeys('Limiter', options, LIMITER_OPTION_KEYS);
  const algorithm = resolveAlgorithm('Limiter', options, 20);
  const probeSlots = checkNumber('probeSlots', options.probeSlots, 1, { min: 0, integer: true });
  const order = checkOneOf<QueueOrder>('queueOrder', options.queueOrder, 'fifo', [
    'fifo',
    'lifo',
    'adaptive',
  ]);
  const codel = checkFeature<Partial<CodelOptions>>('codel', options.codel, CODEL_OPTION_KEYS);
  const codelTargetMs =
    codel === undefined ? Infinity : checkNumber('codel.targetMs', codel.targetMs, 5, positive);
  const codelIntervalMs =
    codel === undefined
      ? Infinity
      : checkNumber('codel.intervalMs', codel.intervalMs, 100, positive);
  const fairness = checkFeature<NonNullable<LimiterOptions['fairness']>>(
    'fairness',
    options.fairness,
    FAIRNESS_OPTION_KEYS,
  );
  let estimator: CostEstimator | undefined;
  if (fairness !== undefined) {
    if (typeof fairness.quantum !== 'function') {
      checkNumber('fairness.quantum', fairness.quantum, 1, positive);
    }
    checkNumber('fairness.maxCredit', fairness.maxCredit, 1, positive);
    checkNumber('fairness.maxQueuedPerTenant', fairness.maxQueuedPerTenant, 1, {
      min: 1,
      integer: true,
      allowInfinity: true,
    });
    estimator = checkEstimator(fairness.estimator);
  }
  const priority = checkFeature<PriorityOptions>(
    'priority',
    options.priority,
    PRIORITY_OPTION_KEYS,
  );
  if (priority !== undefined) {
    checkNumber('priority.agingPerSecond', priority.agingPerSecond, 1, { min: 0 });
    checkNumber('priority.maxAgedPriority', priority.maxAgedPriority, 0, { allowInfinity: true });
    const share = checkNumber('priority.minShare', priority.minShare, 0, { min: 0, max: 1 });
    if (share === 1) {
      throw new RangeError('limits: option "priority.minShare" must be a number in [0, 1), got 1');
    }
  }
  if (fairness !== undefined && priority !== undefined) {
    throw new RangeError(
      'limits: options "fairness" and "priority" cannot be combined; choose one',
    );
  }
  const clock = checkClock('clock', options.clock) ?? systemClock;
  const shedding = resolveShedding(options.shedding, clock);
  if (shedding !== undefined && (fairness !== undefined || priority !== undefined)) {
    throw new RangeError(
      `limits: option "shedding" cannot be combined with "${fairness === undefined ? 'priority' : 'fairness'}"; choose one`,
    );
  }
  const classify = checkFunction<Classify>('classify', options.classify);
  const gate = (options as GatedOptions)[GATE];
  const maxQueued = checkNumber('maxQueued', options.maxQueued, 0, {
    min: 0,
    integer: true,
    allowInfinity: true,
  });
  const maxQueuedBytes = checkNumber('maxQueuedBytes', options.maxQueuedBytes, Infinity, unbounded);
  const maxQueueWaitMs = checkNumber('maxQueueWaitMs', options.maxQueueWaitMs, Infinity, unbounded);
  const standingMs = checkNumber(
    'standingQueueMs',
    options.standingQueueMs,
    codel === undefined ? 100 : codelIntervalMs,
    { min: 0 },
  );
  const stallThresholdMs = checkNumber('stallThresholdMs', options.stallThresholdMs, 50, unbounded);
  const sampleEvery = checkNumber('sampleEvery', options.sampleEvery, 1, {
    min: 1,
    integer: true,
  });
  const initialServiceMs =
    options.initialServiceMs === undefined
      ? undefined
      : checkNumber('initialServiceMs', options.initialServiceMs, 0, { min: 0 });
  const maxLimit = algorithm.maxLimit;
  const maxCost = Math.max(typeof maxLimit === 'number' ? maxLimit : Infinity, probeSlots);
  // Built last: everything above is checked first (the selectors recheck their own ranges).
  let selector: Selector | undefined;
  if (fairness !== undefined) {
    selector = new DeficitRoundRobin(fairness, estimator?.ceiling ?? maxCost);
  } else if (priority !== undefined) {
    selector = new PriorityAging(priority);
  } else if (shedding !== undefined) {
    selector = new RankOrder(8 * shedding.cohorts);
  }
  return {
    algorithm,
    adaptive: !(algorithm instanceof FixedLimit),
    probeSlots,
    maxQueued,
    maxQueuedBytes,
    maxQueueWaitMs,
    order,
    codelTargetMs,
    standingMs,
    clock,
    stallThresholdMs,
    sampleEvery,
    initialServiceMs,
    maxCost,
    selector,
    estimator,
    gate,
    classify,
    trackLeaks: checkOneOf('trackLeaks', options.trackLeaks, 'on', ['off', 'on', 'stack']),
    shedding,
  };
}

/** The `shedding` option, checked (`undefined`: off). */
function resolveShedding(value: unknown, clock: Clock): ResolvedShedding | undefined {
  const o = checkFeature<SheddingOptions>('shedding', value, SHEDDING_OPTION_KEYS);
  if (o === undefined) return undefined;
  const salt = o.salt as unknown;
  if (salt !== undefined && typeof salt !== 'string') {
    throw new TypeError(
      `limits: option "shedding.salt" must be a string, got ${formatValue(salt)}`,
    );
  }
  return {
    targetWaitMs: checkNumber('shedding.targetWaitMs', o.targetWaitMs, 20, positive),
    intervalMs: checkNumber('shedding.intervalMs', o.intervalMs, 100, {
      min: 10,
      max: 10_000,
      integer: true,
    }),
    cohorts: checkNumber('shedding.cohorts', o.cohorts, 128, { min: 1, max: 1024, integer: true }),
    resaltMs: checkNumber('shedding.resaltMs', o.resaltMs, 3_600_000, {
      min: 60_000,
      allowInfinity: true,
    }),
    salt: salt ?? '',
    // The cohorts' period follows the wall clock, so services with the same salt agree on it.
    wallNow: clock === systemClock ? Date.now : () => clock.now(),
  };
}
