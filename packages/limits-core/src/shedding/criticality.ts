import { checkOneOf } from '../internal/validate.js';

/**
 * How much a request matters to the business, in the four levels of Google's SRE book, from the
 * most important: `critical_plus` (the last to be shed: a user-visible failure is severe),
 * `critical` (the default: user-visible work), `sheddable_plus` (work that can wait or be retried
 * later, e.g. batch jobs), `sheddable` (best effort: prefetches, speculative work, analytics).
 * Under overload a {@link Limiter} with `shedding` refuses lower levels before higher ones, and never
 * a higher one while it admits a lower one.
 */
export type Criticality = (typeof CRITICALITIES)[number];

/** Every {@link Criticality}, from the most important to the least. */
export const CRITICALITIES = ['critical_plus', 'critical', 'sheddable_plus', 'sheddable'] as const;

/** The level of a call that names none: `critical`, as in Google's SRE practice. */
export const DEFAULT_CRITICALITY: Criticality = 'critical';

/**
 * A level's position from the bottom: `sheddable` 0, `sheddable_plus` 1, `critical` 2,
 * `critical_plus` 3.
 */
export function criticalityLevel(criticality: Criticality): number {
  switch (criticality) {
    case 'sheddable':
      return 0;
    case 'sheddable_plus':
      return 1;
    case 'critical':
      return 2;
    default:
      return 3;
  }
}

const NAMES: ReadonlyMap<string, Criticality> = new Map(
  CRITICALITIES.flatMap((c) => [
    [c, c],
    [c.toUpperCase(), c],
    [c.replace('_', '-'), c],
    [c.replace('_', '-').toUpperCase(), c],
  ]),
);

/**
 * Reads a criticality from untrusted text (a request header): one of the four names, in lower or
 * upper case, with `_` or `-` (`critical_plus`, `CRITICAL_PLUS`, `critical-plus`), surrounded by
 * optional spaces. Anything else (another word, a list, an array of repeated headers, over 32
 * characters) is `undefined`.
 */
export function parseCriticality(value: unknown): Criticality | undefined {
  if (typeof value !== 'string' || value.length > 32) return undefined;
  return NAMES.get(value.trim());
}

/**
 * @internal Checks a `criticality` option; `undefined` gives {@link DEFAULT_CRITICALITY}.
 * @throws TypeError (not a string) or RangeError (another word) naming the option and the levels.
 */
export function checkCriticality(name: string, value: unknown): Criticality {
  return checkOneOf(name, value, DEFAULT_CRITICALITY, CRITICALITIES);
}
