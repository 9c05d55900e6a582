export {
  type GrpcAction,
  type GrpcAttempt,
  type GrpcCallContext,
  type GrpcCallOutcome,
  type GrpcGuard,
  type GrpcGuardOptions,
  type GuardFunction,
  grpcGuard,
} from './client/grpcGuard.js';
export { limitGrpcClient } from './client/limitGrpcClient.js';
export type { LimitGrpcClientOptions } from './client/options.js';
export { loadShedGrpc } from './server/loadShedGrpc.js';
export type { LoadShedGrpcOptions, PartialStatusObject } from './server/options.js';
export { classifyStatus, RETRY_PUSHBACK_KEY, refusalStatus } from './shared/status.js';
