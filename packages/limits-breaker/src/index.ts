export { CallContext } from './CallContext.js';
export { CallTimeoutError, CircuitOpenError } from './errors.js';
export { Guard, guard } from './guard.js';
export type { LatencySummary } from './LatencyWindow.js';
export type {
  OpossumBreaker,
  OpossumConstructor,
  OpossumOptions,
  OpossumStats,
} from './opossum.js';
export type {
  CircuitState,
  FallbackCause,
  FallbackReason,
  GuardClassify,
  GuardEvents,
  GuardedAction,
  GuardOptions,
  GuardOutcome,
  GuardStats,
} from './types.js';
