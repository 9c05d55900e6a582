import {
  type Limiter,
  OUTCOMES,
  type PartitionLedger,
  REJECT_REASONS,
  type RejectEvent,
  type ReleaseEvent,
} from 'limits-core';
import {
  construct,
  type PromClient,
  type PromGauge,
  type PromLabels,
  type PromMetricConfig,
  type PromRegistry,
} from './promClient.js';
import type {
  GuardCircuitState,
  GuardFallbackReason,
  GuardSource,
  ResolvedSource,
} from './source.js';
import { type Slot, Tally } from './Tally.js';

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

const STATES: readonly GuardCircuitState[] = ['CLOSED', 'OPEN', 'HALF_OPEN'];
const FALLBACK_REASONS: readonly GuardFallbackReason[] = ['open', 'limit', 'timeout', 'error'];

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

/** @internal The names a registration of `source` takes, in the order they are registered. */
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

/** @internal One registration: its metrics, its listeners, and how to take both away. */
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
