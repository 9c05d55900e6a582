import type { LimitExceededError } from '../errors/LimitExceededError.js';
import type { Waiter } from '../queue/Waiter.js';
import type { Permit } from './Permit.js';

/**
 * @internal Where {@link Limiter._acquireFor} delivers a queued request's outcome instead of settling
 * a promise, for integrations (the breaker's guard) that already have a per-call object: the request
 * then costs the limiter no promise and the caller no closure.
 */
export interface AcquireSink {
  /** The request was granted `permit` (report its outcome on it, exactly once). */
  _granted(permit: Permit): void;
  /** The request was refused (queue full, expired, aborted, closed, ...). */
  _refused(error: LimitExceededError): void;
  /**
   * Optional: the request was queued as `waiter`. Passing it to `Limiter._abortWaiter` takes it out
   * of the queue (then `_refused` is called with reason `aborted`), with no AbortSignal per request.
   */
  _queued?(waiter: Waiter): void;
}
