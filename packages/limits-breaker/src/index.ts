export { CallContext } from './CallContext.js';
export { CallTimeoutError, CircuitOpenError } from './errors.js';
export {
  type CircuitState,
  type FallbackCause,
  type FallbackReason,
  Guard,
  type GuardClassify,
  type GuardEvents,
  type GuardedAction,
  type GuardOptions,
  type GuardOutcome,
  type GuardStats,
  guard,
} from './guard.js';
export type { LatencySummary } from './LatencyWindow.js';
export type {
  OpossumBreaker,
  OpossumConstructor,
  OpossumOptions,
  OpossumStats,
} from './opossum.js';
