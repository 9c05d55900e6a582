/**
 * limits-lab: see what a limiter does before it runs in production — record a limiter's or a guard's
 * events into a timeline and draw it as an SVG chart.
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
export type { Arrival, CallOutcome, Downstream, DownstreamCall } from './traffic.js';
