import type { LimiterOptions } from 'limits-core';
import type { Arrival } from '../traffic.js';
import type { SimResult } from './SimResult.js';
import { type LimiterEnv, type SimulateOptions, simulate } from './simulate.js';

/** A configuration {@link compare} runs: a name and the limiter's options (or how to build them). */
export interface SimConfig {
  /** Its name in the results. */
  name: string;
  /** See {@link SimulateOptions.limiter}. */
  limiter: LimiterOptions | ((env: LimiterEnv) => LimiterOptions);
  /** See {@link SimulateOptions.deadlineAdmission}. */
  deadlineAdmission?: boolean;
}

/** What {@link compare} runs each configuration on: {@link SimulateOptions} but the configuration's own. */
export type CompareRun = Omit<
  SimulateOptions,
  'name' | 'limiter' | 'deadlineAdmission' | 'arrivals'
> & {
  /** The requests: iterated once per configuration, so it must restart (an array, `modelArrivals`). */
  arrivals: Iterable<Arrival>;
};

/**
 * Runs each configuration through the same run (same requests, downstream and seed), one after the
 * other, and returns their results in order.
 * @throws what {@link simulate} throws.
 */
export function compare(configs: readonly SimConfig[], run: CompareRun): SimResult[] {
  return configs.map((config) =>
    simulate({
      ...run,
      name: config.name,
      limiter: config.limiter,
      deadlineAdmission: config.deadlineAdmission ?? false,
    }),
  );
}
