// limits-redis: fleet-wide limits on Redis (see README.md).
export {
  RedisQuotaStore,
  type RedisQuotaStoreOptions,
  type RedisScriptClient,
} from './quota/RedisQuotaStore.js';
