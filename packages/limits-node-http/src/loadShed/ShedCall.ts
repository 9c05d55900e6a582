import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LimitExceededError, Outcome, Permit, PermitRequest, QueueTicket } from 'limits-core';
import { classifyStatus, releaseWith, userOutcome } from '../shared/outcome.js';
import type { ShedError } from './shedResponse.js';

/** @internal What a call asks of its {@link loadShed} instance. */
export interface ShedHost {
  /** Answers a refused request on a raw response (the default answer, or `onShed`). */
  shed(req: IncomingMessage, res: ServerResponse, error: ShedError): void;
  /** The user's answer to a refusal, if any. */
  readonly onShed:
    | ((req: IncomingMessage, res: ServerResponse, error: ShedError) => void)
    | undefined;
  /** The cap on `Retry-After`, in ms. */
  readonly maxRetryAfterMs: number;
  /** The outcome of a finished response. */
  outcome(res: ServerResponse): Outcome;
}

/**
 * The calls of a response, newest first (several when `loadShed` instances are stacked, e.g. a
 * global one and a route's): one shared `close` listener per response, no closure per request.
 */
const CALL = Symbol('limits.loadShed.call');
type Tagged = ServerResponse & { [CALL]?: ShedCall };

/**
 * The response's `close` listener, shared by every request: `close` comes after `finish` for a
 * response that was sent, and alone when the client disconnected first (or while queued).
 */
function onClose(this: Tagged): void {
  for (let call = this[CALL]; call !== undefined; call = call.outer) call.closed();
}

function rethrow(error: unknown): never {
  throw error;
}

/**
 * One admitted (or waiting) request: the {@link PermitRequest} given to the limiter, and the one
 * place its permit is released, exactly once, when the response closes (finished or not) or when
 * the work throws. Subclasses say how the request proceeds (`next()`, a handler, Fastify's `done`)
 * and how a refusal is answered.
 * @internal
 */
export abstract class ShedCall implements PermitRequest {
  permit: Permit | undefined = undefined;
  ticket: QueueTicket | undefined = undefined;
  /** The call of an outer `loadShed` on the same response, if any. */
  outer: ShedCall | undefined = undefined;

  constructor(
    readonly host: ShedHost,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
  ) {}

  /** Lets the request go on to the application; may throw (the application's error). */
  protected abstract start(): void;

  /** Answers a refusal. */
  protected refuse(error: ShedError): void {
    this.host.shed(this.req, this.res, error);
  }

  /**
   * Admission failed on an error that is not a refusal (the quota's `consume` rejected): the
   * framework's error path. Called off the caller's stack (after the quota's promise settled).
   */
  abstract crashed(error: unknown): void;

  /**
   * Admitted at once (`acquireWith` returned `permit`) or queued (`queued` was called): follow the
   * response's end. `permit` given means start now: in the caller's stack (a throw is the caller's),
   * or, `deferred` (after the quota's answer), with a throw rethrown on the next tick.
   */
  admitted(permit: Permit | undefined, deferred: boolean): void {
    const res = this.res as Tagged;
    this.outer = res[CALL];
    res[CALL] = this;
    if (this.outer === undefined) res.on('close', onClose);
    if (permit !== undefined) {
      this.permit = permit;
      this.startGuarded(deferred);
    }
  }

  granted(permit: Permit): void {
    this.ticket = undefined;
    if (this.res.destroyed) {
      permit.ignore();
      return;
    }
    this.permit = permit;
    this.startGuarded(true);
  }

  refused(error: LimitExceededError): void {
    this.ticket = undefined;
    // `aborted` is our own cancel: the client is gone, nobody to answer.
    if (error.reason === 'aborted') return;
    this.answer(error);
  }

  /**
   * Answers a refusal (the limiter's or the quota's) unless the client is gone. Never throws: it is
   * called from inside the limiter or a promise callback; a throwing `onShed` closes the connection
   * and is reported as an uncaught error.
   */
  answer(error: ShedError): void {
    if (this.res.destroyed) return;
    try {
      this.refuse(error);
    } catch (thrown) {
      this.res.destroy();
      process.nextTick(rethrow, thrown);
    }
  }

  queued(ticket: QueueTicket): void {
    this.ticket = ticket;
  }

  /** The response closed: release the permit (its outcome), or leave the queue at once. */
  closed(): void {
    const permit = this.permit;
    if (permit !== undefined) {
      this.permit = undefined;
      releaseWith(permit, this.res.writableFinished ? this.host.outcome(this.res) : 'ignore');
      return;
    }
    const ticket = this.ticket;
    if (ticket !== undefined) {
      this.ticket = undefined;
      ticket.cancel();
    }
  }

  /** The application's work threw or rejected: its permit comes back as `failure`. */
  protected failed(): void {
    const permit = this.permit;
    if (permit === undefined) return;
    this.permit = undefined;
    permit.failure();
  }

  /**
   * Starts the request. Inside the limiter (a queued request granted during someone else's release)
   * a throw must not reach the limiter: it releases the permit and is rethrown on the next tick,
   * where it is an uncaught error as it would be without load shedding.
   */
  private startGuarded(fromLimiter: boolean): void {
    try {
      this.start();
    } catch (error) {
      this.failed();
      if (!fromLimiter) throw error;
      process.nextTick(rethrow, error);
    }
  }
}

/**
 * `loadShed`'s classification of a response that finished: the `classify` option's answer when it
 * gives one, else the shared status rules (`classifyStatus`).
 */
export function responseOutcome(
  classify: ((res: ServerResponse) => Outcome | undefined) | undefined,
  res: ServerResponse,
): Outcome {
  return userOutcome(classify, res) ?? classifyStatus(res.statusCode);
}

/** A connect/Express middleware call: proceeds with `next()`. */
export class MiddlewareCall extends ShedCall {
  constructor(
    host: ShedHost,
    req: IncomingMessage,
    res: ServerResponse,
    readonly next: (error?: unknown) => void,
  ) {
    super(host, req, res);
  }

  protected start(): void {
    this.next();
  }

  crashed(error: unknown): void {
    this.next(error);
  }
}

/** A bare node:http request: proceeds by calling the wrapped handler. */
export class HandlerCall extends ShedCall {
  constructor(
    host: ShedHost,
    req: IncomingMessage,
    res: ServerResponse,
    readonly handler: (req: IncomingMessage, res: ServerResponse) => unknown,
  ) {
    super(host, req, res);
  }

  /** No error path in node:http: a 500 (if nothing was sent), and the error uncaught on the next tick. */
  crashed(error: unknown): void {
    const res = this.res;
    if (!res.headersSent && !res.destroyed) {
      res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
      res.end('{"error":"internal"}');
    }
    process.nextTick(rethrow, error);
  }

  protected start(): void {
    const result = this.handler(this.req, this.res);
    if (
      result !== null &&
      typeof result === 'object' &&
      typeof (result as PromiseLike<unknown>).then === 'function'
    ) {
      // A rejection stays unhandled, as it would be without load shedding; the permit comes back.
      (result as PromiseLike<unknown>).then(undefined, (error: unknown) => {
        this.failed();
        throw error;
      });
    }
  }
}
