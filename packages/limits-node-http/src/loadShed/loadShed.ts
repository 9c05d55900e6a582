import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type AcquireOptions,
  CRITICALITIES,
  type Criticality,
  DEFAULT_CRITICALITY,
  type Limiter,
  type PartitionedLimiter,
  type Quota,
  QuotaExceededError,
  type QuotaResult,
} from 'limits-core';
import { formatValue } from 'limits-core/internal';
import type { InboundHeaders } from '../context/inboundHeaders.js';
import { Context } from '../context/RequestContext.js';
import { type DiagnosticsHandle, publishDiagnostics } from '../metrics/diagnostics.js';
import type { LimitsSource } from '../metrics/source.js';
import { type LoadShedOptions, type ResolvedShedOptions, resolveShedOptions } from './options.js';
import {
  FastifyCall,
  type FastifyReplyLike,
  type FastifyRequestLike,
  HandlerCall,
  MiddlewareCall,
  type ShedCall,
} from './ShedCall.js';

/**
 * Inbound load shedding: a connect/Express middleware, with a node:http wrapper (`wrap`) and a
 * Fastify plugin (`fastify`) over the same admission. See {@link loadShed}.
 */
export interface LoadShed {
  /**
   * The connect/Express middleware: admits the request (at once, or after waiting in the limiter's
   * queue) and calls `next()`, or answers the refusal (503, or the quota's status). `next` is
   * required: for a bare node:http server use {@link LoadShed.wrap}.
   * @throws TypeError when `next` is not a function.
   */
  (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void;
  /**
   * A node:http request listener that runs `handler` once the request is admitted, or answers the
   * refusal. A handler that throws or rejects gets its permit back as `failure`; the error is not
   * swallowed (it stays uncaught or unhandled, as without load shedding).
   */
  wrap<Req extends IncomingMessage = IncomingMessage, Res extends ServerResponse = ServerResponse>(
    handler: (req: Req, res: Res) => unknown,
  ): (req: Req, res: Res) => void;
  /** The Fastify 5 plugin: `fastify.register(shed.fastify)` (see {@link LoadShedPlugin}). */
  readonly fastify: LoadShedPlugin;
  /** The limiter (or PartitionedLimiter) requests take their permits from (option `limiter`). */
  readonly limiter: Limiter | PartitionedLimiter;
  /** The quota judged before the limiter (option `quota`), if any. */
  readonly quota: Quota<never> | undefined;
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
 * (`Symbol.for('skip-override')` and a display name), so its hooks apply to every route of the
 * instance it is registered on, and of that instance's children, whatever their encapsulation. Its
 * `onRequest` hook admits the request and lets the rest of it (the other hooks, the body's parsing,
 * the route) run inside the request context.
 */
export type LoadShedPlugin = (
  instance: FastifyInstanceLike,
  options: Record<string, unknown>,
  done: (error?: Error) => void,
) => void;

/**
 * Load shedding at the door of a server: each request takes a permit from `limiter` (waiting in its
 * bounded queue like any caller) before the application sees it, and gives it back exactly once,
 * when the response finishes or the client disconnects, whichever comes first. A request the
 * limiter refuses (queue full, time limit it cannot meet, waited too long, limiter closed) gets a 503
 * with `Retry-After` and `{"error":"overloaded","reason":"<reason>"}`, and never reaches the
 * application. A client that disconnects while queued leaves the queue at once.
 *
 * The outcome reported to the limiter measures the server's own latency: a finished response is
 * `success`, except 429/502/503/504 (`dropped`: the limit backs off) and other 5xx (`failure`: no
 * sample), unless `classify` says otherwise; a client that disconnected before the response
 * finished is `ignore`; a `wrap`ped handler that throws or rejects is `failure`.
 *
 * One instance serves every framework: call it as Express/connect middleware, `wrap(handler)` for
 * node:http, or register `fastify` on a Fastify instance. Permits are released on the response's
 * `close` event, which Node emits both after a response was sent and when the connection closed
 * first: work the application still does for a client that left no longer counts (and an
 * application that never ends a response holds its permit until the client gives up).
 *
 * Each request says what it is worth: its time limit (`x-request-timeout-ms`, gRPC's
 * `grpc-timeout`, Envoy's `x-envoy-expected-rq-timeout-ms`: the smallest), its criticality
 * (`criticality`, else `x-request-criticality`), its attempt number (`x-request-attempt`, gRPC's and
 * Envoy's attempt headers) and its cohort (`cohort`), all passed to the limiter (a limiter with
 * `shedding` refuses the least important first) and kept in the request context the application
 * runs in (`currentContext()`, carried on by `limitFetch` and `limitInterceptor`), whose signal
 * aborts when the client disconnects. A request refused as `shed`, `deadline` or `expired`, and
 * any refused retry, is told not to retry (`x-do-not-retry: 1`).
 *
 * With a `quota` (a limits-core `Quota`, e.g. a per-account axis and a global one on a
 * `RedisQuotaStore`), each request is first charged on it: a refusal is answered with the status of
 * the first full axis (429 for the account's own share before 503 for the global cap), the time to
 * the window's end as `Retry-After`, and `{"error":"quota","axis":"<axis>"}`, without the limiter
 * ever seeing the request; only a request the quota admits asks the limiter. The quota's charge
 * stands when the limiter then refuses (see {@link LoadShedOptions.quota}).
 *
 * Requests matching `exempt` (health checks, `/metrics`) skip all of this: no quota charge, no
 * permit, never refused.
 *
 * @param options - see {@link LoadShedOptions}.
 * @throws TypeError/RangeError for bad options, naming the option.
 * @example
 * ```ts
 * const shed = loadShed({ limiter: new Limiter({ algorithm: new VegasLimit(), maxQueued: 100 }) });
 * app.use(shed);                                  // Express / connect
 * http.createServer(shed.wrap(handler));          // node:http
 * await fastify.register(shed.fastify);           // Fastify 5
 * ```
 */
export function loadShed<Ctx = IncomingMessage>(options: LoadShedOptions<Ctx>): LoadShed {
  const o = resolveShedOptions(options);
  const admission = new Admission(o);
  const exempt = o.exempt;
  const middleware = function loadShed(
    req: IncomingMessage,
    res: ServerResponse,
    next: (error?: unknown) => void,
  ): void {
    if (typeof next !== 'function') {
      throw new TypeError(
        'limits: the loadShed middleware needs next(); for a node:http server use loadShed(options).wrap(handler)',
      );
    }
    if (exempt?.(req)) {
      next();
      return;
    }
    admission.admit(new MiddlewareCall(o, req, res, next), undefined);
  } as LoadShed;
  const wrap = <Req extends IncomingMessage, Res extends ServerResponse>(
    handler: (req: Req, res: Res) => unknown,
  ): ((req: Req, res: Res) => void) => {
    if (typeof handler !== 'function') {
      throw new TypeError(
        `limits: loadShed wrap() needs a handler function, got ${formatValue(handler)}`,
      );
    }
    const h = handler as (req: IncomingMessage, res: ServerResponse) => unknown;
    return function loadShedHandler(req: Req, res: Res): void {
      if (exempt?.(req)) {
        // As without load shedding: the handler's throw or rejection is its own.
        h(req, res);
        return;
      }
      admission.admit(new HandlerCall(o, req, res, h), undefined);
    };
  };
  const hook = (
    request: FastifyRequestLike,
    reply: FastifyReplyLike,
    done: (error?: Error) => void,
  ): void => {
    if (exempt?.(request.raw)) {
      done();
      return;
    }
    admission.admit(new FastifyCall(o, reply, request.raw, done), request.routeOptions?.url);
  };
  Object.defineProperty(middleware, 'wrap', { value: wrap, enumerable: true });
  Object.defineProperty(middleware, 'fastify', { value: fastifyPlugin(hook), enumerable: true });
  Object.defineProperty(middleware, 'limiter', {
    value: o.partitioned ?? o.limiter,
    enumerable: true,
  });
  Object.defineProperty(middleware, 'quota', { value: o.quota, enumerable: true });
  return middleware;
}

/** The plugin that adds `hook` to every request of the instance it is registered on. */
function fastifyPlugin(
  hook: (
    request: FastifyRequestLike,
    reply: FastifyReplyLike,
    done: (error?: Error) => void,
  ) => void,
): LoadShedPlugin {
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

/**
 * Admission at the door, whatever the framework: the request's quota first (if any), then a permit
 * from its limiter (the one limiter, or its partition's) with the time limit its header carries. The
 * request's {@link ShedCall} follows the response from then on.
 */
class Admission {
  readonly #single: Limiter | undefined;
  readonly #quota: Quota<unknown> | undefined;
  readonly #quotaContext: ResolvedShedOptions['quotaContext'];
  readonly #parts = new Map<string, Limiter>();
  readonly #fallback: Limiter | undefined;
  readonly #partition: ResolvedShedOptions['partition'];
  readonly #inbound: InboundHeaders;
  readonly #criticality: ResolvedShedOptions['criticality'];
  readonly #cohort: ResolvedShedOptions['cohort'];
  readonly #context: boolean;
  readonly #diagnostics: DiagnosticsHandle;

  constructor(o: ResolvedShedOptions) {
    this.#single = o.limiter;
    // Its limiters' events on the `limits:` diagnostics channels (listeners only while subscribed;
    // each request syncs them with the channels, see publishDiagnostics).
    this.#diagnostics = publishDiagnostics((o.partitioned ?? o.limiter) as LimitsSource);
    this.#quota = o.quota;
    this.#quotaContext = o.quotaContext;
    if (o.partitioned !== undefined) {
      for (const name of Object.keys(o.partitioned.ledger().partitions)) {
        this.#parts.set(name, o.partitioned.partition(name));
      }
      this.#fallback = this.#parts.get(o.fallbackPartition);
    }
    this.#partition = o.partition;
    this.#inbound = o.inbound;
    this.#criticality = o.criticality;
    this.#cohort = o.cohort;
    this.#context = o.context;
  }

  /**
   * Charges the request's quota (if any), then asks the request's limiter for a permit; the call
   * follows the response from then on.
   */
  admit(call: ShedCall, route: string | undefined): void {
    // A client already gone costs nothing: no charge, no permit, no answer.
    if (call.res.destroyed) return;
    const quota = this.#quota;
    if (quota !== undefined) {
      const context = this.#quotaContext;
      const ctx = context === undefined ? call.req : context(call.req);
      if (ctx !== undefined) {
        quota.consume(ctx).then(
          (result) => this.#afterQuota(call, route, result),
          (error: unknown) => call.crashed(error),
        );
        return;
      }
    }
    this.#acquire(call, route, false);
  }

  /** The quota answered: a refusal is answered at once (the limiter never sees it), else admit. */
  #afterQuota(call: ShedCall, route: string | undefined, result: QuotaResult): void {
    if (!result.ok) {
      call.answer(new QuotaExceededError(result));
      return;
    }
    try {
      this.#acquire(call, route, true);
    } catch (error) {
      // A throwing `partition`: off the caller's stack now, so the framework's error path.
      call.crashed(error);
    }
  }

  /** Asks the request's limiter for a permit; `deferred`: not in the caller's stack (after the quota). */
  #acquire(call: ShedCall, route: string | undefined, deferred: boolean): void {
    // Gone while the quota judged: no permit, no answer (the quota's charge stands).
    if (deferred && call.res.destroyed) return;
    const req = call.req;
    const limiter = this.#single ?? this.#limiterOf(req, route);
    this.#diagnostics.sync();
    const permit = limiter.acquireWith(call, this.#requestOptions(call));
    // Neither granted nor queued: refused at once, and already answered.
    if (permit === undefined && call.ticket === undefined) return;
    call.admitted(permit, deferred);
  }

  #limiterOf(req: IncomingMessage, route: string | undefined): Limiter {
    const name =
      this.#partition === undefined
        ? firstSegment(route ?? req.url ?? '')
        : this.#partition(req, route);
    return (
      (typeof name === 'string' ? this.#parts.get(name) : undefined) ?? (this.#fallback as Limiter)
    );
  }

  /**
   * What the request says of itself (its time limit, criticality, attempt, cohort), as the
   * limiter's acquire options (those that differ from the defaults) and, unless `context` is off,
   * as the request context the call runs in.
   */
  #requestOptions(call: ShedCall): AcquireOptions | undefined {
    const req = call.req;
    const headers = req.headers;
    const inbound = this.#inbound;
    const timeoutMs = inbound.timeoutMs(headers);
    const criticality =
      asCriticality(this.#criticality?.(req)) ??
      inbound.criticality(headers) ??
      DEFAULT_CRITICALITY;
    const attempt = inbound.attempt(headers) ?? 1;
    const given = this.#cohort?.(req);
    const cohort = typeof given === 'string' ? given : undefined;
    call.attempt = attempt;
    if (this.#context) {
      const deadline = timeoutMs === undefined ? undefined : performance.now() + timeoutMs;
      call.context = new Context(deadline, criticality, attempt, cohort, undefined);
    }
    // Only what differs from the limiter's defaults (nothing: its fast path).
    if (
      timeoutMs === undefined &&
      criticality === DEFAULT_CRITICALITY &&
      attempt === 1 &&
      cohort === undefined
    ) {
      return undefined;
    }
    const options: AcquireOptions = {};
    if (timeoutMs !== undefined) options.timeoutMs = timeoutMs;
    if (criticality !== DEFAULT_CRITICALITY) options.criticality = criticality;
    if (attempt !== 1) options.attempt = attempt;
    if (cohort !== undefined) options.cohort = cohort;
    return options;
  }
}

/** A `criticality` option's answer, if it is one of the levels. */
function asCriticality(value: unknown): Criticality | undefined {
  return CRITICALITIES.includes(value as Criticality) ? (value as Criticality) : undefined;
}

/** `/login/step2?x=1` → `login`; `/` → `""`. */
function firstSegment(path: string): string {
  let end = 1;
  while (end < path.length) {
    const c = path.charCodeAt(end);
    if (c === 47 /* / */ || c === 63 /* ? */ || c === 35 /* # */) break;
    end++;
  }
  return path.slice(1, end);
}
