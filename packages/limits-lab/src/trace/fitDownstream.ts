import { formatValue } from 'limits-core/internal';
import type { Downstream } from '../traffic.js';
import type { DownstreamFit, LatencySpike } from './DownstreamFit.js';
import { fittedDownstream } from './FittedDownstream.js';
import { fitReport } from './fitReport.js';
import { InFlight } from './InFlight.js';
import { KneeRegression } from './KneeRegression.js';
import { TraceBuckets } from './TraceBuckets.js';
import { TRACE_OUTCOMES, type TraceOutcome, type TraceRecord } from './TraceRecord.js';

/** What {@link fitDownstream} returns. */
export interface FittedTrace {
  /** The fitted downstream, for the lab's simulator. */
  downstream: Downstream;
  /** A short text of the fit, for a person. */
  report: string;
  /** The fitted parameters. */
  fit: DownstreamFit;
}

/** The time buckets' width (before any doubling for a long trace). */
const BUCKET_MS = 250;
/** A spike: base latency above this many times its median. */
const SPIKE_FACTOR = 3;
/** Durations are fitted in log space: a 0 ms call counts as this. */
const MIN_LATENCY_MS = 0.01;

/**
 * Fits the downstream a trace's calls met: its latency as a function of time and concurrency, and its
 * outcome rates over time, as `latency(t, n) = base(t) × max(1, n / knee)^exponent` with a log-normal
 * jitter.
 *
 * - `n`, the concurrency a call met, is the number of calls in flight on the downstream as it started
 *   (itself included), computed from the records' starts and durations; `refused` calls never reached
 *   the downstream and are not counted, nor fitted.
 * - `base(t)` is per 250 ms bucket of start time (wider for a trace over 4,096 buckets): the bucket's
 *   successful calls' geometric-mean latency with the concurrency factor taken out, carried forward
 *   over buckets without one. It follows spikes: a spike is a span where it exceeds 3 × its median.
 * - `knee` and `exponent` are fitted by least squares on log latency against log concurrency within
 *   the buckets (each bucket's own level taken out, so a latency spike that drives concurrency up is
 *   not mistaken for a concurrency effect), the knee on a grid of 16 steps per decade from 1 to
 *   10,000. Only successful calls' latencies are fitted; when no exponent reaches a t statistic of 4,
 *   latency does not depend on concurrency (no knee).
 * - `failure` and `overload` rates are the shares of calls reaching the downstream, per bucket.
 *
 * Pure and deterministic; one pass over `records`, in memory bounded by the buckets (at most 4,096)
 * and the calls in flight at once, whatever the number of records.
 *
 * @param records - the trace's records in start order, as {@link readTrace} yields them.
 * @returns the downstream model, a report (base latency range, spikes, knee, exponent, R², records by
 * outcome) and the fitted parameters.
 * @throws TypeError when `records` is not iterable or a record's field has the wrong type;
 * RangeError naming `records[i]` and the field for a value out of range or out of start order, or
 * when there is no record or no successful call to fit latency from.
 * @example
 * ```ts
 * const records = [];
 * for await (const record of readTrace('calls.jsonl')) records.push(record);
 * const { downstream, report } = fitDownstream(records);
 * console.log(report);
 * ```
 */
export function fitDownstream(records: Iterable<TraceRecord>): FittedTrace {
  if (
    records === null ||
    typeof records !== 'object' ||
    typeof (records as Partial<Iterable<TraceRecord>>)[Symbol.iterator] !== 'function'
  ) {
    throw new TypeError(
      `limits: fitDownstream's records must be an iterable of trace records, got ${formatValue(records)}`,
    );
  }
  const counts: Record<TraceOutcome, number> = { success: 0, failure: 0, overload: 0, refused: 0 };
  const inFlight = new InFlight();
  const regression = new KneeRegression();
  let buckets: TraceBuckets | undefined;
  let lastStartMs = Number.NEGATIVE_INFINITY;
  let i = 0;
  for (const record of records) {
    checkRecord(record, i);
    const { startMs, durationMs, outcome } = record;
    if (startMs < lastStartMs) {
      throw new RangeError(
        `limits: fitDownstream: records[${i}].startMs (${startMs}) is before records[${i - 1}].startMs (${lastStartMs}); records must come in start order, as readTrace yields them`,
      );
    }
    lastStartMs = startMs;
    buckets ??= new TraceBuckets(Math.floor(startMs / BUCKET_MS) * BUCKET_MS, BUCKET_MS);
    counts[outcome]++;
    i++;
    if (outcome === 'refused') {
      buckets.reach(startMs);
      continue;
    }
    const logN = Math.log(inFlight.enter(startMs, startMs + durationMs));
    const logLatency = Math.log(Math.max(MIN_LATENCY_MS, durationMs));
    if (outcome === 'success') {
      regression.add(Math.floor((startMs - buckets.originMs) / BUCKET_MS), logN, logLatency);
    }
    buckets.add(startMs, outcome, logLatency, logN);
  }
  if (buckets === undefined) throw new RangeError('limits: fitDownstream: no records to fit');
  if (counts.success === 0) {
    throw new RangeError(
      `limits: fitDownstream: no successful call to fit latency from (${counts.failure} failure, ${counts.overload} overload, ${counts.refused} refused)`,
    );
  }
  const knee = regression.result();
  const rawBase = buckets.baseMs(knee.kneeIndex, knee.exponent);
  const medianBaseMs = median(rawBase.filter((v) => !Number.isNaN(v)));
  const baseMs = carryForward(rawBase);
  const rates = buckets.rates();
  const fit: DownstreamFit = {
    originMs: buckets.originMs,
    bucketMs: buckets.widthMs,
    baseMs,
    failureRate: carryForward(rates.failure),
    overloadRate: carryForward(rates.overload),
    knee: knee.knee,
    exponent: knee.exponent,
    exponentT: knee.exponentT,
    sigma: knee.sigma,
    rSquared: knee.rSquared,
    concurrencyShare: knee.concurrencyShare,
    spikes: spikesOf(baseMs, medianBaseMs, buckets.originMs, buckets.widthMs),
    medianBaseMs,
    peakConcurrency: inFlight.peak,
    records: counts,
  };
  return { downstream: fittedDownstream(fit), report: fitReport(fit), fit };
}

function checkRecord(record: unknown, i: number): asserts record is TraceRecord {
  if (record === null || typeof record !== 'object') {
    throw new TypeError(
      `limits: fitDownstream: records[${i}] must be a trace record, got ${formatValue(record)}`,
    );
  }
  const r = record as Partial<Record<keyof TraceRecord, unknown>>;
  for (const [field, min] of [
    ['startMs', Number.NEGATIVE_INFINITY],
    ['durationMs', 0],
  ] as const) {
    const value = r[field];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
      throw new (typeof value === 'number' ? RangeError : TypeError)(
        `limits: fitDownstream: records[${i}].${field} must be a finite number${min === 0 ? ' ≥ 0' : ''}, got ${formatValue(value)}`,
      );
    }
  }
  if (!TRACE_OUTCOMES.includes(r.outcome as TraceOutcome)) {
    throw new RangeError(
      `limits: fitDownstream: records[${i}].outcome must be one of ${TRACE_OUTCOMES.map((o) => `"${o}"`).join(', ')}, got ${formatValue(r.outcome)}`,
    );
  }
}

function median(values: Float64Array): number {
  if (values.length === 0) return Number.NaN;
  const sorted = values.slice().sort();
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** `NaN` gaps filled with the last value before them (the first value, before any); all-`NaN` → 0. */
function carryForward(values: Float64Array): number[] {
  const first = values.find((v) => !Number.isNaN(v)) ?? 0;
  const out: number[] = [];
  let last = first;
  for (const v of values) {
    if (!Number.isNaN(v)) last = v;
    out.push(last);
  }
  return out;
}

function spikesOf(
  baseMs: readonly number[],
  medianMs: number,
  originMs: number,
  bucketMs: number,
): LatencySpike[] {
  const spikes: LatencySpike[] = [];
  let open: LatencySpike | undefined;
  for (let i = 0; i < baseMs.length; i++) {
    const v = baseMs[i] as number;
    if (v > SPIKE_FACTOR * medianMs) {
      open ??= { fromMs: originMs + i * bucketMs, toMs: 0, peakMs: 0 };
      open.toMs = originMs + (i + 1) * bucketMs;
      open.peakMs = Math.max(open.peakMs, v);
    } else if (open !== undefined) {
      spikes.push(open);
      open = undefined;
    }
  }
  if (open !== undefined) spikes.push(open);
  return spikes;
}
