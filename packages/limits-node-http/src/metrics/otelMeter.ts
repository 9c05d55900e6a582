/**
 * The part of `@opentelemetry/api` 1.x that {@link registerOtelMetrics} uses, typed here so that
 * this package neither imports nor needs the API (an optional peer): any `Meter` from
 * `metrics.getMeter()` (the API's no-op one, or an SDK's) satisfies these interfaces. The one place
 * that knows OpenTelemetry.
 */

/** Attributes of one data point. */
export type OtelAttributes = Record<string, string>;

/** What a metric instrument is created with. */
export interface OtelMetricOptions {
  description?: string;
  unit?: string;
  /** Hints to the SDK (the histogram's bucket bounds). */
  advice?: { explicitBucketBoundaries?: number[] };
}

/** An OpenTelemetry `Counter`. */
export interface OtelCounter {
  add(value: number, attributes?: OtelAttributes): void;
}

/** An OpenTelemetry `Histogram`. */
export interface OtelHistogram {
  record(value: number, attributes?: OtelAttributes): void;
}

/** An OpenTelemetry `ObservableGauge` (an opaque handle, passed back to the batch observer). */
export type OtelObservable = object;

/** What a batch observable callback is given: `observe(instrument, value, attributes)`. */
export interface OtelBatchObservableResult {
  observe(observable: never, value: number, attributes?: OtelAttributes): void;
}

/** A batch observable callback. */
export type OtelBatchCallback = (observer: OtelBatchObservableResult) => void | Promise<void>;

/**
 * What {@link registerOtelMetrics} needs of an OpenTelemetry `Meter`
 * (`metrics.getMeter('my-service')` from `@opentelemetry/api`).
 */
export interface OtelMeter {
  createObservableGauge(name: string, options?: OtelMetricOptions): OtelObservable;
  createCounter(name: string, options?: OtelMetricOptions): OtelCounter;
  createHistogram(name: string, options?: OtelMetricOptions): OtelHistogram;
  addBatchObservableCallback(callback: OtelBatchCallback, observables: never[]): void;
  removeBatchObservableCallback(callback: OtelBatchCallback, observables: never[]): void;
}
