import type { CallOutcome, Downstream, DownstreamCall } from '../traffic.js';
import type { DownstreamFit } from './DownstreamFit.js';

/**
 * The downstream a {@link DownstreamFit} describes: a call starting at `atMs` with `concurrency` calls
 * in flight takes `base(atMs) × max(1, concurrency / knee)^exponent`, times a log-normal jitter of
 * the fit's `sigma`, and ends `overload` or `failure` at its time bucket's rates. Before the trace's
 * first bucket the first applies, after its last the last. Draws three numbers from `random` a call
 * (one for the outcome, two for the jitter).
 */
export function fittedDownstream(fit: DownstreamFit): Downstream {
  const { baseMs, failureRate, overloadRate, knee, exponent, sigma, originMs, bucketMs } = fit;
  const last = baseMs.length - 1;
  return {
    call(atMs: number, concurrency: number, random: () => number): DownstreamCall {
      const at = Math.floor((atMs - originMs) / bucketMs);
      const i = at > 0 ? Math.min(last, at) : 0;
      const u = random();
      const overload = overloadRate[i] as number;
      const outcome: CallOutcome =
        u < overload
          ? 'overload'
          : u < overload + (failureRate[i] as number)
            ? 'failure'
            : 'success';
      let serviceMs = baseMs[i] as number;
      if (concurrency > knee) serviceMs *= (concurrency / knee) ** exponent;
      const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
      serviceMs *= Math.exp(sigma * z);
      return { serviceMs, outcome };
    },
  };
}
