import type { LimitExceededError } from '../errors/LimitExceededError.js';
import type { Permit } from '../permit/Permit.js';

/**
 * A request for a permit made through {@link Limiter.acquireWith}, for integrations that already have
 * an object per call (a circuit breaker's call record, an HTTP handler): the limiter tells that object
 * how the wait ended instead of settling a promise, so a queued request costs no promise and no
 * closure. Exactly one of `granted` and `refused` is called, once, and only for a request that
 * `acquireWith` did not answer at once.
 */
export interface PermitRequest {
  /**
   * The request waited and was granted `permit`. Report its outcome on the permit exactly once (the
   * limiter does not leak-track these permits: the integration owns them).
   */
  granted(permit: Permit): void;
  /**
   * The request was refused: at admission (queue full, deadline, closed, …, called before
   * `acquireWith` returns) or while queued (expired, aborted, cancelled, closed).
   */
  refused(error: LimitExceededError): void;
  /**
   * Optional: the request entered the queue; `ticket` takes it out again (see {@link QueueTicket}).
   * Called once, before `acquireWith` returns, and only when the request was queued.
   */
  queued?(ticket: QueueTicket): void;
}

/** A queued {@link PermitRequest}'s handle: cancels its wait without an AbortSignal per request. */
export interface QueueTicket {
  /**
   * Takes the request out of the queue and refuses it at once (`refused` with reason `aborted`, its
   * `cause` set to `cause`).
   * @returns `false` (and does nothing) when the request is no longer queued: granted or refused.
   */
  cancel(cause?: unknown): boolean;
}
