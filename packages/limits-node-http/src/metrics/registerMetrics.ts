import {
  type Limiter,
  OUTCOMES,
  type PartitionLedger,
  REJECT_REASONS,
  type RejectEvent,
  type ReleaseEvent,
} from 'limits-core';
import { checkKeys, checkString, formatValue } from 'limits-core/internal';
import {
  construct,
  loadPromClient,
  type PromClient,
  type PromCounter,
  type PromGauge,
  type PromLabels,
  type PromMetricConfig,
  type PromRegistry,
} from './promClient.js';
import {
  type GuardCircuitState,
  type GuardFallbackReason,
  type GuardSource,
  type LimitsSource,
  type ResolvedSource,
  resolveSource,
} from './source.js';

/** Default buckets of the RTT histogram, in seconds: 1 ms to 10 s. */
export const defaultRttBuckets: readonly number[] = Object.freeze([
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]);

/** What `registerMetrics` returns. */
export interface MetricsHandle {
  /** The names of the metrics registered. */
  readonly names: readonly string[];
  /**
   * Removes every listener and every metric this registration added (idempotent). The source is
   * left as it was before: a limiter nobody else listens to is back on its fastest path.
   */
  unregister(): void;
}

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
 * const db = new Limiter({ algorithm: new VegasLimit() });
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

const STATES: readonly GuardCircuitState[] = ['CLOSED', 'OPEN', 'HALF_OPEN'];
const FALLBACK_REASONS: readonly GuardFallbackReason[] = ['open', 'limiter', 'timeout', 'error'];

/** Series of every limiter: suffix, help. */
const LIMITER_SERIES = {
  gauges: [
    ['limit', "The limit algorithm's current integer limit.", (l) => l.limit],
    ['capacity', 'Units that may be in flight: max(limit, probeSlots).', (l) => l.capacity],
    ['inflight', 'Units in flight (a permit of cost 3 counts 3).', (l) => l.inflight],
    ['queued', 'Requests waiting in the queue.', (l) => l.queued],
    ['queued_bytes', 'Bytes held by queued requests.', (l) => l.queuedBytes],
    [
      'oldest_queued_seconds',
      'Age of the oldest queued request, in seconds (0 when none waits).',
      (l) => l.snapshot().oldestQueuedMs / 1000,
    ],
  ] as ReadonlyArray<readonly [string, string, (limiter: Limiter) => number]>,
  calls: 'calls_total',
  rejections: 'rejections_total',
  rtt: 'rtt_seconds',
} as const;

/** Series of a PartitionedLimiter's ledger: suffix, help, field. */
const LEDGER_SERIES = [
  ['reserved', 'Units reserved for the partition, never lent to others.', 'reserved'],
  ['borrowed', 'Units the partition runs beyond its reserve, from the shared pool.', 'borrowed'],
] as const;

const GUARD_SERIES = {
  state: 'circuit_state',
  fallbacks: 'fallbacks_total',
  breaker: 'breaker_outcomes_total',
} as const;

/** The names a registration of `source` takes, in the order they are registered. */
export function seriesNames(prefix: string, source: ResolvedSource): string[] {
  return [
    ...LIMITER_SERIES.gauges.map(([suffix]) => suffix),
    LIMITER_SERIES.calls,
    LIMITER_SERIES.rejections,
    LIMITER_SERIES.rtt,
    ...(source.partitioned === undefined ? [] : LEDGER_SERIES.map(([suffix]) => suffix)),
    ...(source.guard === undefined ? [] : Object.values(GUARD_SERIES)),
  ].map((suffix) => prefix + suffix);
}

interface Part {
  readonly limiter: Limiter;
  readonly labels: PromLabels;
  readonly onRelease: (event: ReleaseEvent) => void;
  readonly onReject: (event: RejectEvent) => void;
}

/** One registration: its metrics, its listeners, and how to take both away. */
export class Registration implements MetricsHandle {
  readonly names: readonly string[];
  readonly #registry: PromRegistry;
  readonly #metrics: Array<[string, unknown]> = [];
  readonly #parts: Part[] = [];
  readonly #guard: GuardSource | undefined;
  #guardListeners:
    | {
        fallback: (cause: { readonly reason: GuardFallbackReason }) => void;
        success: () => void;
        failure: () => void;
      }
    | undefined = undefined;
  #active = true;

  constructor(
    client: PromClient,
    registry: PromRegistry,
    prefix: string,
    buckets: number[],
    source: ResolvedSource,
  ) {
    this.#registry = registry;
    const guard = source.guard;
    this.#guard = guard;
    try {
      this.#build(client, prefix, buckets, source);
    } catch (error) {
      // (Only a strange `client` can throw here.) Nothing is left behind: no metric, no listener.
      this.#removeMetrics();
      throw error;
    }
    // Listeners last, once every metric exists.
    for (const part of this.#parts) {
      part.limiter.on('release', part.onRelease);
      part.limiter.on('reject', part.onReject);
    }
    const listeners = this.#guardListeners;
    if (guard !== undefined && listeners !== undefined) {
      guard.on('fallback', listeners.fallback);
      guard.breaker.on('success', listeners.success);
      guard.breaker.on('failure', listeners.failure);
    }
    this.names = this.#metrics.map(([name]) => name);
  }

  #build(client: PromClient, prefix: string, buckets: number[], source: ResolvedSource): void {
    const registry = this.#registry;
    const guard = this.#guard;
    const sources = source.parts;
    const labelNames = sources.some((s) => s.partition !== undefined) ? ['partition'] : [];
    const base = sources.map((s) => ({
      limiter: s.limiter,
      labels: (s.partition === undefined ? {} : { partition: s.partition }) as PromLabels,
    }));
    const config = (suffix: string, help: string, labels: string[]): PromMetricConfig => ({
      name: prefix + suffix,
      help,
      labelNames: labels,
      registers: [registry],
    });

    for (const [suffix, help, read] of LIMITER_SERIES.gauges) {
      const gauge = this.#add(
        construct(client.Gauge, {
          ...config(suffix, help, labelNames),
          collect: () => {
            for (const b of base) gauge.set(b.labels, read(b.limiter));
          },
        }),
        prefix + suffix,
      );
    }
    const calls = this.#counter(
      client,
      config(
        LIMITER_SERIES.calls,
        'Calls that returned their permit, by outcome (success, dropped, failure, ignore).',
        [...labelNames, 'outcome'],
      ),
    );
    const rejections = this.#counter(
      client,
      config(
        LIMITER_SERIES.rejections,
        'Requests refused at admission or that left the queue without a permit, by reason.',
        [...labelNames, 'reason'],
      ),
    );
    const rtt = this.#add(
      construct(client.Histogram, {
        ...config(
          LIMITER_SERIES.rtt,
          'Time a permit was held (grant to release), in seconds, every outcome.',
          labelNames,
        ),
        buckets,
      }),
      prefix + LIMITER_SERIES.rtt,
    );

    for (const { limiter, labels } of base) {
      const byOutcome = calls.slots(labels, 'outcome', OUTCOMES);
      const byReason = rejections.slots(labels, 'reason', REJECT_REASONS);
      rtt.zero(labels);
      const part: Part = {
        limiter,
        labels,
        onRelease: (event) => {
          (byOutcome[event.outcome] ?? calls.slot({ ...labels, outcome: event.outcome })).n++;
          // NaN: granted before this listener came, so the call was not timed.
          if (!Number.isNaN(event.rtt)) rtt.observe(labels, event.rtt / 1000);
        },
        onReject: (event) => {
          (byReason[event.reason] ?? rejections.slot({ ...labels, reason: event.reason })).n++;
        },
      };
      this.#parts.push(part);
    }

    const bulkheads = source.partitioned;
    if (bulkheads !== undefined) {
      for (const [suffix, help, field] of LEDGER_SERIES) {
        const gauge: PromGauge = this.#add(
          construct(client.Gauge, {
            ...config(suffix, help, ['partition']),
            collect: () => {
              const { partitions } = bulkheads.ledger();
              for (const name in partitions)
                gauge.set({ partition: name }, (partitions[name] as PartitionLedger)[field]);
            },
          }),
          prefix + suffix,
        );
      }
    }

    if (guard !== undefined) {
      const state: PromGauge = this.#add(
        construct(client.Gauge, {
          ...config(
            GUARD_SERIES.state,
            'The circuit state: 1 for the current state, 0 for the others.',
            ['state'],
          ),
          collect: () => {
            const now = guard.state;
            for (const s of STATES) state.set({ state: s }, s === now ? 1 : 0);
          },
        }),
        prefix + GUARD_SERIES.state,
      );
      const fallbacks = this.#counter(
        client,
        config(
          GUARD_SERIES.fallbacks,
          "Calls that did not get the action's answer, by reason (open, limit, timeout, error): answered by the fallback, or rejected when there is none.",
          ['reason'],
        ),
      );
      const breaker = this.#counter(
        client,
        config(
          GUARD_SERIES.breaker,
          'Calls the circuit breaker judged, by outcome (success, failure).',
          ['outcome'],
        ),
      );
      const byFallback = fallbacks.slots({}, 'reason', FALLBACK_REASONS);
      const { success, failure } = breaker.slots({}, 'outcome', ['success', 'failure']);
      this.#guardListeners = {
        fallback: (cause) => {
          (byFallback[cause.reason] ?? fallbacks.slot({ reason: cause.reason })).n++;
        },
        success: () => {
          (success as Slot).n++;
        },
        failure: () => {
          (failure as Slot).n++;
        },
      };
    }
  }

  unregister(): void {
    if (!this.#active) return;
    this.#active = false;
    for (const part of this.#parts) {
      part.limiter.off('release', part.onRelease);
      part.limiter.off('reject', part.onReject);
    }
    const guard = this.#guard;
    const listeners = this.#guardListeners;
    if (guard !== undefined && listeners !== undefined) {
      guard.off('fallback', listeners.fallback);
      guard.breaker.removeListener('success', listeners.success);
      guard.breaker.removeListener('failure', listeners.failure);
    }
    this.#removeMetrics();
  }

  #removeMetrics(): void {
    // Only our own metric: someone may have replaced it since.
    for (const [name, metric] of this.#metrics) {
      if (this.#registry.getSingleMetric(name) === metric) this.#registry.removeSingleMetric(name);
    }
  }

  /** A counter whose counts are plain numbers on the event path, handed to prom-client at scrape time. */
  #counter(client: PromClient, config: PromMetricConfig): Tally {
    const tally = new Tally();
    const counter = this.#add(
      construct(client.Counter, { ...config, collect: () => tally.flush(counter) }),
      config.name,
    );
    tally.counter = counter;
    return tally;
  }

  #add<M>(metric: M, name: string): M {
    this.#metrics.push([name, metric]);
    return metric;
  }
}

/** One series of a {@link Tally}: its labels and the count not yet handed to prom-client. */
interface Slot {
  readonly labels: PromLabels;
  n: number;
}

/**
 * Counts kept as plain numbers (an increment per event, no label hashing) and added to the
 * prom-client counter by its `collect`, which prom-client runs before every read of the counter.
 */
class Tally {
  counter: PromCounter | undefined;
  readonly #slots: Slot[] = [];

  /** A new series, exported at 0 from the start. */
  slot(labels: PromLabels): Slot {
    const slot = { labels, n: 0 };
    this.#slots.push(slot);
    this.counter?.inc(labels, 0);
    return slot;
  }

  /** One series per value of label `name`, on top of `labels`. */
  slots(labels: PromLabels, name: string, values: readonly string[]): Record<string, Slot> {
    const set: Record<string, Slot> = {};
    for (const value of values) set[value] = this.slot({ ...labels, [name]: value });
    return set;
  }

  flush(counter: PromCounter): void {
    for (const slot of this.#slots) {
      if (slot.n === 0) continue;
      counter.inc(slot.labels, slot.n);
      slot.n = 0;
    }
  }
}
