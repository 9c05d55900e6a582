import type { Arrival, Downstream } from '../traffic.js';

/** One call of a recorded trace (the trace reader defines its fields). */
export type TraceRecord = Record<string, unknown>;

/** Reads a recorded trace (JSON lines, CSV or HAR) as a stream of records. */
export function readTrace(
  _path: string,
  _options?: { format?: 'jsonl' | 'csv' | 'har' },
): AsyncIterable<TraceRecord> {
  throw new Error('trace reading is in the lab-trace branch');
}

/** Fits a modelled downstream to a trace's records; `report` says how well it fits. */
export function fitDownstream(_records: Iterable<TraceRecord>): {
  downstream: Downstream;
  report: string;
} {
  throw new Error('trace reading is in the lab-trace branch');
}

/** The arrival a trace record stands for. */
export function arrivalsOf(_record: TraceRecord): Arrival {
  throw new Error('trace reading is in the lab-trace branch');
}
