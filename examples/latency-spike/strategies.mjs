// How the S1 app (app.mjs) calls the sick downstream, per strategy: through limits-node-http's
// `limitFetch`, as a user wraps `fetch`. Each returns { call(): Promise<'live' | 'fallback'>, source }:
// `call` answers 'live' with the downstream's answer, 'fallback' when the guard answered from its
// fallback, and throws when the call was refused or failed; `source` is what a TimelineRecorder tracks
// (a Limiter or a guard).
import { guard } from 'limits-breaker';
import { GradientLimit, Limiter, VegasLimit } from 'limits-core';
import { fetchGuard, limitFetch } from 'limits-node-http';

/** The strategies, in the order the reports list them. */
export const STRATEGIES = ['none', 'static', 'vegas', 'gradient', 'vegas+breaker'];

/** Reads the whole answer (the permit is held until then); any status but 200 is a failure. */
async function answer(res) {
  await res.arrayBuffer();
  if (res.headers.get('x-fallback') === '1') return 'fallback';
  if (res.status !== 200) throw new Error(`downstream answered ${res.status}`);
  return 'live';
}

export function strategy(name, url) {
  switch (name) {
    case 'none': {
      // No limit. This limiter never refuses (its limit cannot be reached): it is only there so the
      // chart can show this strategy's calls from the same events as the others'.
      const counter = new Limiter({ limit: 1_000_000 });
      const api = limitFetch(fetch, { limiter: counter });
      return { call: () => api(url).then(answer), source: counter };
    }
    case 'static':
    case 'vegas':
    case 'gradient': {
      const limiter = new Limiter(
        name === 'static'
          ? { limit: 50 }
          : { algorithm: name === 'vegas' ? new VegasLimit() : new GradientLimit() },
      );
      const api = limitFetch(fetch, { limiter });
      return { call: () => api(url).then(answer), source: limiter };
    }
    case 'vegas+breaker': {
      // The guard's own limiter is a default Vegas one; attempts over 1 s count as breaker failures.
      const breaker = fetchGuard(guard, {
        limiter: { algorithm: new VegasLimit() },
        attemptTimeoutMs: 1000,
        errorThresholdPercentage: 50,
        volumeThreshold: 10,
        resetTimeout: 500,
        fallback: () => new Response('{"cached":true}', { headers: { 'x-fallback': '1' } }),
      });
      const api = limitFetch(fetch, { guard: breaker });
      return { call: () => api(url).then(answer), source: breaker };
    }
    default:
      throw new Error(`unknown strategy ${name}; one of ${STRATEGIES.join(', ')}`);
  }
}
