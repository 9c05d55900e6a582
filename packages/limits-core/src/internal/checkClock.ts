import type { Clock } from './clock.js';
import { formatValue } from './validate.js';

/**
 * Validates an optional {@link Clock}: an object with `now`, `setTimeout` and `clearTimeout` functions.
 * @param name - the option's name in the message (e.g. `"clock"`).
 * @throws TypeError naming the option (`clock`, or the member that is not a function: `clock.now`).
 */
export function checkClock(name: string, value: unknown): Clock | undefined {
  if (value === undefined) return undefined;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(
      `limits: option "${name}" must be an object (a Clock: now, setTimeout and clearTimeout functions), got ${formatValue(value)}`,
    );
  }
  for (const fn of ['now', 'setTimeout', 'clearTimeout'] as const) {
    const member = (value as Record<string, unknown>)[fn];
    if (typeof member !== 'function') {
      throw new TypeError(
        `limits: option "${name}.${fn}" must be a function, got ${formatValue(member)}`,
      );
    }
  }
  return value as Clock;
}
