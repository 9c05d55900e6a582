// limits-redis: fleet-wide limits on Redis (see README.md).

export { BudgetedLimiter, BudgetedPermit, type LeaseSource } from './budget/BudgetedLimiter.js';
export { type BudgetOperation, RedisUnavailableError } from './budget/errors.js';
export type {
  BudgetAcquireEvent,
  BudgetEvents,
  BudgetLeakEvent,
  BudgetLeaseLostEvent,
  BudgetRedisFailureEvent,
  BudgetRedisRecoveredEvent,
  BudgetRejectEvent,
  BudgetReleaseEvent,
} from './budget/events.js';
export { Lease } from './budget/Lease.js';
export type {
  BudgetAcquireOptions,
  FailurePolicy,
  RedisConcurrencyBudgetOptions,
} from './budget/options.js';
export type { RedisClient, RedisSubscriber } from './budget/RedisClient.js';
export { type BudgetStatus, RedisConcurrencyBudget } from './budget/RedisConcurrencyBudget.js';
export type { ScriptClient } from './luaScript.js';
export {
  RedisQuotaStore,
  type RedisQuotaStoreOptions,
  type RedisScriptClient,
} from './quota/RedisQuotaStore.js';
