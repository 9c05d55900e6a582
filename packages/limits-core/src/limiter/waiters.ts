import type { LimitExceededError } from '../errors/LimitExceededError.js';
import type { PermitOwner } from '../permit/Permit.js';
import { type GrantHost, Waiter, type WaiterExtras, type WaiterOwner } from '../queue/Waiter.js';
import type { PermitRequest } from './PermitRequest.js';

/**
 * @internal A queued `acquire()`: resolves the caller's promise with itself (the permit) when granted;
 * a refusal resolves it with a rejected promise (it keeps only the resolve function).
 */
export class AcquireWaiter extends Waiter {
  /** The caller promise's resolve function (called with the permit, or a rejection). */
  declare readonly resolve: (value: unknown) => void;

  constructor(
    owner: WaiterOwner & PermitOwner,
    cost: number,
    enqueuedAt: number,
    resolve: (value: unknown) => void,
    extras: WaiterExtras | undefined,
  ) {
    super(owner, cost, enqueuedAt, extras);
    this.resolve = resolve;
  }

  _granted(host: GrantHost): void {
    host.track(this);
    this.resolve(this);
  }

  _refused(error: LimitExceededError): void {
    this.resolve(Promise.reject(error));
  }
}

/**
 * @internal A queued `run()`: carries its task and starts it when granted (one promise and no
 * closure per queued call); the task's result settles the caller's promise.
 */
export class RunWaiter extends Waiter {
  /**
   * The caller promise's resolve function (a refusal resolves it with a rejected promise). Only this
   * one is kept: keeping the reject function too made each of 100,000 queued runs 60 bytes bigger
   * and doubled the scavenger's time with 10,000 queued.
   */
  declare readonly resolve: (value: unknown) => void;
  /** The task to start under the permit once granted. */
  declare readonly task: (signal: AbortSignal) => unknown;

  constructor(
    owner: WaiterOwner & PermitOwner,
    cost: number,
    enqueuedAt: number,
    resolve: (value: unknown) => void,
    extras: WaiterExtras | undefined,
    task: (signal: AbortSignal) => unknown,
  ) {
    super(owner, cost, enqueuedAt, extras);
    this.resolve = resolve;
    this.task = task;
  }

  _granted(host: GrantHost, now: number): void {
    host.startQueued(this, this.task, this.resolve, now);
  }

  _refused(error: LimitExceededError): void {
    this.resolve(Promise.reject(error));
  }
}

/**
 * @internal A queued `Limiter.acquireWith` request: the outcome goes to the integration's
 * {@link PermitRequest} (`granted(permit)` or `refused(error)`), a per-call object it already has: no
 * promise.
 */
export class RequestWaiter extends Waiter {
  declare readonly request: PermitRequest;

  constructor(
    owner: WaiterOwner & PermitOwner,
    cost: number,
    enqueuedAt: number,
    request: PermitRequest,
    extras: WaiterExtras | undefined,
  ) {
    super(owner, cost, enqueuedAt, extras);
    this.request = request;
  }

  _granted(): void {
    this.request.granted(this);
  }

  _refused(error: LimitExceededError): void {
    this.request.refused(error);
  }
}
