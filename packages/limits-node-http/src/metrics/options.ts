import { checkKeys, formatValue } from 'limits-core/internal';
import { checkLimiterName, defaultSecondsBuckets } from './scheme.js';
import type { Observed } from './series.js';
import {
  type LimitsSource,
  type QuotaSource,
  type RetryBudgetSource,
  type RetryPolicySource,
  resolveSource,
} from './source.js';

/** The options both metrics adapters take ({@link registerMetrics}, {@link registerOtelMetrics}). */
export interface SourceMetricsOptions {
  /**
   * The value of the `limiter` label (attribute) on every series of this source: the name you
   * give it (`'db'`, `'payments-api'`). 1 to 64 characters of `[a-zA-Z0-9_.:-]`, starting with a
   * letter or `_`. Unique per registry (meter): a second registration under the same name is
   * refused.
   */
  limiter: string;
  /**
   * A limits-core `Quota` whose refusals, alerts and store failures to count under the same
   * `limiter` name (`limits_quota_*`). A `loadShed` source brings its own quota; this option is for
   * a quota used elsewhere (e.g. in front of a limitFetch). Its axes' names become the `axis`
   * label's values.
   * @default a loadShed source's quota, else none
   */
  quota?: QuotaSource;
  /** A limits-core `RetryPolicy` whose retries and budget refusals to count (`limits_retries_total`, `limits_retry_budget_exhausted_total`). @default none */
  retry?: RetryPolicySource;
  /** A limits-core `RetryBudget` whose available retries to report (`limits_retry_budget_available`). @default none */
  retryBudget?: RetryBudgetSource;
  /**
   * Upper bounds of the buckets of the two histograms (queue wait and lease duration), in
   * seconds: 1 to 50 finite positive numbers in increasing order. With prom-client, every source
   * of one registry shares the histograms, so every registration must give the same buckets.
   * @default defaultSecondsBuckets (0.001 … 10)
   */
  buckets?: readonly number[];
}

/** The checked options, and the source taken apart. */
export interface CheckedMetricsOptions {
  readonly observed: Observed;
  readonly buckets: number[];
}

/**
 * @internal Checks a metrics adapter's source and options (everything before anything is built).
 * @throws TypeError/RangeError naming the option.
 */
export function checkMetricsOptions(
  where: string,
  source: LimitsSource,
  options: SourceMetricsOptions,
  extraKeys: readonly string[],
): CheckedMetricsOptions {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(
      `limits: ${where} options must be an object with "limiter" (the name of the source), got ${formatValue(options)}`,
    );
  }
  checkKeys(where, options, ['limiter', 'quota', 'retry', 'retryBudget', 'buckets', ...extraKeys]);
  const resolved = resolveSource(where, source);
  const name = checkLimiterName(options.limiter);
  const quota = options.quota as unknown;
  if (
    quota !== undefined &&
    (quota === null ||
      typeof quota !== 'object' ||
      !Array.isArray((quota as QuotaSource).axes) ||
      typeof (quota as QuotaSource).on !== 'function' ||
      typeof (quota as QuotaSource).off !== 'function')
  ) {
    throw new TypeError(`limits: option "quota" must be a Quota, got ${formatValue(quota)}`);
  }
  const retry = options.retry as unknown;
  if (
    retry !== undefined &&
    (retry === null ||
      typeof retry !== 'object' ||
      typeof (retry as RetryPolicySource).on !== 'function' ||
      typeof (retry as RetryPolicySource).off !== 'function')
  ) {
    throw new TypeError(`limits: option "retry" must be a RetryPolicy, got ${formatValue(retry)}`);
  }
  const budget = options.retryBudget as unknown;
  if (
    budget !== undefined &&
    (budget === null ||
      typeof budget !== 'object' ||
      typeof (budget as RetryBudgetSource).available !== 'number')
  ) {
    throw new TypeError(
      `limits: option "retryBudget" must be a RetryBudget, got ${formatValue(budget)}`,
    );
  }
  return {
    observed: {
      name,
      source: resolved,
      quota: (quota as QuotaSource | undefined) ?? resolved.quota,
      retry: retry as RetryPolicySource | undefined,
      retryBudget: budget as RetryBudgetSource | undefined,
    },
    buckets: checkBuckets(options.buckets),
  };
}

function checkBuckets(value: unknown): number[] {
  if (value === undefined) return [...defaultSecondsBuckets];
  if (!Array.isArray(value)) {
    throw new TypeError(
      `limits: option "buckets" must be an array of numbers, got ${formatValue(value)}`,
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
      `limits: option "buckets" must be 1 to 50 finite positive numbers in increasing order, got [${value.map(formatValue).join(', ')}]`,
    );
  }
  return [...value];
}
