// limits-node-http: HTTP integrations for limits-core (see README.md).
//
// The source, one folder per entry point (ARCHITECTURE.md at the repository's root draws it, and
// `npm test` keeps it true):
//   context/      the request context (AsyncLocalStorage), the headers it is read from at the door
//                 (loadShed) and carried in to the next service (limitFetch, limitInterceptor)
//   fetch/        limitFetch, and what only it uses (a response body's hold on its permit, the time limit)
//   interceptor/  limitInterceptor for undici (one request's handler, its caller, retries, fallbacks)
//   loadShed/     loadShed for node:http, Express and Fastify (admission, a request's call, answers)
//   metrics/      one metric scheme, registerMetrics (Prometheus), registerOtelMetrics
//                 (OpenTelemetry) and the `limits:` diagnostics channels, for any limiter,
//                 partitioned limiter, guard or loadShed
//   shared/       what several entry points use: the outcome rules, Retry-After, the retry rules,
//                 the guard of an HTTP call (fetchGuard)
// Imports go one way: an entry point's folder uses context/, shared/ and metrics/, never another
// entry point's; context/ uses shared/ only; metrics/ and shared/ use no other folder.

export {
  MAX_ATTEMPT,
  parseAttemptHeader,
  parseGrpcTimeout,
  parsePreviousAttempts,
  parseTimeoutHeader,
} from './context/inboundHeaders.js';
export type { PropagateOption, PropagateOptions } from './context/Propagation.js';
export {
  currentContext,
  type RequestContext,
  type RequestContextInit,
  runWithContext,
} from './context/RequestContext.js';

export { type FetchFunction, limitFetch, retryAfterMs } from './fetch/limitFetch.js';
export type {
  LimitFetchInit,
  LimitFetchOptions,
  LimitFetchRequest,
  LimitFetchResult,
} from './fetch/options.js';
export type { DispatchInterceptor, InterceptorHeaders } from './interceptor/dispatcher.js';
export type { InterceptorFallbackResponse } from './interceptor/FallbackReply.js';
export { limitInterceptor } from './interceptor/limitInterceptor.js';
export type {
  InterceptedCall,
  InterceptedRequest,
  LimiterSource,
  LimitInterceptorOptions,
  RetryAfterEvent,
} from './interceptor/options.js';
export type { ExemptOption } from './loadShed/exempt.js';
export {
  type FastifyInstanceLike,
  type LoadShed,
  type LoadShedPlugin,
  loadShed,
} from './loadShed/loadShed.js';
export type { LoadShedOptions } from './loadShed/options.js';
export type { FastifyReplyLike, FastifyRequestLike } from './loadShed/ShedCall.js';
export { type ShedError, type ShedResponse, shedResponse } from './loadShed/shedResponse.js';
export {
  type AdmitMessage,
  type DiagnosticsHandle,
  type DiagnosticsMessage,
  diagnosticsChannels,
  type LimitMessage,
  publishDiagnostics,
  type RejectMessage,
  type ReleaseMessage,
} from './metrics/diagnostics.js';
export type { SourceMetricsOptions } from './metrics/options.js';
export type {
  OtelAttributes,
  OtelBatchCallback,
  OtelBatchObservableResult,
  OtelCounter,
  OtelHistogram,
  OtelMeter,
  OtelMetricOptions,
  OtelObservable,
} from './metrics/otelMeter.js';
export type { PromClient, PromRegistry } from './metrics/promClient.js';
export {
  type MetricsHandle,
  type MetricsOptions,
  registerMetrics,
} from './metrics/registerMetrics.js';
export { type OtelMetricsOptions, registerOtelMetrics } from './metrics/registerOtelMetrics.js';
export {
  BREAKER_STATES,
  defaultSecondsBuckets,
  FALLBACK_REASONS,
  METRICS,
  type MetricGroup,
  type MetricKey,
  type MetricKind,
  type MetricSpec,
} from './metrics/scheme.js';
export type {
  GuardSource,
  LimitsSource,
  LoadShedSource,
  QuotaSource,
  RetryBudgetSource,
  RetryPolicySource,
} from './metrics/source.js';
export {
  type FetchAction,
  type FetchCallContext,
  type FetchGuardOptions,
  fetchGuard,
  type GuardFunction,
  type LimitFetchGuard,
} from './shared/httpGuard.js';
export { classifyError, classifyStatus, type HttpOutcome } from './shared/outcome.js';
export { DO_NOT_RETRY_HEADER } from './shared/retry.js';
export { MAX_RETRY_AFTER_MS, parseRetryAfter } from './shared/retryAfter.js';
