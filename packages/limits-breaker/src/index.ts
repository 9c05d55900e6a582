export { CallContext, type PermitHold } from './CallContext.js';
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
  BreakerStats,
  CircuitState,
  FallbackCause,
  FallbackReason,
  GuardEvents,
  GuardedAction,
  GuardOptions,
  GuardStats,
} from './types.js';
