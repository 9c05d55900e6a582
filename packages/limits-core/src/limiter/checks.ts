import {
  checkKeys,
  checkNumber,
  checkSignal,
  checkString,
  type NumberRange,
} from '../internal/validate.js';
import type { LimitAlgorithm } from '../limit/LimitAlgorithm.js';
import { ACQUIRE_KEYS, type AcquireOptions } from './options.js';

/*
 * The ranges of the acquire options, allocated once: `checkAcquire` runs on every call with options,
 * and a range literal per check was four objects of garbage per call (enough to move a scavenge into
 * the drain of a long queue).
 */
const DEADLINE_RANGE: NumberRange = { allowInfinity: true };
const TIMEOUT_RANGE: NumberRange = { min: 0, allowInfinity: true };
const COST_RANGE: NumberRange = { min: 0, minExclusive: true };
const BYTES_RANGE: NumberRange = { min: 0 };

/**
 * Validates acquire options (every path, not only when queueing): unknown keys, types and ranges.
 * @throws TypeError/RangeError naming the option.
 */
export function checkAcquire(where: string, o: AcquireOptions): void {
  checkKeys(where, o, ACQUIRE_KEYS);
  checkSignal('signal', o.signal);
  checkNumber('deadline', o.deadline, 0, DEADLINE_RANGE);
  checkNumber('timeout', o.timeout, 0, TIMEOUT_RANGE);
  checkNumber('cost', o.cost, 1, COST_RANGE);
  checkNumber('bytes', o.bytes, 0, BYTES_RANGE);
  checkString('tenant', o.tenant);
  checkString('kind', o.kind);
  checkNumber('priority', o.priority, 0);
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
