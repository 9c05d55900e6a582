import type { Criticality } from 'limits-core';
import type { Arrival } from '../traffic.js';

/**
 * How a recorded call ended: the downstream's three answers of {@link CallOutcome}, plus `refused`
 * (the recorded system's own limiter, breaker or fallback answered without the downstream, so the
 * call's duration says nothing about the downstream).
 */
export type TraceOutcome = 'success' | 'failure' | 'overload' | 'refused';

/** Every {@link TraceOutcome}. */
export const TRACE_OUTCOMES: readonly TraceOutcome[] = [
  'success',
  'failure',
  'overload',
  'refused',
];

/**
 * One call of a recorded trace, as {@link readTrace} yields it.
 *
 * Times are in ms; `startMs` is relative to the trace's earliest record (which starts at 0), whatever
 * the input gave (relative ms, epoch ms or ISO 8601 dates).
 */
export interface TraceRecord {
  /** When the call started, in ms since the trace's earliest record (finite, ≥ 0). */
  startMs: number;
  /** How long it took to its answer, in ms (finite, ≥ 0). */
  durationMs: number;
  /**
   * How it ended: `success`, `failure` (an error that says nothing about load, e.g. a 500),
   * `overload` (429, 502, 503, 504, or no answer: a timeout) or `refused` (refused or answered by the
   * recorded system itself, never reaching the downstream).
   */
  outcome: TraceOutcome;
  /** The HTTP status the input gave, if any (0: no answer). */
  status?: number;
  /** Its tenant or partition key, if the input gave one. */
  key?: string;
  /** Its cost in units of the limit, if the input gave one (finite, > 0). */
  cost?: number;
  /** Its importance, if the input gave one. */
  criticality?: Criticality;
}

/**
 * The outcome of an HTTP status, by the rule limits-node-http classifies responses with: 429, 502,
 * 503, 504 and 0 (no answer: a timeout or a broken connection) → `overload`; any other 5xx →
 * `failure`; 1xx–4xx → `success` (the downstream answered: a 404 is a normal answer).
 */
export function outcomeOfStatus(status: number): TraceOutcome {
  if (status === 0 || status === 429 || status === 502 || status === 503 || status === 504)
    return 'overload';
  if (status >= 500) return 'failure';
  return 'success';
}

/**
 * The arrival a recorded call stands for, to offer to a simulated limiter: its start, key, cost and
 * criticality (the fields the record has; no time budget, which a trace does not carry).
 *
 * @param record - a record as {@link readTrace} yields it.
 * @example
 * ```ts
 * arrivalsOf({ startMs: 120, durationMs: 48, outcome: 'success', key: 'tenant-a' });
 * // { atMs: 120, key: 'tenant-a' }
 * ```
 */
export function arrivalsOf(record: TraceRecord): Arrival {
  const arrival: Arrival = { atMs: record.startMs };
  if (record.key !== undefined) arrival.key = record.key;
  if (record.cost !== undefined) arrival.cost = record.cost;
  if (record.criticality !== undefined) arrival.criticality = record.criticality;
  return arrival;
}
