// limits-node-http: HTTP integrations for limits-core (see README.md).
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
  defaultRttBuckets,
  type MetricsHandle,
  type MetricsOptions,
  registerMetrics,
} from './metrics.js';
export type { PromClient, PromRegistry } from './metricsPromClient.js';
export type { GuardSource, LimitsSource } from './metricsSource.js';
