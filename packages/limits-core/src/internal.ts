/**
 * `limits-core/internal`: what limits' own integration packages (limits-breaker, limits-node-http,
 * limits-redis) share with limits-core and users should not build on — the option checks with
 * limits' one message shape, and the acquire options' check. Unstable: it changes with the packages
 * that use it, without notice in the CHANGELOG.
 */
export { checkClock } from './internal/checkClock.js';
export {
  checkBoolean,
  checkFunction,
  checkKeys,
  checkNumber,
  checkObject,
  checkOneOf,
  checkSignal,
  checkString,
  formatValue,
  type NumberRange,
} from './internal/validate.js';
export {
  type AcquireOptionNames,
  acquireOptionNames,
  checkAcquire as checkAcquireOptions,
} from './limiter/checks.js';
