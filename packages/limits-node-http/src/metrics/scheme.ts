import { formatValue } from 'limits-core/internal';

/**
 * The one metric scheme of limits: every metric, its Prometheus name, its OpenTelemetry name and
 * unit, its labels (attributes), and what it says. Both {@link registerMetrics} (prom-client) and
 * {@link registerOtelMetrics} (OpenTelemetry) build from this table, so the two agree: an
 * OpenTelemetry metric exported to Prometheus (dots to underscores, the unit's suffix, `_total` on
 * counters) takes the same name as the prom-client one, and one dashboard reads both.
 *
 * Every series carries `limiter`: the name given at registration, so that many limiters share one
 * family of each metric and a dashboard can sum or compare them.
 */

/** The kind of a metric. */
export type MetricKind = 'gauge' | 'counter' | 'histogram';

/** The groups of metrics: a source registers the groups it has. */
export type MetricGroup = 'limiter' | 'partition' | 'breaker' | 'quota' | 'retry';

/** One metric of the scheme. */
export interface MetricSpec {
  /** Prometheus name (a counter's includes `_total`; a histogram's series add `_bucket`/`_sum`/`_count`). */
  readonly prom: string;
  /** OpenTelemetry instrument name (dotted). */
  readonly otel: string;
  /** OpenTelemetry unit (UCUM: `s`, `By`, or an annotation such as `{request}`). */
  readonly unit: string;
  readonly kind: MetricKind;
  readonly group: MetricGroup;
  /** Labels (attributes) besides `limiter`. */
  readonly labels: readonly string[];
  /** What it measures. */
  readonly help: string;
}

const spec = (
  group: MetricGroup,
  kind: MetricKind,
  prom: string,
  otel: string,
  unit: string,
  labels: readonly string[],
  help: string,
): MetricSpec => Object.freeze({ prom, otel, unit, kind, group, labels, help });

/** The label every series carries: the registration's name. */
export const LIMITER_LABEL = 'limiter';

/** Every metric, by key. */
export const METRICS = Object.freeze({
  limit: spec(
    'limiter',
    'gauge',
    'limits_limit',
    'limits.limit',
    '{request}',
    ['partition'],
    "The limit algorithm's current integer limit.",
  ),
  capacity: spec(
    'limiter',
    'gauge',
    'limits_capacity',
    'limits.capacity',
    '{request}',
    ['partition'],
    'Units that may be in flight: max(limit, probe slots).',
  ),
  inflight: spec(
    'limiter',
    'gauge',
    'limits_inflight',
    'limits.inflight',
    '{request}',
    ['partition'],
    'Units in flight under a permit (a permit of cost 3 counts 3).',
  ),
  queued: spec(
    'limiter',
    'gauge',
    'limits_queued',
    'limits.queued',
    '{request}',
    ['partition'],
    'Requests waiting in the queue.',
  ),
  queuedBytes: spec(
    'limiter',
    'gauge',
    'limits_queued_bytes',
    'limits.queued.bytes',
    'By',
    ['partition'],
    'Bytes held by queued requests.',
  ),
  queueOldestWait: spec(
    'limiter',
    'gauge',
    'limits_queue_oldest_wait_seconds',
    'limits.queue.oldest_wait',
    's',
    ['partition'],
    'How long the oldest queued request has waited so far (0 when none waits).',
  ),
  requests: spec(
    'limiter',
    'counter',
    'limits_requests_total',
    'limits.requests',
    '{request}',
    ['partition', 'result', 'reason'],
    'Requests judged by the limiter: result "admitted" (a permit was granted, at once or after queueing) or "refused" (at admission or when it left the queue without a permit; reason says why).',
  ),
  outcomes: spec(
    'limiter',
    'counter',
    'limits_outcomes_total',
    'limits.outcomes',
    '{request}',
    ['partition', 'outcome'],
    'Permits returned, by the outcome reported (success, dropped, failure, ignore).',
  ),
  queueWait: spec(
    'limiter',
    'histogram',
    'limits_queue_wait_seconds',
    'limits.queue.wait',
    's',
    ['partition'],
    'Time a request that queued waited for its permit (requests admitted at once are not observed; measured where the limiter times its queue: see the README).',
  ),
  leaseDuration: spec(
    'limiter',
    'histogram',
    'limits_lease_duration_seconds',
    'limits.lease.duration',
    's',
    ['partition'],
    "Time a permit was held, grant to release, every outcome (for loadShed: the server request's duration under its permit; for limitFetch: until the response body ended).",
  ),
  partitionReserved: spec(
    'partition',
    'gauge',
    'limits_partition_reserved',
    'limits.partition.reserved',
    '{request}',
    ['partition'],
    'Units reserved for the partition, never lent to others.',
  ),
  partitionBorrowed: spec(
    'partition',
    'gauge',
    'limits_partition_borrowed',
    'limits.partition.borrowed',
    '{request}',
    ['partition'],
    'Units the partition runs beyond its reserve, from the shared pool.',
  ),
  breakerState: spec(
    'breaker',
    'gauge',
    'limits_breaker_state',
    'limits.breaker.state',
    '1',
    ['state'],
    'The circuit state: 1 for the current state (closed, open, half_open), 0 for the others.',
  ),
  breakerCalls: spec(
    'breaker',
    'counter',
    'limits_breaker_calls_total',
    'limits.breaker.calls',
    '{call}',
    ['outcome'],
    'Calls the circuit breaker judged, by outcome (success, failure).',
  ),
  fallbacks: spec(
    'breaker',
    'counter',
    'limits_fallbacks_total',
    'limits.fallbacks',
    '{call}',
    ['reason'],
    "Guarded calls that did not get the action's answer, by reason (open, limiter, timeout, error): answered by the fallback, or rejected when there is none.",
  ),
  quotaRefusals: spec(
    'quota',
    'counter',
    'limits_quota_refusals_total',
    'limits.quota.refusals',
    '{request}',
    ['axis'],
    'Requests the quota refused, by the first full axis.',
  ),
  quotaAlerts: spec(
    'quota',
    'counter',
    'limits_quota_alerts_total',
    'limits.quota.alerts',
    '{alert}',
    ['axis'],
    "Keys whose use crossed the axis' alert threshold in their window, by axis.",
  ),
  quotaFailures: spec(
    'quota',
    'counter',
    'limits_quota_failures_total',
    'limits.quota.failures',
    '{request}',
    ['policy'],
    'Requests the quota store could not judge, by the policy that answered (open: passed uncharged; closed: refused).',
  ),
  retryBudget: spec(
    'retry',
    'gauge',
    'limits_retry_budget_available',
    'limits.retry.budget.available',
    '{retry}',
    [],
    'Retries the retry budget would allow now.',
  ),
  retries: spec(
    'retry',
    'counter',
    'limits_retries_total',
    'limits.retries',
    '{retry}',
    [],
    'Attempts whose result was thrown away for another attempt.',
  ),
  retriesRefused: spec(
    'retry',
    'counter',
    'limits_retry_budget_exhausted_total',
    'limits.retry.budget.exhausted',
    '{retry}',
    [],
    'Retries the retry budget refused (the last result was returned as is).',
  ),
} satisfies Record<string, MetricSpec>);

/** The key of a metric in {@link METRICS}. */
export type MetricKey = keyof typeof METRICS;

/** Every metric, in the table's order. */
export const METRIC_LIST: readonly MetricSpec[] = Object.freeze(Object.values(METRICS));

/** Default histogram bucket bounds, in seconds: 1 ms to 10 s. */
export const defaultSecondsBuckets: readonly number[] = Object.freeze([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]);

/** The circuit states, as label values (lowercase, as every other label value). */
export const BREAKER_STATES = Object.freeze(['closed', 'open', 'half_open'] as const);

/** Why a guarded call went to the fallback. */
export const FALLBACK_REASONS = Object.freeze(['open', 'limiter', 'timeout', 'error'] as const);

const LIMITER_NAME = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/;

/**
 * @internal Checks option `limiter` (the `limiter` label's value): required, 1 to 64 characters,
 * a letter or `_` first, then letters, digits, `_`, `.`, `:` or `-`.
 * @throws TypeError when it is not a string; RangeError when it breaks those rules.
 */
export function checkLimiterName(value: unknown): string {
  if (typeof value !== 'string') {
    throw new TypeError(
      `limits: option "limiter" (the value of the "limiter" label) must be a string, got ${formatValue(value)}`,
    );
  }
  if (!LIMITER_NAME.test(value)) {
    throw new RangeError(
      `limits: option "limiter" must be 1 to 64 characters of [a-zA-Z0-9_.:-], starting with a letter or "_", got ${formatValue(value)}`,
    );
  }
  return value;
}
