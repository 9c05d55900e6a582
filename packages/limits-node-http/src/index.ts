// limits-node-http: HTTP integrations for limits-core (see README.md).
export { classifyError, classifyStatus, type HttpOutcome } from './classify.js';
export { limitInterceptor } from './interceptor.js';
export type {
  InterceptedCall,
  InterceptedRequest,
  LimiterSource,
  LimitInterceptorOptions,
  RetryAfterEvent,
} from './interceptorOptions.js';
export type { DispatchInterceptor, InterceptorHeaders } from './interceptorTypes.js';
export { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retryAfter.js';
