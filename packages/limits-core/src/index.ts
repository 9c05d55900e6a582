export { AimdLimit, type AimdLimitOptions } from './algorithms/AimdLimit.js';
export { FixedLimit } from './algorithms/FixedLimit.js';
export { GradientLimit, type GradientLimitOptions } from './algorithms/GradientLimit.js';
export type {
  LimitAlgorithm,
  LimitDecision,
  LimitReason,
  Sample,
} from './algorithms/LimitAlgorithm.js';
export type { NoLoadRttOptions } from './algorithms/noLoadRttOptions.js';
export { VegasLimit, type VegasLimitOptions } from './algorithms/VegasLimit.js';
export { WindowedLimit, type WindowedLimitOptions } from './algorithms/WindowedLimit.js';
export {
  type LimitExceededDetails,
  LimitExceededError,
  REJECT_REASONS,
  type RejectReason,
} from './errors/LimitExceededError.js';
export { isLimitsError, LimitsError } from './errors/LimitsError.js';
export { CostEstimator, type CostEstimatorOptions } from './fairness/CostEstimator.js';
export type { FairnessOptions } from './fairness/DeficitRoundRobin.js';
export { type Clock, systemClock } from './internal/clock.js';
export { type Random, seededRandom } from './internal/random.js';
export type {
  AcquireEvent,
  ExpireEvent,
  LeakEvent,
  LimitEvent,
  LimiterEvents,
  QueueEvent,
  RejectEvent,
  ReleaseEvent,
} from './limiter/events.js';
export { Limiter } from './limiter/Limiter.js';
export type {
  AcquireOptions,
  CloseOptions,
  CloseResult,
  CodelOptions,
  LimiterOptions,
  LimiterSnapshot,
  QueueOrder,
} from './limiter/options.js';
export type { PermitRequest, QueueTicket } from './limiter/PermitRequest.js';
export {
  type Ledger,
  PartitionedLimiter,
  type PartitionedLimiterOptions,
  type PartitionLedger,
  type PartitionOptions,
} from './partition/PartitionedLimiter.js';
export { type Classify, defaultClassify, OUTCOMES, type Outcome } from './permit/outcome.js';
export { Permit } from './permit/Permit.js';
export type { PriorityOptions } from './queue/PriorityAging.js';
export {
  MemoryQuotaStore,
  type MemoryQuotaStoreOptions,
  QuotaStoreFullError,
} from './quota/MemoryQuotaStore.js';
export {
  Quota,
  type QuotaAlertEvent,
  type QuotaAxis,
  type QuotaEvents,
  type QuotaFailureEvent,
  type QuotaOptions,
  type QuotaRefuseEvent,
  type QuotaResult,
} from './quota/Quota.js';
export { QuotaExceededError } from './quota/QuotaExceededError.js';
export {
  MAX_QUOTA_KEY_LENGTH,
  type QuotaStore,
  type QuotaStoreAxis,
  type QuotaStoreFailure,
  type QuotaStoreRequest,
  type QuotaStoreVerdict,
} from './quota/QuotaStore.js';
export type { BudgetExhaustedEvent, RetryEvent, RetryEvents } from './retry/events.js';
export { isRefusal } from './retry/isRefusal.js';
export type {
  AttemptResult,
  RetryOptions,
  RetryRunOptions,
  RetryStats,
} from './retry/options.js';
export { RetryBudget, type RetryBudgetOptions } from './retry/RetryBudget.js';
export { RetryPolicy } from './retry/RetryPolicy.js';
export {
  CRITICALITIES,
  type Criticality,
  DEFAULT_CRITICALITY,
  parseCriticality,
} from './shedding/criticality.js';
export type { SheddingOptions, ShedThreshold } from './shedding/options.js';
