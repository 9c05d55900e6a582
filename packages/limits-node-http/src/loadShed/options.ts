import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Criticality, Limiter, Outcome, PartitionedLimiter, Quota } from 'limits-core';
import {
  checkBoolean,
  checkFunction,
  checkKeys,
  checkNumber,
  formatValue,
} from 'limits-core/internal';
import { InboundHeaders } from '../context/inboundHeaders.js';
import { ATTEMPT_HEADER, CRITICALITY_HEADER, TIMEOUT_HEADER } from '../context/Propagation.js';
import { checkHeaderName } from '../shared/headerName.js';
import { DO_NOT_RETRY_HEADER } from '../shared/retry.js';
import { checkExempt, type ExemptOption } from './exempt.js';
import type { ShedError } from './shedResponse.js';

/**
 * Options of {@link loadShed}. Every option is checked when `loadShed()` is called: an unknown key is
 * a TypeError naming the nearest valid one, a wrong type a TypeError, a value out of range a
 * RangeError, each message naming the option, what it allows and the value given.
 */
export interface LoadShedOptions<Ctx = IncomingMessage> {
  /**
   * Where requests are admitted: a `Limiter` (one capacity for every request) or a
   * `PartitionedLimiter` (one partition per route or per `partition(req)`, each with its reserve).
   * Requests wait in its queue like any caller (`maxQueued`, `maxQueueWaitMs`, `queueOrder`, …).
   */
  limiter: Limiter | PartitionedLimiter;
  /**
   * Requests let through untouched: never charged on the quota, never given a permit, never
   * refused, and run outside the request context (health checks, `/metrics`, readiness probes
   * that must answer under overload). A list of paths (`'/health'`: exactly that path, whatever
   * its query string; `'/internal/*'`: the prefix and everything under it; at most 1000 paths of
   * up to 1024 characters, each starting with `/`), or a predicate `(req) => boolean` (only `true`
   * exempts; a throw propagates as a throw of your own middleware would). The path is the
   * request's as received (Express: `originalUrl`), not decoded.
   * @default none: every request is admitted by the limiter
   */
  exempt?: ExemptOption;
  /**
   * With a `PartitionedLimiter`: the partition of a request, from the request and (Fastify only) its
   * route pattern (`routeOptions.url`, e.g. `/users/:id`; `undefined` for node:http and Express,
   * which route after middleware). A name that is not a partition of the limiter (or anything but a
   * string) goes to `fallbackPartition`: labels stay bounded whatever clients send. A throw
   * propagates as a throw of your own middleware would.
   * @default the first segment of the route pattern (Fastify) or of the request path (node:http,
   *   Express): `/login/step2?x=1` → `login`, `/` → `""`
   */
  partition?: (req: IncomingMessage, route: string | undefined) => string | undefined;
  /**
   * With a `PartitionedLimiter`: the partition of requests whose name is unknown; must be one of its
   * partitions.
   * @default 'default'
   */
  fallbackPartition?: string;
  /**
   * Request header carrying the caller's remaining time limit in ms, relative, fed to admission as
   * `timeoutMs` and to the request context as its deadline: a request whose time limit cannot be met
   * given the queue ahead is refused at once, and a queued one leaves when it can no longer make it.
   * Only ASCII digits count (surrounding spaces allowed); anything else (signs, decimals, units,
   * lists, empty, over 64 characters) is ignored, as if the header were absent; values over
   * `maxTimeoutMs` (any over 15 digits included) are capped. With `grpcHeaders` and `envoyHeaders`,
   * the smallest valid time limit of all wins. `false` turns it off. A lowercase HTTP token.
   * @default 'x-request-timeout-ms'
   */
  timeoutHeader?: string | false;
  /**
   * Request header carrying the request's criticality (`critical_plus`, `critical`,
   * `sheddable_plus`, `sheddable`, read by limits-core's `parseCriticality`; anything else is
   * ignored), used when `criticality` gives none. A client can claim any level: at a public edge,
   * decide it yourself with `criticality` or turn the header off. `false` turns it off.
   * @default 'x-request-criticality'
   */
  criticalityHeader?: string | false;
  /**
   * Request header carrying the request's attempt number (1 for a first try, 2 and more for a
   * retry; ASCII digits, an integer ≥ 1, capped at 100; anything else ignored). With `grpcHeaders`
   * and `envoyHeaders` the largest valid attempt of all wins. `false` turns it off.
   * @default 'x-request-attempt'
   */
  attemptHeader?: string | false;
  /**
   * Whether gRPC's headers are read too: `grpc-timeout` (`TimeoutValue TimeoutUnit`, e.g. `250m`,
   * `2S`) as a time limit and `grpc-previous-rpc-attempts` (`n` → attempt `n + 1`).
   * @default true
   */
  grpcHeaders?: boolean;
  /**
   * Whether Envoy's headers are read too: `x-envoy-expected-rq-timeout-ms` as a time limit and
   * `x-envoy-attempt-count` as the attempt.
   * @default true
   */
  envoyHeaders?: boolean;
  /**
   * The criticality of a request, e.g. from its route or its account's plan; `undefined` (or
   * anything but a criticality) leaves it to `criticalityHeader`, then `'critical'`. Passed to the
   * limiter (a limiter with `shedding` refuses lower levels first under overload) and to the
   * request context. A throw propagates as a throw of your own middleware would.
   * @default the criticality header's
   */
  criticality?: (req: IncomingMessage) => Criticality | undefined;
  /**
   * Whose request it is (a user or account id): the limiter's `cohort` (a shedding limiter sheds
   * the same users consistently) and the request context's. A throw propagates as a throw of your
   * own middleware would; anything but a string is none.
   * @default none
   */
  cohort?: (req: IncomingMessage) => string | undefined;
  /**
   * Whether each admitted request runs inside a request context (`currentContext()` in the handler,
   * propagated by `limitFetch` and `limitInterceptor`). `false` saves its cost when nothing reads it.
   * @default true
   */
  context?: boolean;
  /**
   * Response header that tells a client not to retry (value `1`), sent with the 503 of a request the
   * limiter refused as `shed`, `deadline` or `expired` (a retry ranks no higher and has less time),
   * and of any limiter refusal of a retry (attempt ≥ 2): retrying such work only adds load. `limitFetch` and `limitInterceptor` never retry
   * a response that carries `x-do-not-retry`. Also set (on `res`) before `onShed` is called.
   * `false` turns it off.
   * @default 'x-do-not-retry'
   */
  doNotRetryHeader?: string | false;
  /**
   * A limits-core `Quota` judged **before** the limiter (an account over its share gets a cheap 429
   * and never takes a permit or a queue slot). Each request calls
   * `quota.consume(quotaContext(req))`: a refusal is answered with the status of the first full axis
   * (e.g. 429 for `account`, 503 for `global`), `Retry-After` (the time to the window's end) and
   * `{"error":"quota","axis":"<axis>"}`, or goes to `onShed` as a `QuotaExceededError`; an
   * admission then asks the limiter, whose refusal stays a 503. The charge stands when the limiter
   * then refuses (or the client leaves): the quota counts admission attempts that passed it, see the
   * README. A store that cannot judge answers by its own failure policy (`failOpen`: the request
   * passes uncharged; `failClosed`: the quota's `unavailableStatus`, 503). A `consume` that rejects
   * (a key function that throws) goes to the framework's error path: `next(error)` for Express,
   * Fastify's error handler, and for `wrap` a 500 and the error rethrown on the next tick.
   */
  quota?: Quota<Ctx>;
  /**
   * The quota's context of a request (what its axes' key functions receive), e.g.
   * `req => ({ account: req.headers['x-account'] })`; `undefined` means the request is not counted
   * (e.g. `GET` or `/health`, when only the work that enqueues a job counts). Called once per
   * request, before the quota; a throw propagates as a throw of your own middleware would.
   * Needs `quota`.
   * @default the request itself
   */
  quotaContext?: (req: IncomingMessage) => Ctx | undefined;
  /**
   * Cap on the time limit the headers carry (ours, gRPC's, Envoy's), in ms: an integer in
   * [1, 86_400_000].
   * @default 60_000
   */
  maxTimeoutMs?: number;
  /**
   * Cap on the `Retry-After` of the limiter's 503, in ms (written in whole seconds): an integer in
   * [1_000, 86_400_000]. The value is the limiter's `retryAfterMs` rounded up to seconds, at least 1
   * s (1 s when the limiter has no estimate). A quota's refusal is not capped by it: its wait is the
   * exact time to the window's end (at least 1 s, at most a day).
   * @default 60_000
   */
  maxRetryAfterMs?: number;
  /**
   * Writes the response of a refused request instead of the default (see {@link shedResponse}):
   * the limiter's `LimitExceededError`, or the quota's `QuotaExceededError` (`error.reason` is
   * `'quota'`; `axis`, `status`, `retryAfterMs`). It must end `res`. With Fastify the reply is
   * hijacked first, so write to `res` (the raw response) directly. Not called for a client that
   * already disconnected.
   * @default a 503 with `Retry-After` and `{"error":"overloaded","reason":"<reason>"}` (the limiter), or
   *   the axis' status with `Retry-After` and `{"error":"quota","axis":"<axis>"}` (the quota)
   */
  onShed?: (req: IncomingMessage, res: ServerResponse, error: ShedError) => void;
  /**
   * Outcome of a response that finished (a client that disconnected first is always `ignore`). Return
   * `undefined` (or throw) to use the default: 429, 502, 503, 504 → `dropped` (the server is
   * congested: the limit backs off), other 5xx → `failure` (no latency sample), else `success`.
   */
  classify?: (res: ServerResponse) => Outcome | undefined;
}

/** The checked options. */
export interface ResolvedShedOptions {
  limiter: Limiter | undefined;
  /** The test of an exempt request, if any request can be. */
  exempt: ((req: IncomingMessage) => boolean) | undefined;
  quota: Quota<unknown> | undefined;
  quotaContext: ((req: IncomingMessage) => unknown) | undefined;
  partitioned: PartitionedLimiter | undefined;
  partition: LoadShedOptions['partition'];
  fallbackPartition: string;
  /** The context headers read. */
  inbound: InboundHeaders;
  criticality: LoadShedOptions['criticality'];
  cohort: LoadShedOptions['cohort'];
  context: boolean;
  doNotRetryHeader: string | undefined;
  maxRetryAfterMs: number;
  onShed: LoadShedOptions<unknown>['onShed'];
  classify: LoadShedOptions['classify'];
}

const KEYS = [
  'limiter',
  'exempt',
  'quota',
  'quotaContext',
  'partition',
  'fallbackPartition',
  'timeoutHeader',
  'criticalityHeader',
  'attemptHeader',
  'grpcHeaders',
  'envoyHeaders',
  'criticality',
  'cohort',
  'context',
  'doNotRetryHeader',
  'maxTimeoutMs',
  'maxRetryAfterMs',
  'onShed',
  'classify',
] as const;

const DAY_MS = 86_400_000;

function isLimiter(value: object): value is Limiter {
  return typeof (value as Limiter).acquireWith === 'function';
}

function isPartitioned(value: object): value is PartitionedLimiter {
  const p = value as PartitionedLimiter;
  return typeof p.partition === 'function' && typeof p.ledger === 'function';
}

/**
 * @internal Checks every option of {@link loadShed} before anything is built.
 * @throws TypeError/RangeError naming the option.
 */
export function resolveShedOptions<Ctx>(options: LoadShedOptions<Ctx>): ResolvedShedOptions {
  if (options === undefined) {
    throw new TypeError('limits: loadShed options must be an object with "limiter", got undefined');
  }
  checkKeys('loadShed', options, KEYS);
  const source = options.limiter as unknown;
  if (
    source === null ||
    typeof source !== 'object' ||
    !(isLimiter(source) || isPartitioned(source))
  ) {
    throw new TypeError(
      `limits: option "limiter" must be a Limiter or a PartitionedLimiter, got ${formatValue(source)}`,
    );
  }
  const partitioned = isLimiter(source) ? undefined : (source as PartitionedLimiter);
  const partition = checkFunction<LoadShedOptions['partition']>('partition', options.partition);
  if (partitioned === undefined && partition !== undefined) {
    throw new TypeError(
      'limits: option "partition" needs a PartitionedLimiter as "limiter", got a Limiter',
    );
  }
  const fallback = options.fallbackPartition as unknown;
  if (fallback !== undefined && typeof fallback !== 'string') {
    throw new TypeError(
      `limits: option "fallbackPartition" must be a string, got ${formatValue(fallback)}`,
    );
  }
  if (partitioned === undefined && fallback !== undefined) {
    throw new TypeError(
      'limits: option "fallbackPartition" needs a PartitionedLimiter as "limiter", got a Limiter',
    );
  }
  const quota = options.quota as unknown;
  if (
    quota !== undefined &&
    (quota === null || typeof quota !== 'object' || typeof (quota as Quota).consume !== 'function')
  ) {
    throw new TypeError(`limits: option "quota" must be a Quota, got ${formatValue(quota)}`);
  }
  const quotaContext = checkFunction<(req: IncomingMessage) => unknown>(
    'quotaContext',
    options.quotaContext,
  );
  if (quota === undefined && quotaContext !== undefined) {
    throw new TypeError('limits: option "quotaContext" needs a "quota", got none');
  }
  const fallbackPartition = fallback ?? 'default';
  if (partitioned !== undefined) {
    const names = Object.keys(partitioned.ledger().partitions);
    if (!names.includes(fallbackPartition)) {
      throw new RangeError(
        `limits: option "fallbackPartition" must name a partition of "limiter" (${names.join(', ')}), got ${formatValue(fallbackPartition)}${fallback === undefined ? ' (the default)' : ''}`,
      );
    }
  }
  const exempt = checkExempt(options.exempt);
  return {
    limiter: partitioned === undefined ? (source as Limiter) : undefined,
    exempt,
    quota: quota as Quota<unknown> | undefined,
    quotaContext,
    partitioned,
    partition,
    fallbackPartition,
    inbound: new InboundHeaders(
      {
        timeout: checkHeaderName('timeoutHeader', options.timeoutHeader, TIMEOUT_HEADER),
        criticality: checkHeaderName(
          'criticalityHeader',
          options.criticalityHeader,
          CRITICALITY_HEADER,
        ),
        attempt: checkHeaderName('attemptHeader', options.attemptHeader, ATTEMPT_HEADER),
        grpc: checkBoolean('grpcHeaders', options.grpcHeaders, true),
        envoy: checkBoolean('envoyHeaders', options.envoyHeaders, true),
      },
      checkNumber('maxTimeoutMs', options.maxTimeoutMs, 60_000, {
        min: 1,
        max: DAY_MS,
        integer: true,
      }),
    ),
    criticality: checkFunction<LoadShedOptions['criticality']>('criticality', options.criticality),
    cohort: checkFunction<LoadShedOptions['cohort']>('cohort', options.cohort),
    context: checkBoolean('context', options.context, true),
    doNotRetryHeader: checkHeaderName(
      'doNotRetryHeader',
      options.doNotRetryHeader,
      DO_NOT_RETRY_HEADER,
    ),
    maxRetryAfterMs: checkNumber('maxRetryAfterMs', options.maxRetryAfterMs, 60_000, {
      min: 1000,
      max: DAY_MS,
      integer: true,
    }),
    onShed: checkFunction<LoadShedOptions['onShed']>('onShed', options.onShed),
    classify: checkFunction<LoadShedOptions['classify']>('classify', options.classify),
  };
}
