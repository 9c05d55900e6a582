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
      // static: a limit picked by hand, as many services have one. At 100 req/s and 50 ms, about 5
      // calls are in flight (Little's law); 50 is the usual tenfold headroom, and during the spike
      // all 50 sit on the slow dependency for 3 s each.
      // vegas, gradient: the adaptive algorithms with their defaults, nothing tuned: they learn the
      // 50 ms baseline and cut the limit when latency rises above it.
      const limiter = new Limiter(
        name === 'static'
          ? { limit: 50 }
          : { algorithm: name === 'vegas' ? new VegasLimit() : new GradientLimit() },
      );
      const api = limitFetch(fetch, { limiter });
      return { call: () => api(url).then(answer), source: limiter };
    }
    case 'vegas+breaker': {
      // A circuit breaker set up for a dependency that slows down for seconds (here 50 ms → 3,000 ms
      // for 5 s), over the guard's own Vegas limiter:
      // - attemptTimeoutMs 500: ten times the normal 50 ms. A call not answered by then is a breaker
      //   failure (and a dropped sample for Vegas) and its caller gets the fallback at once: a 3 s
      //   answer is no use to this caller. Without a timeout under the slow latency, a slow call is
      //   a success and the circuit never opens.
      // - rollingCountTimeout 1000 in 10 buckets: the breaker judges the last second only. Vegas
      //   keeps a handful of calls on the slow dependency, so only about ten time out per second; in
      //   opossum's default 10 s window the hundreds of successes from before the slowdown outweigh
      //   them for seconds and the circuit does not open in time. In a 1 s window they are gone a
      //   second into the slowdown.
      // - volumeThreshold 5, errorThresholdPercentage 50: it opens once at least 5 calls were judged
      //   in the window and half of them failed (one timeout in a quiet second does not open it).
      // - resetTimeout 1000: a second after opening, one trial call (probeSlots 1) tests the
      //   dependency: a trial that times out reopens the circuit for another second, one answered in
      //   time closes it. So the service is back within about 1.5 s of the dependency's recovery.
      // A refusal by the limiter is not a breaker failure: a busy limiter says nothing of the
      // dependency's health. While open, every call is answered from the fallback without waiting.
      const breaker = fetchGuard(guard, {
        limiter: { algorithm: new VegasLimit() },
        attemptTimeoutMs: 500,
        rollingCountTimeout: 1000,
        rollingCountBuckets: 10,
        volumeThreshold: 5,
        errorThresholdPercentage: 50,
        resetTimeout: 1000,
        fallback: () => new Response('{"cached":true}', { headers: { 'x-fallback': '1' } }),
      });
      const api = limitFetch(fetch, { guard: breaker });
      return { call: () => api(url).then(answer), source: breaker };
    }
    default:
      throw new Error(`unknown strategy ${name}; one of ${STRATEGIES.join(', ')}`);
  }
}
