import {
  InterceptingCall,
  type InterceptingListener,
  type Interceptor,
  type InterceptorOptions,
  type Metadata,
  type Requester,
  type StatusObject,
  status,
} from '@grpc/grpc-js';
import {
  type AcquireOptions,
  CRITICALITIES,
  type Criticality,
  type LimitExceededError,
  type Outcome,
  type Permit,
  type PermitRequest,
  type QueueTicket,
} from 'limits-core';
import { classifyStatus, refusalStatus, remainingMs, userOutcome } from '../shared/status.js';
import type { GrpcAttempt, GrpcCallContext, GrpcCallOutcome, GrpcGuard } from './grpcGuard.js';
import { type ClientConfig, type LimitGrpcClientOptions, resolveClientOptions } from './options.js';

/** A requester's `start` continuation: starts the call below with a listener. */
type StartNext = (metadata: Metadata, listener: Partial<InterceptingListener>) => void;

/** The call below an interceptor, as grpc-js hands it to `new InterceptingCall()`. */
type NextCallInterface = ConstructorParameters<typeof InterceptingCall>[0];

/**
 * A grpc-js client interceptor that gives every call a permit from a limits-core `Limiter` (or a
 * limits-breaker guard made by {@link grpcGuard}) before it starts, and holds it until the call
 * really ends: its status arrives (unary, server-streaming, client-streaming and bidi calls alike),
 * or it is cancelled. Released exactly once on every path.
 *
 * The call's deadline is its admission deadline (a call that cannot start in time is refused, a
 * queued call leaves at its deadline), and a call cancelled while it waits for its permit leaves the
 * queue at once and never starts. A refusal answers the call with a status without reaching the
 * network ({@link refusalStatus}: `RESOURCE_EXHAUSTED`, `UNAVAILABLE` for a closed limiter or an
 * open circuit, `DEADLINE_EXCEEDED`, with `details` naming the reason and the retry estimate as
 * `grpc-retry-pushback-ms`). The outcome is the status code's ({@link classifyStatus}) unless
 * `classify` says otherwise; the caller's cancel is `ignore`.
 *
 * @param options - see {@link LimitGrpcClientOptions}: `limiter` or `guard` (exactly one) and the rest.
 * @returns the interceptor, for a client's `interceptors` option or a call's.
 * @throws TypeError/RangeError for bad options, before anything is built.
 * @example
 * ```ts
 * const limiter = new Limiter({ algorithm: new VegasLimit(), maxQueued: 100 });
 * const client = new Greeter('127.0.0.1:50051', credentials.createInsecure(), {
 *   interceptors: [limitGrpcClient({ limiter })],
 * });
 * ```
 */
export function limitGrpcClient(options: LimitGrpcClientOptions): Interceptor {
  const config = resolveClientOptions(options);
  return function limitsInterceptor(callOptions, nextCall) {
    const call = new ClientCall(config, callOptions, nextCall);
    return new InterceptingCall(call.below, call.requester());
  };
}

/**
 * One call through the interceptor, from its start to its status: the permit (or the guard's call),
 * the call below (created only once the permit is granted), and the status the caller gets. Its
 * phases: `new` → `waiting` (for the permit) → `started` → `ended`; or `waiting` → `ended` (refused,
 * cancelled). The permit is released in one place, `#end`.
 */
class ClientCall implements PermitRequest, GrpcAttempt {
  readonly method: string;
  #phase: 'new' | 'waiting' | 'started' | 'ended' = 'new';
  /** The call below, once started. */
  #real: NextCallInterface | undefined;
  /** Reads asked for before the call below exists (replayed when it starts). */
  #reads = 0;
  #metadata: Metadata | undefined;
  /** The caller's listener, to answer it when the call never starts. */
  #listener: InterceptingListener | undefined;
  /** Starts the call below with our listener (the requester's `next`). */
  #startNext: StartNext | undefined;
  #permit: Permit | undefined;
  #ticket: QueueTicket | undefined;
  /** The caller cancelled the call. */
  #cancelled = false;
  /** With a guard: settles the guard's action with the call's outcome. */
  #settle: ((value: GrpcCallOutcome) => void) | undefined;
  /** With a guard: the guard's signal, watched while the call runs. */
  #guardSignal: AbortSignal | undefined;
  readonly #onGuardAbort = (): void => {
    this.#real?.cancelWithStatus(status.CANCELLED, 'limits: the guard ended the call');
  };

  /** The call below as the {@link InterceptingCall} sees it: created when the permit is granted. */
  readonly below: NextCallInterface;

  constructor(
    readonly config: ClientConfig,
    readonly callOptions: InterceptorOptions,
    readonly nextCall: (options: InterceptorOptions) => NextCallInterface,
  ) {
    this.method = callOptions.method_definition.path;
    const self = this;
    this.below = {
      start(metadata, listener) {
        self.#real = self.nextCall(self.callOptions);
        self.#real.start(metadata, listener);
        for (; self.#reads > 0; self.#reads--) self.#real.startRead();
      },
      cancelWithStatus(code, details) {
        self.#real?.cancelWithStatus(code, details);
      },
      getPeer() {
        return self.#real?.getPeer() ?? '';
      },
      sendMessageWithContext(context, message) {
        self.#real?.sendMessageWithContext(context, message);
      },
      sendMessage(message) {
        self.#real?.sendMessage(message);
      },
      startRead() {
        if (self.#real === undefined) self.#reads++;
        else self.#real.startRead();
      },
      halfClose() {
        self.#real?.halfClose();
      },
      getAuthContext() {
        return self.#real?.getAuthContext() ?? null;
      },
    };
  }

  /** The requester: `start` waits for the permit, `cancel` takes a waiting call out of the queue. */
  requester(): Requester {
    return {
      start: (metadata, listener, next) => this.#start(metadata, listener, next),
      cancel: (next) => this.#cancel(next),
    };
  }

  #start(
    metadata: Metadata,
    listener: InterceptingListener,
    next: (metadata: Metadata, listener: Partial<InterceptingListener>) => void,
  ): void {
    this.#metadata = metadata;
    this.#listener = listener;
    this.#startNext = next;
    if (this.#cancelled) {
      this.#answer({ reason: 'aborted' });
      return;
    }
    this.#phase = 'waiting';
    const guard = this.config.guard;
    if (guard !== undefined) {
      this.#guarded(guard);
      return;
    }
    const given = this.config.limiter;
    const limiter = typeof given === 'function' ? given(this.method) : given;
    if (limiter === undefined) {
      this.#begin();
      return;
    }
    const permit = limiter.acquireWith(this, this.acquireOptions());
    if (permit !== undefined) this.granted(permit);
  }

  /** The call's acquire options: the time left before its deadline, its criticality. */
  acquireOptions(): AcquireOptions | undefined {
    const timeoutMs = remainingMs(this.callOptions.deadline);
    const criticality = this.#criticality();
    if (timeoutMs === Number.POSITIVE_INFINITY && criticality === undefined) return undefined;
    const options: AcquireOptions = {};
    if (timeoutMs !== Number.POSITIVE_INFINITY) options.timeoutMs = timeoutMs;
    if (criticality !== undefined) options.criticality = criticality;
    return options;
  }

  #criticality(): Criticality | undefined {
    const of = this.config.criticality;
    if (of === undefined) return undefined;
    const level = of(this.method);
    return CRITICALITIES.includes(level as Criticality) ? level : undefined;
  }

  /** `PermitRequest`: the permit came (at once or after the wait). */
  granted(permit: Permit): void {
    this.#ticket = undefined;
    if (this.#phase !== 'waiting') {
      // Cancelled between the grant and this call: never started.
      permit.release('ignore');
      return;
    }
    this.#permit = permit;
    this.#begin();
  }

  /** `PermitRequest`: refused at admission or while queued (a cancel's refusal included). */
  refused(error: LimitExceededError): void {
    this.#ticket = undefined;
    if (this.#phase === 'waiting') this.#answer(error);
  }

  /** `PermitRequest`: queued; `ticket` takes the call out again on a cancel. */
  queued(ticket: QueueTicket): void {
    this.#ticket = ticket;
  }

  /** Starts the call below, with a listener that ends this call when its status arrives. */
  #begin(): void {
    this.#phase = 'started';
    const start = this.#startNext as StartNext;
    start(
      this.#metadata as Metadata,
      {
        onReceiveStatus: (received: StatusObject, next: (status: StatusObject) => void) => {
          this.#end(received);
          next(received);
        },
      } as Partial<InterceptingListener>,
    );
  }

  /** The call's status arrived: its outcome goes to the permit (or the guard), once. */
  #end(received: StatusObject): void {
    if (this.#phase === 'ended') return;
    this.#phase = 'ended';
    const outcome = this.#outcome(received);
    const permit = this.#permit;
    this.#permit = undefined;
    permit?.release(outcome);
    this.#guardSignal?.removeEventListener('abort', this.#onGuardAbort);
    this.#settle?.({ outcome });
  }

  #outcome(received: StatusObject): Outcome {
    if (this.#cancelled) return 'ignore';
    const classify = this.config.classify;
    const asked = classify === undefined ? undefined : userOutcome(classify, received, this.method);
    return asked ?? classifyStatus(received.code);
  }

  /** The caller cancelled: out of the queue when waiting, else the cancel goes down. */
  #cancel(next: () => void): void {
    this.#cancelled = true;
    if (this.#phase === 'waiting') {
      const ticket = this.#ticket;
      if (ticket !== undefined) {
        ticket.cancel(new Error('limits: the call was cancelled while queued'));
        return;
      }
      // Waiting for a guard's permit: answered now; the guard's action sees the cancel.
      this.#answer({ reason: 'aborted' });
      return;
    }
    next();
  }

  /** Answers a call that never started with a refusal's status, once, off the caller's stack. */
  #answer(error: Parameters<typeof refusalStatus>[0]): void {
    this.#phase = 'ended';
    const listener = this.#listener;
    if (listener === undefined) return;
    const answer = refusalStatus(error);
    process.nextTick(() => listener.onReceiveStatus(answer));
  }

  /** With a guard: the guard admits the call and runs it as its action. */
  #guarded(guard: GrpcGuard): void {
    guard.fire(this).then(
      () => {},
      (error: unknown) => {
        // Refused before the call started (an open circuit, the limiter, the guard's timeout):
        // answered here. Once started, the call's own status answers it.
        if (this.#phase === 'waiting') this.#answer(error as Parameters<typeof refusalStatus>[0]);
      },
    );
  }

  /** The guard's action: starts the call and resolves with its outcome when its status arrives. */
  run(ctx: GrpcCallContext): Promise<GrpcCallOutcome> {
    if (this.#phase !== 'waiting' || ctx.signal.aborted) {
      return Promise.resolve({ outcome: 'ignore' });
    }
    return new Promise<GrpcCallOutcome>((resolve) => {
      this.#settle = resolve;
      this.#guardSignal = ctx.signal;
      ctx.signal.addEventListener('abort', this.#onGuardAbort, { once: true });
      this.#begin();
    });
  }
}
