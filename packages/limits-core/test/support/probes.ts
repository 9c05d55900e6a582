import { Baseline } from '../../src/algorithms/Baseline.js';
import type { Sample } from '../../src/algorithms/LimitAlgorithm.js';
import type { NoLoadRttOptions } from '../../src/algorithms/noLoadRttOptions.js';
import { ProbeSchedule, type ProbeState } from '../../src/algorithms/ProbeSchedule.js';

/** A baseline and its probe schedule, fed as `ProbingLimit.admit` feeds them. */
export interface Probing {
  readonly baseline: Baseline;
  readonly schedule: ProbeSchedule;
  /** The baseline sees the sample, then the schedule (with the baseline's staleness). */
  observe(
    sample: Sample,
    limit: number,
    minLimit: number,
    mayStart?: boolean,
    appLimited?: boolean,
  ): ProbeState;
}

/** A {@link Baseline} (freshness factor `fresh`) under a standalone {@link ProbeSchedule}. */
export function probing(options: NoLoadRttOptions = {}, fresh?: number): Probing {
  const baseline = new Baseline(fresh);
  const schedule = new ProbeSchedule(options, 'probe', baseline);
  return {
    baseline,
    schedule,
    observe: (sample, limit, minLimit, mayStart = true, appLimited = false) =>
      schedule.observe(
        sample,
        baseline.observe(sample, schedule.probing),
        limit,
        minLimit,
        mayStart,
        appLimited,
      ),
  };
}

/** A sample of `rtt` ms started at `startTime` under `inflight` units. */
export function sample(rtt: number, inflight: number, dropped = false, startTime = 0): Sample {
  return { startTime, rtt, inflight, dropped };
}
