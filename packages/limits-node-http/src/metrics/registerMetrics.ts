import { formatValue } from 'limits-core/internal';
import { checkMetricsOptions, type SourceMetricsOptions } from './options.js';
import {
  construct,
  loadPromClient,
  type PromClient,
  type PromCounter,
  type PromGauge,
  type PromHistogram,
  type PromLabels,
  type PromRegistry,
} from './promClient.js';
import { SourceWatch } from './SourceWatch.js';
import { LIMITER_LABEL, METRICS, type MetricKey } from './scheme.js';
import { buildSink, type GaugeSeries, gaugeSeries, type Instruments, keysOf } from './series.js';
import type { LimitsSource } from './source.js';

/** What {@link registerMetrics} and {@link registerOtelMetrics} return. */
export interface MetricsHandle {
  /** The `limiter` label's value of this registration. */
  readonly limiter: string;
  /** The names of the metrics this source feeds (Prometheus names, or OpenTelemetry instrument names). */
  readonly names: readonly string[];
  /**
   * Removes every listener this registration put on the source, and its series (idempotent). The
   * source is left as it was before: a limiter nobody else listens to is back on its fastest path.
   * With prom-client, the last registration of a registry to close removes the metrics from it.
   */
  close(): void;
  /** Same as {@link MetricsHandle.close} (`using metrics = registerMetrics(…)`). */
  [Symbol.dispose](): void;
}

/** Options of {@link registerMetrics}. */
export interface MetricsOptions extends SourceMetricsOptions {
  /**
   * The prom-client module to build the metrics with (`import * as client from 'prom-client'`).
   * Needed only where `require('prom-client')` cannot find it from this package (a bundle, or to
   * use a particular copy).
   * @default the installed `prom-client` peer dependency, loaded on the first call
   */
  client?: PromClient;
}

/**
 * Registers the limits metrics (prom-client 15) of a source on `registry`, under the `limiter`
 * label's value `options.limiter`. Every source of one registry shares one family per metric
 * (`limits_inflight{limiter="db"}`, `limits_inflight{limiter="search"}`), so a dashboard sums and
 * compares them; the README tables every name, label and unit.
 *
 * - Gauges (`limits_limit`, `limits_capacity`, `limits_inflight`, `limits_queued`,
 *   `limits_queued_bytes`, `limits_queue_oldest_wait_seconds`; a PartitionedLimiter's
 *   `limits_partition_reserved` / `_borrowed`; a guard's `limits_breaker_state{state}`; a retry
 *   budget's `limits_retry_budget_available`) are read when the registry is scraped: no timer, no
 *   cost between scrapes.
 * - Counters `limits_requests_total{result, reason}` and `limits_outcomes_total{outcome}` and the
 *   histograms `limits_queue_wait_seconds` and `limits_lease_duration_seconds` are fed by the
 *   limiter's `acquire`, `reject` and `release` events (a guard adds `limits_breaker_calls_total`
 *   and `limits_fallbacks_total`; a quota `limits_quota_refusals_total`, `_alerts_total`,
 *   `_failures_total`; a retry policy `limits_retries_total`, `limits_retry_budget_exhausted_total`).
 *   **Cost:** a `release` listener makes the limiter time every call (a clock read at grant and at
 *   release) and emit events per call, so a registered limiter leaves its fastest path; `close()`
 *   puts it back.
 *
 * Labels are bounded: `limiter` (checked), `partition` (a PartitionedLimiter's names, fixed at
 * construction), `result`, `reason`, `outcome`, `state`, `axis` (a quota's axes), `policy`; never
 * a tenant or anything a request chooses. Every known label value is exported from the start (at
 * 0). prom-client is an optional peer dependency: it is loaded by the first call, never by
 * importing this package.
 *
 * @param registry - a prom-client `Registry` (its `register`, or `new Registry()`).
 * @param source - a `Limiter`, a `PartitionedLimiter`, a limits-breaker guard or a `loadShed()`.
 *   For `limitFetch` or `limitInterceptor`, register the limiter (or guard) you gave it.
 * @param options - see {@link MetricsOptions}; `limiter` is required.
 * @returns a handle whose `close()` removes every listener and series added.
 * @throws TypeError for a bad registry, source or option; RangeError for a bad `limiter` name or
 *   buckets, a `limiter` name already registered on this registry, buckets unlike the registry's,
 *   or a metric of the same name the registry has from elsewhere; Error when prom-client is not
 *   installed and no `client` is given. Nothing is registered then.
 * @example
 * ```ts
 * import { register } from 'prom-client';
 * const db = new Limiter({ algorithm: new VegasLimit() });
 * const metrics = registerMetrics(register, db, { limiter: 'db' });
 * // … limits_inflight{limiter="db"}, limits_outcomes_total{limiter="db",outcome="success"} …
 * metrics.close();
 * ```
 */
export function registerMetrics(
  registry: PromRegistry,
  source: LimitsSource,
  options: MetricsOptions,
): MetricsHandle {
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
  const { observed, buckets } = checkMetricsOptions('registerMetrics', source, options, ['client']);
  const client = checkClient(options.client) ?? loadPromClient();
  let families = registries.get(registry);
  if (families === undefined) {
    families = new Families(registry);
    registries.set(registry, families);
  }
  const keys = keysOf(observed);
  families.check(observed.name, keys, buckets);
  return families.add(client, observed, keys, buckets);
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

/** The label names of a metric's family: `limiter` and the metric's own. */
function labelNames(key: MetricKey): string[] {
  return [LIMITER_LABEL, ...METRICS[key].labels];
}

/** A counter series: counted as a plain number on the event path, handed to prom-client at scrape time. */
interface Slot {
  readonly labels: PromLabels;
  n: number;
}

/** One registration's series, by metric. */
interface Member {
  readonly gauges: Map<MetricKey, GaugeSeries[]>;
  readonly slots: Map<MetricKey, Slot[]>;
  readonly histograms: Map<MetricKey, PromLabels[]>;
}

/** One family per metric on one registry, and the registrations that feed them. */
class Families {
  readonly #registry: PromRegistry;
  readonly #metrics = new Map<MetricKey, PromGauge | PromCounter | PromHistogram>();
  readonly #members = new Map<string, Member>();
  #buckets: number[] | undefined;

  constructor(registry: PromRegistry) {
    this.#registry = registry;
  }

  /** Refuses a registration that cannot be added (before anything changes). */
  check(name: string, keys: readonly MetricKey[], buckets: number[]): void {
    if (this.#members.has(name)) {
      throw new RangeError(
        `limits: option "limiter" must be unique per registry: "${name}" is already registered (close its handle first, or give this source another name)`,
      );
    }
    const known = this.#buckets;
    if (
      known !== undefined &&
      (known.length !== buckets.length || known.some((b, i) => b !== buckets[i]))
    ) {
      throw new RangeError(
        `limits: option "buckets" must be the registry's histogram buckets [${known.join(', ')}] (every source of a registry shares them), got [${buckets.join(', ')}]`,
      );
    }
    for (const key of keys) {
      const name = METRICS[key].prom;
      const there = this.#registry.getSingleMetric(name);
      if (there !== undefined && there !== this.#metrics.get(key)) {
        throw new RangeError(
          `limits: the registry already has a metric named "${name}" that limits did not register: remove it, or use another registry`,
        );
      }
    }
  }

  add(
    client: PromClient,
    observed: Parameters<typeof buildSink>[0],
    keys: readonly MetricKey[],
    buckets: number[],
  ): MetricsHandle {
    this.#buckets ??= buckets;
    try {
      for (const key of keys) this.#family(client, key);
    } catch (error) {
      // (Only a strange `client` can throw here.) A registry no source uses keeps nothing.
      if (this.#members.size === 0) this.#removeAll();
      throw error;
    }
    const member: Member = { gauges: new Map(), slots: new Map(), histograms: new Map() };
    for (const series of gaugeSeries(observed)) push(member.gauges, series.key, series);
    const instruments: Instruments = {
      counter: (key, labels) => {
        const slot: Slot = { labels, n: 0 };
        push(member.slots, key, slot);
        (this.#metrics.get(key) as PromCounter).inc(labels, 0);
        return () => {
          slot.n++;
        };
      },
      histogram: (key, labels) => {
        push(member.histograms, key, labels);
        const histogram = this.#metrics.get(key) as PromHistogram;
        histogram.zero(labels);
        const child = histogram.labels(labels);
        return (seconds) => child.observe(seconds);
      },
    };
    const watch = new SourceWatch(
      observed.source,
      observed.quota,
      observed.retry,
      buildSink(observed, instruments),
    );
    this.#members.set(observed.name, member);
    let open = true;
    const close = () => {
      if (!open) return;
      open = false;
      watch.close();
      this.#remove(observed.name, member);
    };
    return {
      limiter: observed.name,
      names: keys.map((key) => METRICS[key].prom),
      close,
      [Symbol.dispose]: close,
    };
  }

  /** The metric of `key` on the registry, made (or put back, after a `registry.clear()`) if needed. */
  #family(client: PromClient, key: MetricKey): void {
    const spec = METRICS[key];
    const registry = this.#registry;
    const known = this.#metrics.get(key);
    if (known !== undefined) {
      if (registry.getSingleMetric(spec.prom) === undefined) registry.registerMetric(known);
      return;
    }
    const config = {
      name: spec.prom,
      help: spec.help,
      labelNames: labelNames(key),
      registers: [registry],
    };
    let metric: PromGauge | PromCounter | PromHistogram;
    if (spec.kind === 'gauge') {
      const gauge: PromGauge = construct(client.Gauge, {
        ...config,
        collect: () => {
          gauge.reset();
          for (const member of this.#members.values()) {
            for (const s of member.gauges.get(key) ?? []) gauge.set(s.labels, s.read());
          }
        },
      });
      metric = gauge;
    } else if (spec.kind === 'counter') {
      const counter: PromCounter = construct(client.Counter, {
        ...config,
        collect: () => {
          for (const member of this.#members.values()) {
            for (const slot of member.slots.get(key) ?? []) {
              if (slot.n === 0) continue;
              counter.inc(slot.labels, slot.n);
              slot.n = 0;
            }
          }
        },
      });
      metric = counter;
    } else {
      metric = construct(client.Histogram, { ...config, buckets: this.#buckets as number[] });
    }
    this.#metrics.set(key, metric);
  }

  #remove(name: string, member: Member): void {
    this.#members.delete(name);
    for (const [key, slots] of member.slots) {
      const counter = this.#metrics.get(key) as PromCounter;
      for (const slot of slots) counter.remove(slot.labels);
    }
    for (const [key, list] of member.histograms) {
      const histogram = this.#metrics.get(key) as PromHistogram;
      for (const labels of list) histogram.remove(labels);
    }
    if (this.#members.size === 0) this.#removeAll();
  }

  /** The last one out: the metrics leave the registry (only our own: someone may have replaced one). */
  #removeAll(): void {
    for (const [key, metric] of this.#metrics) {
      const promName = METRICS[key].prom;
      if (this.#registry.getSingleMetric(promName) === metric) {
        this.#registry.removeSingleMetric(promName);
      }
    }
    this.#metrics.clear();
    this.#buckets = undefined;
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** The families of each registry limits registered on. */
const registries = new WeakMap<PromRegistry, Families>();
