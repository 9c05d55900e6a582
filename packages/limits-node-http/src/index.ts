// limits-node-http: HTTP integrations for limits-core (see README.md).

export { classifyError, classifyStatus, type HttpOutcome } from './classify.js';
export {
  type AdmitMessage,
  type DiagnosticsHandle,
  type DiagnosticsMessage,
  diagnosticsChannels,
  type LimitMessage,
  publishDiagnostics,
  type RejectMessage,
  type ReleaseMessage,
} from './diagnostics.js';
export {
  type FetchAction,
  type FetchCallContext,
  type FetchGuardOptions,
  fetchGuard,
  type GuardFunction,
  type LimitFetchGuard,
} from './fetchGuard.js';
export { limitInterceptor } from './interceptor.js';
export type { InterceptorFallbackResponse } from './interceptorFallback.js';
export type {
  InterceptedCall,
  InterceptedRequest,
  LimiterSource,
  LimitInterceptorOptions,
  RetryAfterEvent,
} from './interceptorOptions.js';
export type { DispatchInterceptor, InterceptorHeaders } from './interceptorTypes.js';
export { type FetchFunction, limitFetch, retryAfterMs } from './limitFetch.js';
export type {
  LimitFetchOptions,
  LimitFetchRequest,
  LimitFetchResult,
} from './limitFetchOptions.js';
export { type LoadShed, loadShed } from './loadShed.js';
export type {
  FastifyInstanceLike,
  FastifyReplyLike,
  FastifyRequestLike,
  LoadShedPlugin,
} from './loadShedFastify.js';
export type { LoadShedOptions } from './loadShedOptions.js';
export { type ShedError, type ShedResponse, shedResponse } from './loadShedResponse.js';
export {
  defaultRttBuckets,
  type MetricsHandle,
  type MetricsOptions,
  registerMetrics,
} from './metrics.js';
export type { PromClient, PromRegistry } from './metricsPromClient.js';
export type { GuardSource, LimitsSource } from './metricsSource.js';
export { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retryAfter.js';
