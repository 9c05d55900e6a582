import { checkKeys, checkString, formatValue } from 'limits-core';
import { loadPromClient, type PromClient, type PromRegistry } from './promClient.js';
import { type MetricsHandle, Registration, seriesNames } from './Registration.js';
import { type LimitsSource, resolveSource } from './source.js';

export type { MetricsHandle } from './Registration.js';

/** Default buckets of the RTT histogram, in seconds: 1 ms to 10 s. */
export const defaultRttBuckets: readonly number[] = Object.freeze([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]);

/** Options of {@link registerMetrics}. */
export interface MetricsOptions {
  /**
   * Prepended to every metric name as is (`'api_db_'` gives `api_db_inflight`). Two sources on one
   * registry need two prefixes. Must match `[a-zA-Z_:][a-zA-Z0-9_:]*` (or be empty).
   * @default 'limits_'
   */
  prefix?: string;
  /**
   * Upper bounds of the RTT histogram's buckets, in seconds: finite, positive, strictly increasing,
   * at most 50.
   * @default defaultRttBuckets (0.001 … 10)
   */
  rttBuckets?: readonly number[];
  /**
   * The prom-client module to build the metrics with (`import * as client from 'prom-client'`).
   * Needed only where `require('prom-client')` cannot find it from this package (a bundle, or to
   * use a particular copy).
   * @default the installed `prom-client` peer dependency, loaded on the first call
   */
  client?: PromClient;
}

const NAME_PREFIX = /^(?:[a-zA-Z_:][a-zA-Z0-9_:]*)?$/;

/**
 * Registers Prometheus metrics (prom-client 15) for a limits-core `Limiter`, a `PartitionedLimiter`
 * or a limits-breaker guard on `registry`.
 *
 * - Gauges (`limit`, `capacity`, `inflight`, `queued`, `queued_bytes`, `oldest_queued_seconds`) are
 *   read from the limiter when the registry is scraped (prom-client's `collect`): no timer, no cost
 *   between scrapes.
 * - Counters `calls_total{outcome}` and `rejections_total{reason}` and the histogram `rtt_seconds`
 *   are fed by the limiter's `release` and `reject` events. **Cost:** a `release` listener makes the
 *   limiter time every call (one clock read at grant and at release) and emit an event per call,
 *   so a registered limiter leaves its fastest path; `unregister()` puts it back.
 * - A PartitionedLimiter adds its ledger's `reserved{partition}` and `borrowed{partition}` gauges.
 * - A guard adds `circuit_state{state}` (1 for the current state), `fallbacks_total{reason}` (the
 *   guard's `fallback` event: calls answered by the fallback, or rejected with a typed error when
 *   there is none) and `breaker_outcomes_total{outcome}` (opossum's `success` / `failure`; listening
 *   to them makes the guard report each success through opossum's events).
 *
 * Labels are bounded: `partition` (a PartitionedLimiter's names, fixed at construction), `outcome`,
 * `reason`, `state`; never a tenant or anything a request chooses. Every label value is exported
 * from the start (at 0). prom-client is an optional peer dependency: it is loaded by the first call,
 * never by importing this package.
 *
 * @param registry - a prom-client `Registry` (its `register`, or `new Registry()`).
 * @param source - what to observe.
 * @param options - see {@link MetricsOptions}.
 * @returns a handle whose `unregister()` removes every listener and metric added.
 * @throws TypeError for a bad registry, source or option; RangeError for a bad prefix or buckets,
 *   or when the registry already has one of the names (another source with the same prefix);
 *   Error when prom-client is not installed and no `client` is given. Nothing is registered then.
 * @example
 * ```ts
 * import { register } from 'prom-client';
 * const db = new Limiter({ limit: new VegasLimit() });
 * const metrics = registerMetrics(register, db, { prefix: 'api_db_' });
 * // … api_db_inflight, api_db_calls_total{outcome="success"}, api_db_rtt_seconds_bucket …
 * metrics.unregister();
 * ```
 */
export function registerMetrics(
  registry: PromRegistry,
  source: LimitsSource,
  options?: MetricsOptions,
): MetricsHandle {
  checkKeys('registerMetrics', options, ['prefix', 'rttBuckets', 'client']);
  if (
    registry === null ||
    typeof registry !== 'object' ||
    typeof registry.registerMetric !== 'function' ||
    typeof registry.getSingleMetric !== 'function' ||
    typeof registry.removeSingleMetric !== 'function'
  ) {
    throw new TypeError(
      `limits: registerMetrics needs a prom-client Registry, got ${formatValue(registry)}`,
    );
  }
  const resolved = resolveSource('registerMetrics', source);
  const prefix = checkString('prefix', options?.prefix) ?? 'limits_';
  if (!NAME_PREFIX.test(prefix)) {
    throw new RangeError(
      `limits: option "prefix" must match [a-zA-Z_:][a-zA-Z0-9_:]* (or be empty), got ${formatValue(prefix)}`,
    );
  }
  const buckets = checkBuckets(options?.rttBuckets);
  const client = checkClient(options?.client) ?? loadPromClient();
  for (const name of seriesNames(prefix, resolved)) {
    if (registry.getSingleMetric(name) !== undefined) {
      throw new RangeError(
        `limits: the registry already has a metric named "${name}": give each source its own option "prefix", got ${formatValue(prefix)}`,
      );
    }
  }
  return new Registration(client, registry, prefix, buckets, resolved);
}

function checkBuckets(value: unknown): number[] {
  if (value === undefined) return [...defaultRttBuckets];
  if (!Array.isArray(value)) {
    throw new TypeError(
      `limits: option "rttBuckets" must be an array of numbers, got ${formatValue(value)}`,
    );
  }
  const ok =
    value.length >= 1 &&
    value.length <= 50 &&
    value.every(
      (b, i) =>
        typeof b === 'number' &&
        Number.isFinite(b) &&
        b > 0 &&
        (i === 0 || b > (value[i - 1] as number)),
    );
  if (!ok) {
    throw new RangeError(
      `limits: option "rttBuckets" must be 1 to 50 finite positive numbers in increasing order, got [${value.map(formatValue).join(', ')}]`,
    );
  }
  return [...value];
}

function checkClient(value: unknown): PromClient | undefined {
  if (value === undefined) return undefined;
  const c = value as Partial<PromClient> | null;
  if (
    c === null ||
    typeof c !== 'object' ||
    typeof c.Gauge !== 'function' ||
    typeof c.Counter !== 'function' ||
    typeof c.Histogram !== 'function'
  ) {
    throw new TypeError(
      `limits: option "client" must be the prom-client module (with Gauge, Counter and Histogram), got ${formatValue(value)}`,
    );
  }
  return c as PromClient;
}
