import type { LimitExceededError } from '../errors/LimitExceededError.js';
import { type GrantHost, Waiter, WaiterExtras, type WaiterOwner } from '../queue/Waiter.js';
import type { AcquireSink } from './AcquireSink.js';
import type { AcquireOptions } from './options.js';
import type { PermitOwner } from './Permit.js';

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
 * @internal A queued `Limiter._acquireFor` request: the outcome goes to the integration's sink
 * (`_granted(permit)` or `_refused(error)`), which already has a per-call object: no promise.
 */
export class SinkWaiter extends Waiter {
  readonly sink: AcquireSink;

  constructor(
    owner: WaiterOwner & PermitOwner,
    cost: number,
    enqueuedAt: number,
    sink: AcquireSink,
    extras: WaiterExtras | undefined,
  ) {
    super(owner, cost, enqueuedAt, extras);
    this.sink = sink;
  }

  _granted(): void {
    this.sink._granted(this);
  }

  _refused(error: LimitExceededError): void {
    this.sink._refused(error);
  }
}

/**
 * @internal What a queued request carries beyond its cost and arrival time ({@link WaiterExtras}), or
 * `undefined` for a plain one (no bytes, deadline, signal, selector or `run` options): most requests.
 */
export function waiterExtras(
  bytes: number,
  deadline: number,
  options: AcquireOptions | undefined,
  run: boolean,
  selective: boolean,
): WaiterExtras | undefined {
  const signal = options?.signal;
  if (
    bytes === 0 &&
    deadline === Infinity &&
    signal === undefined &&
    !selective &&
    !(run && options !== undefined)
  ) {
    return undefined;
  }
  const extras = new WaiterExtras();
  extras.bytes = bytes;
  extras.deadline = deadline;
  extras.signal = signal;
  if (run) extras.options = options;
  return extras;
}
