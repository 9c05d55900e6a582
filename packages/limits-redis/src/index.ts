// limits-redis: fleet-wide limits on Redis (see README.md).

export { type LeasePoolOperation, RedisUnavailableError } from './leases/errors.js';
export type {
  LeaseAcquireEvent,
  LeaseLeakEvent,
  LeaseLostEvent,
  LeasePoolEvents,
  LeaseRejectEvent,
  LeaseReleaseEvent,
  RedisFailureEvent,
  RedisRecoveredEvent,
} from './leases/events.js';
export { Lease } from './leases/Lease.js';
export { LeasedLimiter, LeasedPermit, type LeaseSource } from './leases/LeasedLimiter.js';
export type {
  FailurePolicy,
  LeaseAcquireOptions,
  RedisLeasePoolOptions,
} from './leases/options.js';
export type { RedisClient, RedisSubscriber } from './leases/RedisClient.js';
export { type LeasePoolStatus, RedisLeasePool } from './leases/RedisLeasePool.js';
export type { ScriptClient } from './luaScript.js';
export {
  RedisQuotaStore,
  type RedisQuotaStoreOptions,
  type RedisScriptClient,
} from './quota/RedisQuotaStore.js';
