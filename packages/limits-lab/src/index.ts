/**
 * limits-lab: see what a limiter does before it runs in production — record a limiter's or a guard's
 * events into a timeline and draw it as an SVG chart; read a recorded trace and fit the downstream
 * it met.
 */
export {
  renderTimelineSvg,
  type TimelineSeries,
  type TimelineSvgOptions,
} from './renderTimelineSvg.js';
export {
  type Timeline,
  type TimelineEmitter,
  type TimelineMark,
  type TimelinePoint,
  TimelineRecorder,
  type TimelineRecorderOptions,
  type TimelineSource,
  type TimelineState,
} from './TimelineRecorder.js';
export {
  arrivalsOf,
  type DownstreamFit,
  type FittedTrace,
  fitDownstream,
  type LatencySpike,
  type ReadTraceOptions,
  readTrace,
  type TraceFormat,
  type TraceOutcome,
  type TraceRecord,
} from './trace/index.js';
export type { Arrival, CallOutcome, Downstream, DownstreamCall } from './traffic.js';
