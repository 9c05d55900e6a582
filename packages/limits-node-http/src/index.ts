// limits-node-http: HTTP integrations for limits-core (see README.md).
export { classifyError, classifyStatus, type HttpOutcome } from './classify.js';
export { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retryAfter.js';
