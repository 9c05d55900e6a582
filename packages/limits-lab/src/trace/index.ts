/** Recorded traces: reading them, the arrivals they stand for, and the downstream fitted to them. */
export type { DownstreamFit, LatencySpike } from './DownstreamFit.js';
export { type FittedTrace, fitDownstream } from './fitDownstream.js';
export { type ReadTraceOptions, readTrace, type TraceFormat } from './readTrace.js';
export { arrivalsOf, type TraceOutcome, type TraceRecord } from './TraceRecord.js';
