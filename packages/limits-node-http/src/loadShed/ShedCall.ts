import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LimitExceededError, Outcome, Permit, PermitRequest, QueueTicket } from 'limits-core';
import { type Context, runInContext } from '../context/RequestContext.js';
import { classifyStatus, userOutcome } from '../shared/outcome.js';
import type { ResolvedShedOptions } from './options.js';
import { type ShedError, type ShedResponse, shedResponse, writeShed } from './shedResponse.js';

/**
 * Refusals a retry cannot fix: shed by importance (the same request ranks as low again, lower as a
 * retry), or unable to finish within its time budget (`deadline`, `expired`: a retry has less of it).
 */
const NOT_RETRIED: ReadonlySet<string> = new Set(['shed', 'deadline', 'expired']);

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
 * the work throws. It answers a refusal itself (`onShed`, or the default answer) and classifies the
 * finished response, from the `loadShed` options it carries. Subclasses say how the request
 * proceeds in each framework (`next()`, a handler, Fastify's `done`) and how its errors are reported.
 */
export abstract class ShedCall implements PermitRequest {
  permit: Permit | undefined = undefined;
  ticket: QueueTicket | undefined = undefined;
  /** The call of an outer `loadShed` on the same response, if any. */
  outer: ShedCall | undefined = undefined;
  /** The request's attempt number, from its headers (a refused retry is told not to retry). */
  attempt = 1;
  /** The request context the application runs in (none with `context: false`). */
  context: Context | undefined = undefined;

  constructor(
    readonly options: ResolvedShedOptions,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
  ) {}

  /** Lets the request go on to the application; may throw (the application's error). */
  protected abstract start(): void;

  static #start(call: ShedCall): void {
    call.start();
  }

  /** Answers a refusal on the raw response: `onShed`, or the default answer. */
  protected refuse(error: ShedError): void {
    const { onShed, maxRetryAfterMs } = this.options;
    if (onShed !== undefined) onShed(this.req, this.res, error);
    else writeShed(this.res, error, maxRetryAfterMs);
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
    const res = this.res;
    if (res.destroyed) return;
    try {
      const doNotRetry = this.options.doNotRetryHeader;
      if (
        doNotRetry !== undefined &&
        error.reason !== 'quota' &&
        (NOT_RETRIED.has(error.reason) || this.attempt >= 2) &&
        !res.headersSent
      ) {
        res.setHeader(doNotRetry, '1');
      }
      this.refuse(error);
    } catch (thrown) {
      this.res.destroy();
      process.nextTick(rethrow, thrown);
    }
  }

  queued(ticket: QueueTicket): void {
    this.ticket = ticket;
  }

  /**
   * The response closed: release the permit (its outcome), or leave the queue at once. A response
   * that closed before it finished aborts the request context's signal.
   */
  closed(): void {
    const context = this.context;
    if (context !== undefined && !this.res.writableFinished) {
      context.abort(new DOMException('limits: the client disconnected', 'AbortError'));
    }
    const permit = this.permit;
    if (permit !== undefined) {
      this.permit = undefined;
      const res = this.res;
      permit.release(res.writableFinished ? responseOutcome(this.options.classify, res) : 'ignore');
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
      const context = this.context;
      if (context === undefined) this.start();
      else runInContext(context, ShedCall.#start, this);
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
    options: ResolvedShedOptions,
    req: IncomingMessage,
    res: ServerResponse,
    readonly next: (error?: unknown) => void,
  ) {
    super(options, req, res);
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
    options: ResolvedShedOptions,
    req: IncomingMessage,
    res: ServerResponse,
    readonly handler: (req: IncomingMessage, res: ServerResponse) => unknown,
  ) {
    super(options, req, res);
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

/** The part of a Fastify request `loadShed` uses (no dependency on fastify's types). */
export interface FastifyRequestLike {
  readonly raw: IncomingMessage;
  readonly routeOptions?: { readonly url?: string | undefined } | undefined;
}

/** The part of a Fastify reply `loadShed` uses. */
export interface FastifyReplyLike {
  readonly raw: ServerResponse;
  code(statusCode: number): unknown;
  headers(values: Record<string, string>): unknown;
  send(payload?: unknown): unknown;
  hijack(): unknown;
}

/** A Fastify request: proceeds with the `onRequest` hook's `done`; a refusal is sent on the reply. */
export class FastifyCall extends ShedCall {
  constructor(
    options: ResolvedShedOptions,
    readonly reply: FastifyReplyLike,
    req: IncomingMessage,
    readonly done: (error?: Error) => void,
  ) {
    super(options, req, reply.raw);
  }

  protected start(): void {
    this.done();
  }

  /** Fastify's error path: its error handler answers (500 unless the error says otherwise). */
  crashed(error: unknown): void {
    this.done(error instanceof Error ? error : new Error(String(error)));
  }

  protected refuse(error: ShedError): void {
    const { onShed, maxRetryAfterMs } = this.options;
    if (onShed !== undefined) {
      this.reply.hijack();
      onShed(this.req, this.res, error);
      return;
    }
    const shed: ShedResponse = shedResponse(error, maxRetryAfterMs);
    this.reply.code(shed.status);
    this.reply.headers(shed.headers);
    this.reply.send(shed.body);
  }
}
