import { formatValue } from 'limits-core/internal';
import { checkMetricsOptions, type SourceMetricsOptions } from './options.js';
import type {
  OtelAttributes,
  OtelBatchCallback,
  OtelCounter,
  OtelHistogram,
  OtelMeter,
  OtelObservable,
} from './otelMeter.js';
import type { MetricsHandle } from './registerMetrics.js';
import { SourceWatch } from './SourceWatch.js';
import { METRICS, type MetricKey } from './scheme.js';
import { buildSink, gaugeSeries, type Instruments, keysOf } from './series.js';
import type { LimitsSource } from './source.js';

/** Options of {@link registerOtelMetrics}. */
export type OtelMetricsOptions = SourceMetricsOptions;

/** The `limiter` names registered on each meter. */
const taken = new WeakMap<OtelMeter, Set<string>>();

/**
 * Registers the limits metrics of a source on an OpenTelemetry `Meter` (`@opentelemetry/api` 1.x),
 * with the attribute `limiter` set to `options.limiter` on every data point. The instruments are
 * those of the README's table: observable gauges `limits.limit`, `limits.capacity`,
 * `limits.inflight`, `limits.queued` (`{request}`), `limits.queued.bytes` (`By`),
 * `limits.queue.oldest_wait` (`s`), read by one batch callback when the SDK collects; counters
 * `limits.requests` (`result`, `reason`) and `limits.outcomes` (`outcome`); histograms
 * `limits.queue.wait` and `limits.lease.duration` (`s`, with the `buckets` as advice); and the
 * partition, breaker, quota and retry instruments where the source has them. Exported to
 * Prometheus by the OpenTelemetry exporter, they take the names {@link registerMetrics} gives, so
 * one dashboard reads both.
 *
 * This package never imports `@opentelemetry/api` (an optional peer dependency): it uses the meter
 * you pass. Nothing is measured for a source that is not registered; for one that is, the cost is
 * that of `registerMetrics` (the limiter's events, a clock read at grant and release) plus what the
 * meter does with each call (nothing, with the API's no-op meter).
 *
 * @param meter - an OpenTelemetry `Meter` (`metrics.getMeter('my-service')`).
 * @param source - a `Limiter`, a `PartitionedLimiter`, a limits-breaker guard or a `loadShed()`.
 * @param options - see {@link OtelMetricsOptions}; `limiter` is required.
 * @returns a handle whose `close()` (or `[Symbol.dispose]`) removes every listener and the batch
 *   callback (OpenTelemetry has no way to remove an instrument: its counters and histograms stay,
 *   fed no more).
 * @throws TypeError for a bad meter, source or option; RangeError for a bad `limiter` name or
 *   buckets, or a `limiter` name already registered on this meter. Nothing is registered then.
 * @example
 * ```ts
 * import { metrics } from '@opentelemetry/api';
 * const db = new Limiter({ algorithm: new VegasLimit() });
 * const handle = registerOtelMetrics(metrics.getMeter('api'), db, { limiter: 'db' });
 * // … limits.inflight {limiter: 'db'}, limits.outcomes {limiter: 'db', outcome: 'success'} …
 * handle.close();
 * ```
 */
export function registerOtelMetrics(
  meter: OtelMeter,
  source: LimitsSource,
  options: OtelMetricsOptions,
): MetricsHandle {
  const m = meter as Partial<OtelMeter> | null;
  if (
    m === null ||
    typeof m !== 'object' ||
    typeof m.createObservableGauge !== 'function' ||
    typeof m.createCounter !== 'function' ||
    typeof m.createHistogram !== 'function' ||
    typeof m.addBatchObservableCallback !== 'function' ||
    typeof m.removeBatchObservableCallback !== 'function'
  ) {
    throw new TypeError(
      `limits: registerOtelMetrics needs an OpenTelemetry Meter (metrics.getMeter(name)), got ${formatValue(meter)}`,
    );
  }
  const { observed, buckets } = checkMetricsOptions('registerOtelMetrics', source, options, []);
  let names = taken.get(meter);
  if (names === undefined) {
    names = new Set();
    taken.set(meter, names);
  }
  if (names.has(observed.name)) {
    throw new RangeError(
      `limits: option "limiter" must be unique per meter: "${observed.name}" is already registered (close its handle first, or give this source another name)`,
    );
  }
  const keys = keysOf(observed);

  const instruments = new Map<MetricKey, OtelObservable | OtelCounter | OtelHistogram>();
  for (const key of keys) {
    const spec = METRICS[key];
    const base = { description: spec.help, unit: spec.unit };
    instruments.set(
      key,
      spec.kind === 'gauge'
        ? meter.createObservableGauge(spec.otel, base)
        : spec.kind === 'counter'
          ? meter.createCounter(spec.otel, base)
          : meter.createHistogram(spec.otel, {
              ...base,
              advice: { explicitBucketBoundaries: buckets },
            }),
    );
  }

  const gauges = gaugeSeries(observed).map((s) => ({
    instrument: instruments.get(s.key) as OtelObservable,
    attributes: s.labels as OtelAttributes,
    read: s.read,
  }));
  const callback: OtelBatchCallback = (observer) => {
    for (const g of gauges) observer.observe(g.instrument as never, g.read(), g.attributes);
  };
  const observables = keys
    .filter((key) => METRICS[key].kind === 'gauge')
    .map((key) => instruments.get(key) as never);

  const feed: Instruments = {
    counter: (key, labels) => {
      const counter = instruments.get(key) as OtelCounter;
      const attributes = labels as OtelAttributes;
      // At 0 from the start, as with prom-client: a rate over it exists before the first event.
      counter.add(0, attributes);
      return () => counter.add(1, attributes);
    },
    histogram: (key, labels) => {
      const histogram = instruments.get(key) as OtelHistogram;
      const attributes = labels as OtelAttributes;
      return (seconds) => histogram.record(seconds, attributes);
    },
  };
  const sink = buildSink(observed, feed);
  meter.addBatchObservableCallback(callback, observables);
  const watch = new SourceWatch(observed.source, observed.quota, observed.retry, sink);
  names.add(observed.name);

  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    watch.close();
    meter.removeBatchObservableCallback(callback, observables);
    names.delete(observed.name);
  };
  return {
    limiter: observed.name,
    names: keys.map((key) => METRICS[key].otel),
    close,
    [Symbol.dispose]: close,
  };
}
