import type { Sample } from './LimitAlgorithm.js';

/**
 * @internal The sample an algorithm may learn from, or `undefined` to ignore it.
 *
 * A sample with a non-finite start time or a non-finite or negative in-flight count says nothing
 * (a broken clock or caller) and is ignored. An RTT of 0 or a sub-microsecond RTT is valid (a
 * millisecond clock such as `Date.now`, or sub-ms calls on an injected clock). A negative, NaN or
 * infinite RTT (a clock that jumped back, a broken clock) is ignored for a success; a dropped sample
 * keeps its congestion signal with an RTT of 0. Allocates only for that last case.
 */
export function usableSample(sample: Sample): Sample | undefined {
  const { rtt, inflight } = sample;
  // The common case, small: V8 inlines it into every algorithm's `update`.
  if (rtt >= 0 && rtt !== Infinity && inflight >= 0 && inflight !== Infinity) {
    return Number.isFinite(sample.startTime) ? sample : undefined;
  }
  return unusualSample(sample);
}

/** A sample with an unusual RTT, or an unusable in-flight count. */
function unusualSample(sample: Sample): Sample | undefined {
  const { startTime, inflight } = sample;
  if (!Number.isFinite(startTime) || !(inflight >= 0) || inflight === Infinity) return undefined;
  return sample.dropped ? { startTime, rtt: 0, inflight, dropped: true } : undefined;
}
