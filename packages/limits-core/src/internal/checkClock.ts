import type { Clock } from './clock.js';
import { formatValue } from './validate.js';

/**
 * Validates an optional {@link Clock}: an object with `now`, `setTimeout` and `clearTimeout` functions.
 * @param name - the option's name in the message (e.g. `"clock"`).
 * @throws TypeError naming the option and the missing member.
 */
export function checkClock(name: string, value: unknown): Clock | undefined {
  if (value === undefined) return undefined;
  const shape = 'a Clock (an object with now, setTimeout and clearTimeout functions)';
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`limits: option "${name}" must be ${shape}, got ${formatValue(value)}`);
  }
  for (const fn of ['now', 'setTimeout', 'clearTimeout'] as const) {
    const member = (value as Record<string, unknown>)[fn];
    if (typeof member !== 'function') {
      throw new TypeError(
        `limits: option "${name}" must be ${shape}, got an object whose ${fn} is ${formatValue(member)}`,
      );
    }
  }
  return value as Clock;
}
