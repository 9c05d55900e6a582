// How the S1 app (app.mjs) calls the sick downstream, per strategy. Each returns
// { call(): Promise<'live' | 'fallback'>, source }: `call` answers 'live' with the downstream's answer,
// 'fallback' when the guard answered from its fallback, and throws when the call was refused or failed;
// `source` is what a TimelineRecorder tracks (a Limiter or a Guard).
import { guard } from 'limits-breaker';
import { GradientLimit, Limiter, VegasLimit } from 'limits-core';

/** The strategies, in the order the reports list them. */
export const STRATEGIES = ['none', 'static', 'vegas', 'gradient', 'vegas+breaker'];

/** Reads the whole answer; any status but 200 is a failure. */
async function fetchOnce(url, signal) {
  const res = await fetch(url, { signal });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`downstream answered ${res.status}`);
  return 'live';
}

export function strategy(name, url) {
  switch (name) {
    case 'none': {
      // No limit. The limiter here never refuses (its limit cannot be reached) and is only there so the
      // chart can show this strategy's calls from the same events as the others'.
      const counter = new Limiter({ limit: 1_000_000 });
      return { call: () => counter.run((signal) => fetchOnce(url, signal)), source: counter };
    }
    case 'static':
    case 'vegas':
    case 'gradient': {
      const limit =
        name === 'static' ? 50 : name === 'vegas' ? new VegasLimit() : new GradientLimit();
      const limiter = new Limiter({ limit });
      return { call: () => limiter.run((signal) => fetchOnce(url, signal)), source: limiter };
    }
    case 'vegas+breaker': {
      const g = guard((ctx) => fetchOnce(url, ctx.signal), {
        limit: { limit: new VegasLimit() },
        timeoutMs: 1000,
        errorThresholdPercentage: 50,
        volumeThreshold: 10,
        resetTimeout: 500,
        fallback: () => 'fallback',
      });
      return { call: () => g.fire(), source: g };
    }
    default:
      throw new Error(`unknown strategy ${name}; one of ${STRATEGIES.join(', ')}`);
  }
}
