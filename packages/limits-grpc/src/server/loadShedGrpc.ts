import {
  type Metadata,
  ServerInterceptingCall,
  type ServerInterceptingCallInterface,
  type ServerInterceptor,
} from '@grpc/grpc-js';
import {
  type AcquireOptions,
  type LimitExceededError,
  type Limiter,
  type Outcome,
  type Permit,
  type PermitRequest,
  parseCriticality,
  type QueueTicket,
} from 'limits-core';
import { classifyStatus, refusalStatus, remainingMs, userOutcome } from '../shared/status.js';
import {
  type LoadShedGrpcOptions,
  type PartialStatusObject,
  resolveServerOptions,
  type ServerConfig,
} from './options.js';

/**
 * A cancel that arrives this close to the call's deadline is the deadline's: the client's deadline
 * timer started before ours (by the request's trip, longer on a busy machine) and may fire first,
 * resetting the stream before our own deadline. The slack is the larger of 20 ms and a tenth of the
 * call's time limit as it arrived.
 */
const DEADLINE_SLACK_MS = 20;
const DEADLINE_SLACK_SHARE = 0.1;

/**
 * Load shedding at the door of a grpc-js server: a server interceptor (grpc-js ≥ 1.10) that admits
 * each call through a limits-core `Limiter` (or a `PartitionedLimiter`'s partition, or one chosen by
 * a function) before its handler runs, and gives the permit back exactly once, when the call's
 * status is sent or the call is cancelled (the client left, its deadline passed), whichever comes
 * first. A call the limiter refuses is answered with a status ({@link refusalStatus}:
 * `RESOURCE_EXHAUSTED`, `UNAVAILABLE` for a closed limiter, `DEADLINE_EXCEEDED`; `details` naming
 * the reason, `grpc-retry-pushback-ms` the retry estimate) and its handler is never called. A call
 * cancelled while queued leaves the queue at once.
 *
 * Each call says what it is worth: its deadline (from `grpc-timeout`) is its admission deadline,
 * and its criticality is read from the `criticalityKey` metadata. The outcome reported to the
 * limiter is the status code's ({@link classifyStatus}) unless `classify` says otherwise; a call
 * the client cancelled is `ignore`, one whose deadline passed before its status was sent (or which the client cancelled less than
 * 20 ms, or a tenth of its time limit, before it: the client's deadline timer) `dropped`.
 *
 * @param options - see {@link LoadShedGrpcOptions}.
 * @returns the interceptor, for the server's `interceptors` option.
 * @throws TypeError/RangeError for bad options, naming the option.
 * @example
 * ```ts
 * const limiter = new Limiter({ algorithm: new VegasLimit(), maxQueued: 100 });
 * const server = new Server({ interceptors: [loadShedGrpc({ limiter })] });
 * ```
 */
export function loadShedGrpc(options: LoadShedGrpcOptions): ServerInterceptor {
  const config = resolveServerOptions(options);
  const parts = new Map<string, Limiter>();
  const partitioned = config.partitioned;
  if (partitioned !== undefined) {
    for (const name of Object.keys(partitioned.ledger().partitions)) {
      parts.set(name, partitioned.partition(name));
    }
  }
  const limiterOf = (method: string, metadata: Metadata): Limiter | undefined => {
    if (config.limiter !== undefined) return config.limiter;
    if (config.limiterOf !== undefined) return config.limiterOf(method, metadata);
    const name = config.partition === undefined ? method : config.partition(method, metadata);
    return (
      (typeof name === 'string' ? parts.get(name) : undefined) ??
      (parts.get(config.fallbackPartition) as Limiter)
    );
  };
  return function limitsServerInterceptor(methodDescriptor, call) {
    return new ShedCall(config, methodDescriptor.path, call, limiterOf).intercepting;
  };
}

/**
 * One call at the door, from its metadata to its status: admission, the handler started or the
 * refusal sent, the permit released. Phases: `new` → `waiting` (for the permit) → `admitted` →
 * `ended`; or `waiting` → `ended` (refused, cancelled). The permit is released in one place,
 * `#end`.
 */
class ShedCall implements PermitRequest {
  readonly intercepting: ServerInterceptingCall;
  #phase: 'new' | 'waiting' | 'admitted' | 'ended' = 'new';
  #permit: Permit | undefined;
  #ticket: QueueTicket | undefined;
  /** The call's time limit in ms when its metadata arrived (`Infinity`: none). */
  #timeoutMs = Number.POSITIVE_INFINITY;
  /** Passes the metadata on to the handler (the listener's `next`). */
  #admit: (() => void) | undefined;

  constructor(
    readonly config: ServerConfig,
    readonly method: string,
    readonly call: ServerInterceptingCallInterface,
    readonly limiterOf: (method: string, metadata: Metadata) => Limiter | undefined,
  ) {
    this.intercepting = new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            this.#admission(metadata, () => nextMetadata(metadata));
          },
          onCancel: () => this.#cancelled(),
        }),
      sendStatus: (status, next) => {
        this.#end(this.#outcome(status));
        next(status);
      },
    });
  }

  /** Asks the call's limiter for a permit; the handler starts when it is granted. */
  #admission(metadata: Metadata, admit: () => void): void {
    this.#admit = admit;
    const limiter = this.limiterOf(this.method, metadata);
    if (limiter === undefined) {
      this.#phase = 'admitted';
      admit();
      return;
    }
    this.#phase = 'waiting';
    const permit = limiter.acquireWith(this, this.#acquireOptions(metadata));
    if (permit !== undefined) this.granted(permit);
  }

  #acquireOptions(metadata: Metadata): AcquireOptions | undefined {
    const timeoutMs = remainingMs(this.call.getDeadline());
    this.#timeoutMs = timeoutMs;
    const key = this.config.criticalityKey;
    const criticality = key === undefined ? undefined : parseCriticality(metadata.get(key)[0]);
    if (timeoutMs === Number.POSITIVE_INFINITY && criticality === undefined) return undefined;
    const options: AcquireOptions = {};
    if (timeoutMs !== Number.POSITIVE_INFINITY) options.timeoutMs = timeoutMs;
    if (criticality !== undefined) options.criticality = criticality;
    return options;
  }

  /** `PermitRequest`: the permit came; the handler starts. */
  granted(permit: Permit): void {
    this.#ticket = undefined;
    if (this.#phase !== 'waiting') {
      permit.release('ignore');
      return;
    }
    this.#phase = 'admitted';
    this.#permit = permit;
    (this.#admit as () => void)();
  }

  /** `PermitRequest`: refused; answered with the refusal's status, the handler never called. */
  refused(error: LimitExceededError): void {
    this.#ticket = undefined;
    if (this.#phase !== 'waiting') return;
    this.#phase = 'ended';
    // (Our responder sees it: no permit to release.)
    this.intercepting.sendStatus(refusalStatus(error));
  }

  /** `PermitRequest`: queued; `ticket` takes the call out again when the client leaves. */
  queued(ticket: QueueTicket): void {
    this.#ticket = ticket;
  }

  /**
   * The call ended without its status passing here: the client cancelled (`ignore`), or its
   * deadline passed (`dropped`: grpc-js answered `DEADLINE_EXCEEDED` itself).
   */
  #cancelled(): void {
    if (this.#phase === 'waiting') {
      this.#phase = 'ended';
      this.#ticket?.cancel(new Error('limits: the call was cancelled while queued'));
      return;
    }
    const left = remainingMs(this.call.getDeadline());
    const slackMs = Math.max(DEADLINE_SLACK_MS, DEADLINE_SLACK_SHARE * this.#timeoutMs);
    this.#end(left !== Number.POSITIVE_INFINITY && left <= slackMs ? 'dropped' : 'ignore');
  }

  #outcome(status: PartialStatusObject): Outcome {
    const classify = this.config.classify;
    const asked = classify === undefined ? undefined : userOutcome(classify, status, this.method);
    return asked ?? classifyStatus(status.code);
  }

  /** The permit goes back, once. */
  #end(outcome: Outcome): void {
    if (this.#phase === 'waiting' || this.#phase === 'new') return;
    this.#phase = 'ended';
    const permit = this.#permit;
    this.#permit = undefined;
    permit?.release(outcome);
  }
}
