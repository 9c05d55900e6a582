import type { LimiterOptions } from 'limits-core';
import type { LimiterEnv } from '../sim/simulate.js';

/** One limiter configuration to compare: a name for tables and how to build its limiter per run. */
export interface LabConfig {
  /** Its name in tables and reports. */
  name: string;
  /** What it was read from (an inline spec, a file path), for command lines. */
  spec: string;
  /** Builds the limiter's options for one run (a fresh algorithm each time). */
  limiter: (env: LimiterEnv) => LimiterOptions;
  /** Acquire each request with its budget as `timeoutMs` (see `SimulateOptions.deadlineAdmission`). */
  deadlineAdmission: boolean;
}
