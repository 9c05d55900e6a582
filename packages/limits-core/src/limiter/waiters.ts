import type { LimitExceededError } from '../errors/LimitExceededError.js';
import type { PermitOwner } from '../permit/Permit.js';
import { type GrantHost, Waiter, type WaiterExtras, type WaiterOwner } from '../queue/Waiter.js';
import type { PermitRequest } from './PermitRequest.js';

/**
 * @internal A queued `acquire()` (no task) or `run()` (with its task): settles the caller's promise.
 * It keeps only the promise's resolve function (a refusal resolves it with a rejected promise). A
 * queued run carries its task here and starts it when granted: one promise and no closure per call.
 */
export class PromiseWaiter extends Waiter {
  /** The caller promise's resolve function (called with the permit, the task's result, or a rejection). */
  readonly resolve: (value: unknown) => void;
  /** For `run`: the task to start under the permit once granted. */
  readonly task: ((signal: AbortSignal) => unknown) | undefined;

  constructor(
    owner: WaiterOwner & PermitOwner,
    cost: number,
    enqueuedAt: number,
    resolve: (value: unknown) => void,
    extras: WaiterExtras | undefined,
    task: ((signal: AbortSignal) => unknown) | undefined,
  ) {
    super(owner, cost, enqueuedAt, extras);
    this.resolve = resolve;
    this.task = task;
  }

  _granted(host: GrantHost, now: number): void {
    if (this.task === undefined) {
      host.track(this);
      this.resolve(this);
    } else {
      host.startQueued(this, this.task, this.resolve, now);
    }
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
  readonly request: PermitRequest;

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
