import type { CostEstimator } from '../fairness/CostEstimator.js';
import { type Clock, systemClock } from '../internal/clock.js';
import { checkFunction, checkNumber, checkOneOf } from '../internal/validate.js';
import { FixedLimit } from '../limit/FixedLimit.js';
import type { LimitAlgorithm } from '../limit/LimitAlgorithm.js';
import { DeficitRoundRobin } from '../queue/DeficitRoundRobin.js';
import { PriorityAging } from '../queue/PriorityAging.js';
import type { Selector } from '../queue/Selector.js';
import type { CapacityGate, LimiterOptions, QueueOrder } from './options.js';
import type { Classify } from './outcome.js';

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
  initialServiceMs: number;
  /** The largest cost the limiter can ever admit: `max(algorithm maxLimit, probeSlots)`. */
  maxCost: number;
  selector: Selector | undefined;
  estimator: CostEstimator | undefined;
  gate: CapacityGate | undefined;
  classify: Classify | undefined;
  trackLeaks: 'off' | 'on' | 'stack';
}

const unbounded = { min: 0, minExclusive: true, allowInfinity: true };

/**
 * @internal Validates {@link LimiterOptions} and applies the defaults.
 * @throws RangeError/TypeError naming the option, the allowed range and the value given.
 */
export function resolveOptions(options: LimiterOptions): ResolvedOptions {
  const limit = options.limit ?? 20;
  let algorithm: LimitAlgorithm;
  if (typeof limit === 'number') {
    algorithm = new FixedLimit(limit);
  } else if (
    limit !== null &&
    typeof limit === 'object' &&
    typeof limit.update === 'function' &&
    typeof limit.limit === 'number'
  ) {
    algorithm = limit;
  } else {
    throw new TypeError(
      'limits: option "limit" must be a number or a LimitAlgorithm (an object with limit and update)',
    );
  }
  const probeSlots = checkNumber('probeSlots', options.probeSlots, 1, { min: 0, integer: true });
  const order = options.queueOrder ?? 'fifo';
  if (order !== 'fifo' && order !== 'lifo' && order !== 'adaptive') {
    throw new RangeError(
      `limits: option "queueOrder" must be one of 'fifo', 'lifo', 'adaptive', got ${String(order)}`,
    );
  }
  const codel = options.codel;
  const positive = { min: 0, minExclusive: true };
  const codelTargetMs = codel
    ? checkNumber('codel.targetMs', codel.targetMs, 5, positive)
    : Infinity;
  const codelIntervalMs = codel
    ? checkNumber('codel.intervalMs', codel.intervalMs, 100, positive)
    : Infinity;
  const maxLimit = algorithm.maxLimit;
  const maxCost = Math.max(typeof maxLimit === 'number' ? maxLimit : Infinity, probeSlots);
  if (options.fairness !== undefined && options.priority !== undefined) {
    throw new RangeError(
      'limits: options "fairness" and "priority" cannot be combined; choose one',
    );
  }
  const estimator = options.fairness?.estimator;
  let selector: Selector | undefined;
  if (options.fairness !== undefined) {
    selector = new DeficitRoundRobin(options.fairness, estimator?.ceiling ?? maxCost);
  } else if (options.priority !== undefined) {
    selector = new PriorityAging(options.priority);
  }
  return {
    algorithm,
    adaptive: !(algorithm instanceof FixedLimit),
    probeSlots,
    maxQueued: checkNumber('maxQueued', options.maxQueued, 0, {
      min: 0,
      integer: true,
      allowInfinity: true,
    }),
    maxQueuedBytes: checkNumber('maxQueuedBytes', options.maxQueuedBytes, Infinity, unbounded),
    maxQueueWaitMs: checkNumber('maxQueueWaitMs', options.maxQueueWaitMs, Infinity, unbounded),
    order,
    codelTargetMs,
    standingMs: checkNumber(
      'standingQueueMs',
      options.standingQueueMs,
      codel ? codelIntervalMs : 100,
      {
        min: 0,
      },
    ),
    clock: options.clock ?? systemClock,
    stallThresholdMs: checkNumber('stallThresholdMs', options.stallThresholdMs, 50, unbounded),
    sampleEvery: checkNumber('sampleEvery', options.sampleEvery, 1, { min: 1, integer: true }),
    initialServiceMs: checkNumber('initialServiceMs', options.initialServiceMs, 1000, { min: 0 }),
    maxCost,
    selector,
    estimator,
    gate: options.gate,
    classify: checkFunction<Classify>('classify', options.classify),
    trackLeaks: checkOneOf('trackLeaks', options.trackLeaks, 'on', ['off', 'on', 'stack']),
  };
}
