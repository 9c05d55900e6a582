import type { LimitAlgorithm } from '../algorithms/LimitAlgorithm.js';
import type { MonotonicTime } from '../internal/MonotonicTime.js';
import {
  checkKeys,
  checkNumber,
  checkSignal,
  checkString,
  formatValue,
  type NumberRange,
} from '../internal/validate.js';
import { checkCriticality } from '../shedding/criticality.js';
import { ACQUIRE_KEYS, type AcquireOptions, type CloseOptions } from './options.js';

/*
 * The ranges of the acquire options, allocated once: `checkAcquire` runs on every call with options,
 * and a range literal per check was four objects of garbage per call (enough to move a scavenge into
 * the drain of a long queue).
 */
const DEADLINE_RANGE: NumberRange = { allowInfinity: true };
const TIMEOUT_RANGE: NumberRange = { min: 0, allowInfinity: true };
const COST_RANGE: NumberRange = { min: 0, minExclusive: true };
const BYTES_RANGE: NumberRange = { min: 0 };
const ATTEMPT_RANGE: NumberRange = { min: 1, integer: true };

/** How {@link checkAcquire} names the acquire options in messages: a path prefix and each full name. */
export interface AcquireOptionNames {
  readonly prefix: string;
  readonly signal: string;
  readonly deadline: string;
  readonly timeoutMs: string;
  readonly cost: string;
  readonly bytes: string;
  readonly tenant: string;
  readonly kind: string;
  readonly priority: string;
  readonly criticality: string;
  readonly attempt: string;
  readonly cohort: string;
}

/**
 * The names of the acquire options under `prefix` (e.g. `"acquire."` for a guard's `acquire` option).
 * Build them once: `checkAcquire` runs on every call with options and must not build strings.
 */
export function acquireOptionNames(prefix: string): AcquireOptionNames {
  return {
    prefix,
    signal: `${prefix}signal`,
    deadline: `${prefix}deadline`,
    timeoutMs: `${prefix}timeoutMs`,
    cost: `${prefix}cost`,
    bytes: `${prefix}bytes`,
    tenant: `${prefix}tenant`,
    kind: `${prefix}kind`,
    priority: `${prefix}priority`,
    criticality: `${prefix}criticality`,
    attempt: `${prefix}attempt`,
    cohort: `${prefix}cohort`,
  };
}

const PLAIN_NAMES = acquireOptionNames('');

/**
 * Validates acquire options (every path, not only when queueing): unknown keys, types and ranges.
 * @param where - what the options are for, in messages (`"acquire"`, `"run"`, `"guard"`).
 * @param names - the option names in messages (default: unprefixed); see {@link acquireOptionNames}.
 * @throws TypeError/RangeError naming the option.
 */
export function checkAcquire(
  where: string,
  o: AcquireOptions,
  names: AcquireOptionNames = PLAIN_NAMES,
): void {
  checkKeys(where, o, ACQUIRE_KEYS, names.prefix);
  checkSignal(names.signal, o.signal);
  checkNumber(names.deadline, o.deadline, 0, DEADLINE_RANGE);
  checkNumber(names.timeoutMs, o.timeoutMs, 0, TIMEOUT_RANGE);
  checkNumber(names.cost, o.cost, 1, COST_RANGE);
  checkNumber(names.bytes, o.bytes, 0, BYTES_RANGE);
  checkString(names.tenant, o.tenant);
  checkString(names.kind, o.kind);
  checkNumber(names.priority, o.priority, 0);
  if (o.criticality !== undefined) checkCriticality(names.criticality, o.criticality);
  checkNumber(names.attempt, o.attempt, 1, ATTEMPT_RANGE);
  checkString(names.cohort, o.cohort);
}

/**
 * `tryAcquire()`'s options: the cost asked for, or `NaN` when the call is refused before capacity
 * is even looked at (`signal` aborted, the deadline or `timeoutMs: 0` already passed).
 * @throws TypeError/RangeError for bad options, naming the option.
 */
export function tryAcquireCost(options: AcquireOptions, time: MonotonicTime): number {
  checkAcquire('tryAcquire', options);
  if (options.signal?.aborted) return Number.NaN;
  if (options.deadline !== undefined || options.timeoutMs !== undefined) {
    const now = time.now();
    if (time.deadline(options.deadline, options.timeoutMs, now) <= now) return Number.NaN;
  }
  return options.cost ?? 1;
}

/** The error of a `run()` whose `task` is not a function. */
export function taskError(task: unknown, name = 'task', method = 'run'): TypeError {
  return new TypeError(
    `limits: argument "${name}" of ${method}() must be a function, got ${formatValue(task)}`,
  );
}

/** A limit an algorithm may give: a number in `[0, Infinity)`. */
export function validLimit(value: unknown): value is number {
  return typeof value === 'number' && value >= 0 && value < Infinity;
}

/** The algorithm's class name, for messages. */
export function algorithmName(algorithm: LimitAlgorithm): string {
  const name = (algorithm as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object'
    ? name
    : 'a custom algorithm (plain object)';
}

/**
 * `close()`'s `timeoutMs` (`Infinity` when not given).
 * @throws TypeError/RangeError for bad options.
 */
export function closeTimeout(options: CloseOptions | undefined): number {
  if (options === undefined) return Infinity;
  checkKeys('close', options, ['timeoutMs']);
  return checkNumber('timeoutMs', options.timeoutMs, Infinity, { min: 0, allowInfinity: true });
}
