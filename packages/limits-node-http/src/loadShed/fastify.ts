import type { IncomingMessage, ServerResponse } from 'node:http';
import { ShedCall, type ShedHost } from './ShedCall.js';
import { type ShedError, type ShedResponse, shedResponse } from './shedResponse.js';

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

/** The part of a Fastify instance `loadShed` uses. */
export interface FastifyInstanceLike {
  addHook(
    name: 'onRequest',
    hook: (
      request: FastifyRequestLike,
      reply: FastifyReplyLike,
      done: (error?: Error) => void,
    ) => void,
  ): unknown;
}

/**
 * A Fastify 5 plugin (`fastify.register(shed.fastify)`). It carries fastify-plugin's markers
 * (`Symbol.for('skip-override')` and a display name), so its `onRequest` hook applies to every route
 * of the instance it is registered on, and of that instance's children, whatever their
 * encapsulation.
 */
export type LoadShedPlugin = (
  instance: FastifyInstanceLike,
  options: Record<string, unknown>,
  done: (error?: Error) => void,
) => void;

/** @internal How the plugin's hook admits a request. */
export interface FastifyAdmission {
  admitFastify(
    request: FastifyRequestLike,
    reply: FastifyReplyLike,
    done: (error?: Error) => void,
  ): void;
}

/** A Fastify request: proceeds with the `onRequest` hook's `done`; a refusal is sent on the reply. */
export class FastifyCall extends ShedCall {
  constructor(
    host: ShedHost,
    readonly reply: FastifyReplyLike,
    req: IncomingMessage,
    readonly done: (error?: Error) => void,
  ) {
    super(host, req, reply.raw);
  }

  protected start(): void {
    this.done();
  }

  /** Fastify's error path: its error handler answers (500 unless the error says otherwise). */
  crashed(error: unknown): void {
    this.done(error instanceof Error ? error : new Error(String(error)));
  }

  protected refuse(error: ShedError): void {
    const onShed = this.host.onShed;
    if (onShed !== undefined) {
      this.reply.hijack();
      onShed(this.req, this.res, error);
      return;
    }
    const shed: ShedResponse = shedResponse(error, this.host.maxRetryAfterMs);
    this.reply.code(shed.status);
    this.reply.headers(shed.headers);
    this.reply.send(shed.body);
  }
}

/** @internal Builds the plugin over an admission. */
export function fastifyPlugin(admission: FastifyAdmission): LoadShedPlugin {
  const hook = (
    request: FastifyRequestLike,
    reply: FastifyReplyLike,
    done: (error?: Error) => void,
  ): void => {
    admission.admitFastify(request, reply, done);
  };
  const plugin: LoadShedPlugin = function limitsLoadShed(instance, _options, done) {
    instance.addHook('onRequest', hook);
    done();
  };
  const marked = plugin as LoadShedPlugin & Record<symbol, unknown>;
  marked[Symbol.for('skip-override')] = true;
  marked[Symbol.for('fastify.display-name')] = 'limits-node-http:loadShed';
  marked[Symbol.for('plugin-meta')] = { name: 'limits-node-http:loadShed', fastify: '>=4' };
  return plugin;
}
