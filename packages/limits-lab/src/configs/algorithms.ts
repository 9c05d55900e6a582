import {
  AimdLimit,
  GradientLimit,
  type LimitAlgorithm,
  type LimiterOptions,
  VegasLimit,
} from 'limits-core';
import { formatValue } from 'limits-core/internal';
import type { LimiterEnv } from '../sim/simulate.js';

/** The algorithms a spec or a JSON configuration names. */
export const ALGORITHMS = ['fixed', 'vegas', 'gradient', 'aimd'] as const;
/** One of {@link ALGORITHMS}. */
export type AlgorithmName = (typeof ALGORITHMS)[number];

/**
 * The limiter options of a named algorithm with its options: `fixed` takes `limit` (default 20) and
 * becomes the limiter's fixed limit; the others are built with their options (Vegas and Gradient with
 * the run's seeded `random` for their probe jitter, unless the options give one).
 * @throws the algorithm's own TypeError/RangeError for a bad option.
 */
export function algorithmOptions(
  name: AlgorithmName,
  options: Record<string, unknown>,
  env: LimiterEnv,
): Pick<LimiterOptions, 'limit' | 'algorithm'> {
  switch (name) {
    case 'fixed': {
      const { limit, ...rest } = options;
      const extra = Object.keys(rest);
      if (extra.length > 0) {
        throw new TypeError(
          `limits: unknown option "fixed.${extra[0]}" for a fixed limit; allowed: limit`,
        );
      }
      return { limit: (limit as number | undefined) ?? 20 };
    }
    case 'vegas':
      return { algorithm: new VegasLimit({ random: env.random, ...options }) };
    case 'gradient':
      return { algorithm: new GradientLimit({ random: env.random, ...options }) };
    case 'aimd':
      return { algorithm: new AimdLimit(options) };
  }
}

/** Whether `value` is a limit algorithm: an object with an `update` function and a numeric `limit`. */
export function isAlgorithm(value: unknown): value is LimitAlgorithm {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as LimitAlgorithm).update === 'function' &&
    typeof (value as LimitAlgorithm).limit === 'number'
  );
}

/** @throws RangeError naming `what` unless `name` is one of {@link ALGORITHMS}. */
export function checkAlgorithmName(what: string, name: unknown): AlgorithmName {
  if (typeof name !== 'string' || !(ALGORITHMS as readonly string[]).includes(name)) {
    throw new RangeError(
      `limits: ${what} must be one of ${ALGORITHMS.map((a) => `"${a}"`).join(', ')}, got ${formatValue(name)}`,
    );
  }
  return name as AlgorithmName;
}
