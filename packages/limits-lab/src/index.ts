/**
 * limits-lab: see what a limiter does before it runs in production — a deterministic offline
 * simulator that runs limits-core limiters against a modelled or recorded downstream and compares
 * them (the `limits-lab` command, or `simulate` / `compare` / `tune`), and a recorder of a limiter's
 * or a guard's events drawn as an SVG chart.
 */

export type { LabConfig } from './configs/LabConfig.js';
export { loadConfig } from './configs/loadConfig.js';
export { LIMITER_KEYS, parseConfigSpec } from './configs/parseConfigSpec.js';
export { loadModel } from './model/loadModel.js';
export {
  type ArrivalPattern,
  type Model,
  type ModelDownstreamSpec,
  type ModelSpike,
  parseModel,
} from './model/Model.js';
export { ModelDownstream } from './model/ModelDownstream.js';
export { modelArrivals } from './model/modelArrivals.js';
export {
  renderTimelineSvg,
  type TimelineSeries,
  type TimelineSvgOptions,
} from './renderTimelineSvg.js';
export { formatTable } from './report/formatTable.js';
export type { RunInfo } from './report/RunInfo.js';
export { renderHtmlReport } from './report/renderHtmlReport.js';
export { reportJson } from './report/reportJson.js';
export { type CompareRun, compare, type SimConfig } from './sim/compare.js';
export type { Spike, SpikeRecovery } from './sim/GoodputBins.js';
export { LatencyHistogram } from './sim/LatencyHistogram.js';
export type { SimResult } from './sim/SimResult.js';
export {
  type CallRecord,
  type ClosedLoop,
  type LimiterEnv,
  type SimulateOptions,
  simulate,
} from './sim/simulate.js';
export { type SimEvent, VirtualClock } from './sim/VirtualClock.js';
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
export { formatTune } from './tune/formatTune.js';
export { type Constraint, type Metric, type Objective, parseObjective } from './tune/objective.js';
export { type TuneOptions, type TuneResult, type TuneTrial, tune } from './tune/tune.js';
