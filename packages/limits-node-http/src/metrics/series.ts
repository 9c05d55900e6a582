import { OUTCOMES, type PartitionLedger, REJECT_REASONS } from 'limits-core';
import type { PartSink, SourceSink } from './SourceWatch.js';
import {
  BREAKER_STATES,
  FALLBACK_REASONS,
  LIMITER_LABEL,
  METRICS,
  type MetricGroup,
  type MetricKey,
} from './scheme.js';
import type {
  QuotaSource,
  ResolvedSource,
  RetryBudgetSource,
  RetryPolicySource,
} from './source.js';

/** The labels (attributes) of one series. */
export type Labels = Record<string, string>;

/**
 * How a metrics adapter makes one series of a counter or a histogram: it returns the function the
 * event path calls (an increment by 1; an observation in seconds). Called once per series at
 * registration, never per event.
 */
export interface Instruments {
  counter(key: MetricKey, labels: Labels): () => void;
  histogram(key: MetricKey, labels: Labels): (seconds: number) => void;
}

/** One series of a gauge: read when the metrics are collected, never in between. */
export interface GaugeSeries {
  readonly key: MetricKey;
  readonly labels: Labels;
  read(): number;
}

/** What one registration observes, taken apart: the source, and the extras given as options. */
export interface Observed {
  /** The `limiter` label's value. */
  readonly name: string;
  readonly source: ResolvedSource;
  readonly quota: QuotaSource | undefined;
  readonly retry: RetryPolicySource | undefined;
  readonly retryBudget: RetryBudgetSource | undefined;
}

/** The metric groups a registration has. */
export function groupsOf(o: Observed): Set<MetricGroup> {
  const groups = new Set<MetricGroup>(['limiter']);
  if (o.source.partitioned !== undefined) groups.add('partition');
  if (o.source.guard !== undefined) groups.add('breaker');
  if (o.quota !== undefined) groups.add('quota');
  if (o.retry !== undefined || o.retryBudget !== undefined) groups.add('retry');
  return groups;
}

/** The names (keys) of the metrics a registration has. */
export function keysOf(o: Observed): MetricKey[] {
  const groups = groupsOf(o);
  return (Object.keys(METRICS) as MetricKey[]).filter((key) => {
    const spec = METRICS[key];
    if (!groups.has(spec.group)) return false;
    // The retry group: the gauge needs the budget, the counters the policy.
    if (spec.group === 'retry')
      return spec.kind === 'gauge' ? o.retryBudget !== undefined : o.retry !== undefined;
    return true;
  });
}

function partLabels(name: string, partition: string | undefined): Labels {
  return partition === undefined ? { [LIMITER_LABEL]: name } : { [LIMITER_LABEL]: name, partition };
}

/** Every gauge series of a registration, with how to read it. */
export function gaugeSeries(o: Observed): GaugeSeries[] {
  const out: GaugeSeries[] = [];
  const base = { [LIMITER_LABEL]: o.name };
  for (const { limiter, partition } of o.source.parts) {
    const labels = partLabels(o.name, partition);
    out.push(
      { key: 'limit', labels, read: () => limiter.limit },
      { key: 'capacity', labels, read: () => limiter.capacity },
      { key: 'inflight', labels, read: () => limiter.inflight },
      { key: 'queued', labels, read: () => limiter.queued },
      { key: 'queuedBytes', labels, read: () => limiter.queuedBytes },
      {
        key: 'queueOldestWait',
        labels,
        read: () => limiter.snapshot().oldestQueuedMs / 1000,
      },
    );
  }
  const partitioned = o.source.partitioned;
  if (partitioned !== undefined) {
    for (const { partition } of o.source.parts) {
      const labels = partLabels(o.name, partition);
      const ledger = () => partitioned.ledger().partitions[partition as string] as PartitionLedger;
      out.push(
        { key: 'partitionReserved', labels, read: () => ledger().reserved },
        { key: 'partitionBorrowed', labels, read: () => ledger().borrowed },
      );
    }
  }
  const guard = o.source.guard;
  if (guard !== undefined) {
    for (const state of BREAKER_STATES) {
      out.push({
        key: 'breakerState',
        labels: { ...base, state },
        read: () => (guard.state.toLowerCase() === state ? 1 : 0),
      });
    }
  }
  const budget = o.retryBudget;
  if (budget !== undefined)
    out.push({ key: 'retryBudget', labels: base, read: () => budget.available });
  return out;
}

/**
 * A counter's series by one label's value: those of `values` made at once (exported at 0 from
 * the start), any other on its first event.
 */
function byValue(
  instruments: Instruments,
  key: MetricKey,
  labels: Labels,
  label: string,
  values: readonly string[],
): (value: string) => void {
  const made = new Map<string, () => void>();
  for (const v of values) made.set(v, instruments.counter(key, { ...labels, [label]: v }));
  return (value) => {
    let inc = made.get(value);
    if (inc === undefined) {
      inc = instruments.counter(key, { ...labels, [label]: value });
      made.set(value, inc);
    }
    inc();
  };
}

function partSink(instruments: Instruments, labels: Labels): PartSink {
  const admitted = instruments.counter('requests', { ...labels, result: 'admitted' });
  const refused = byValue(
    instruments,
    'requests',
    { ...labels, result: 'refused' },
    'reason',
    REJECT_REASONS,
  );
  const outcome = byValue(instruments, 'outcomes', labels, 'outcome', OUTCOMES);
  const wait = instruments.histogram('queueWait', labels);
  const held = instruments.histogram('leaseDuration', labels);
  return {
    admitted(waitedS) {
      admitted();
      // Only requests that queued (a grant at once reports 0; an untimed queue, NaN). Half the
      // per-call cost of an uncongested limiter: a prom-client observation costs about 200 ns.
      if (waitedS > 0) wait(waitedS);
    },
    refused,
    released(o, heldS) {
      outcome(o);
      if (!Number.isNaN(heldS)) held(heldS);
    },
  };
}

const nothing = (): void => {};

/** The sink of a registration: every counter and histogram series it feeds, made now. */
export function buildSink(o: Observed, instruments: Instruments): SourceSink {
  const base = { [LIMITER_LABEL]: o.name };
  const parts = o.source.parts.map(({ partition }) =>
    partSink(instruments, partLabels(o.name, partition)),
  );
  const sink: SourceSink = {
    parts,
    fallback: nothing,
    breakerCall: nothing,
    quotaRefused: nothing,
    quotaAlert: nothing,
    quotaFailed: nothing,
    retried: nothing,
    retryRefused: nothing,
  };
  if (o.source.guard !== undefined) {
    sink.fallback = byValue(instruments, 'fallbacks', base, 'reason', FALLBACK_REASONS);
    sink.breakerCall = byValue(instruments, 'breakerCalls', base, 'outcome', [
      'success',
      'failure',
    ]);
  }
  const quota = o.quota;
  if (quota !== undefined) {
    sink.quotaRefused = byValue(instruments, 'quotaRefusals', base, 'axis', quota.axes);
    sink.quotaAlert = byValue(instruments, 'quotaAlerts', base, 'axis', quota.axes);
    sink.quotaFailed = byValue(instruments, 'quotaFailures', base, 'policy', ['open', 'closed']);
  }
  if (o.retry !== undefined) {
    sink.retried = instruments.counter('retries', base);
    sink.retryRefused = instruments.counter('retriesRefused', base);
  }
  return sink;
}
