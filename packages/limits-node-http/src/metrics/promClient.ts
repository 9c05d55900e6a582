import { createRequire } from 'node:module';

/**
 * The part of prom-client (15) that {@link registerMetrics} uses, typed here so that this package's
 * types do not need prom-client (an optional peer): prom-client's `Registry` and module satisfy
 * these interfaces. The one place that knows prom-client.
 */

/** What {@link registerMetrics} needs of a prom-client `Registry` (e.g. `register`, or `new Registry()`). */
export interface PromRegistry {
  /** Adds a metric (prom-client's metric constructors call it, through their `registers`). */
  registerMetric(metric: unknown): void;
  /** The metric registered under `name`, if any. */
  getSingleMetric(name: string): unknown;
  /** Removes the metric registered under `name`. */
  removeSingleMetric(name: string): void;
}

/** Labels of one series. */
export type PromLabels = Record<string, string>;

/** The configuration of a prom-client metric, as {@link registerMetrics} builds it. */
export interface PromMetricConfig {
  name: string;
  help: string;
  labelNames: string[];
  registers: PromRegistry[];
  /** Called by prom-client on every scrape, before the values are read. */
  collect?: () => void;
}

/** A prom-client `Gauge`. */
export interface PromGauge {
  set(labels: PromLabels, value: number): void;
  reset(): void;
}

/** A prom-client `Counter`. */
export interface PromCounter {
  inc(labels: PromLabels, value?: number): void;
  remove(labels: PromLabels): void;
}

/** A prom-client `Histogram`. */
export interface PromHistogram {
  labels(labels: PromLabels): { observe(value: number): void };
  zero(labels: PromLabels): void;
  remove(labels: PromLabels): void;
}

/**
 * The prom-client module (`import * as client from 'prom-client'`), or anything with its three
 * classes. (Their configurations are typed `never` here so that prom-client's own classes, whose
 * configurations name its `Registry` class, are assignable; {@link construct} passes a
 * {@link PromMetricConfig}.)
 */
export interface PromClient {
  Gauge: new (config: never) => PromGauge;
  Counter: new (config: never) => PromCounter;
  Histogram: new (config: never) => PromHistogram;
}

/** @internal Builds a prom-client metric from one of {@link PromClient}'s classes. */
export function construct<M>(
  Metric: new (config: never) => M,
  config: PromMetricConfig & { buckets?: number[] },
): M {
  return new (Metric as unknown as new (c: typeof config) => M)(config);
}

let loaded: PromClient | undefined;

/**
 * @internal The installed prom-client, loaded on first use (synchronously: prom-client 15 is
 * CommonJS), so that importing this package never loads it.
 * @throws Error when prom-client is not installed.
 */
export function loadPromClient(): PromClient {
  if (loaded !== undefined) return loaded;
  try {
    loaded = createRequire(import.meta.url)('prom-client') as PromClient;
  } catch (cause) {
    throw new Error(
      'limits: registerMetrics needs the "prom-client" package: install it (npm install prom-client), or pass its module as option "client"',
      { cause },
    );
  }
  return loaded;
}
