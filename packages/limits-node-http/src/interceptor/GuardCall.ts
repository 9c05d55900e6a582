import type { Outcome } from 'limits-core';
import type {
  AttemptOutcome,
  FetchCallContext,
  HttpAttempt,
  LimitFetchGuard,
} from '../shared/httpGuard.js';

/** What a {@link GuardCall} reports to the `LimitHandler` it serves. */
export interface GuardCallOwner {
  /** The guard let the request run: dispatch it, with `call` as its permit. */
  granted(call: GuardCall): void;
  /** The guard refused the request (circuit open, limiter refusal, shutdown, its own timeout). */
  refused(error: Error): void;
  /** The guard answered with its fallback's value instead. */
  fallback(value: unknown): void;
  /** The guard answered with the action's own settlement (the request ended or got its headers). */
  settled(): void;
  /** The guard aborted the running request (its own `timeoutMs`, or `shutdown()`). */
  guardAborted(reason: Error): void;
}

/**
 * @internal One `limitInterceptor` request through a guard made by `fetchGuard`: the attempt
 * `guard.fire()` hands its action (`run`), then, for the `LimitHandler`, the permit (its `success` …
 * `ignore` end the call) and, while the guard queues the request, the queue ticket (`cancel`).
 *
 * The action resolves — and the guard judges the breaker — when the response headers arrive
 * (`judge`), holding the permit with `ctx.hold()` until the body ends (`release`); or when the request
 * fails before its headers, with the failure's outcome. It never rejects.
 */
export class GuardCall implements HttpAttempt, AttemptOutcome {
  /** The outcome the guard's `classify` reads when the action settles. */
  outcome: Outcome = 'ignore';
  readonly #owner: GuardCallOwner;
  #ctx: FetchCallContext | undefined = undefined;
  #signal: AbortSignal | undefined = undefined;
  #settle: ((value: GuardCall) => void) | undefined = undefined;
  #hold: { release(outcome?: Outcome): void } | undefined = undefined;
  #cancelled = false;

  constructor(owner: GuardCallOwner) {
    this.#owner = owner;
  }

  /** Fires the guard with this call; its answer goes to the owner. */
  fire(guard: LimitFetchGuard): void {
    guard.fire(this).then(
      (value) => {
        if (value === this) this.#owner.settled();
        else this.#owner.fallback(value);
      },
      (error: Error) => this.#owner.refused(error),
    );
  }

  /** The guard's action: dispatch the request, unless the caller gave up while it was queued. */
  run(ctx: FetchCallContext): Promise<AttemptOutcome> {
    // Cancelled while queued (the caller's abort, the time budget): never sent, not a sample.
    if (this.#cancelled) return Promise.resolve(this);
    this.#ctx = ctx;
    const promise = new Promise<GuardCall>((resolve) => {
      this.#settle = resolve;
    });
    const signal = ctx.signal;
    this.#signal = signal;
    signal.addEventListener('abort', this);
    this.#owner.granted(this);
    return promise;
  }

  /** @internal `ctx.signal` aborted: the guard's own timeout, or its shutdown. */
  handleEvent(): void {
    this.#owner.guardAborted((this.#signal as AbortSignal).reason as Error);
  }

  /** The caller gave up while the request waited for the guard's permit (a queue ticket's cancel). */
  cancel(reason: unknown): void {
    this.#cancelled = true;
    this.#owner.refused(reason as Error);
  }

  /** The headers arrived with `outcome`: the breaker is judged now, the permit held for the body. */
  judge(outcome: Outcome): void {
    this.outcome = outcome;
    try {
      this.#hold = (this.#ctx as FetchCallContext).hold();
    } catch {
      // The guard already let go of the call (shut down meanwhile): nothing to hold.
    }
    this.#end();
  }

  /** The request is over with `outcome`: the held permit goes back, or the action settles now. */
  release(outcome: Outcome): void {
    const hold = this.#hold;
    if (hold !== undefined) {
      this.#hold = undefined;
      hold.release(outcome);
    } else if (this.#settle !== undefined) this.outcome = outcome;
    this.#end();
    this.#signal?.removeEventListener('abort', this);
  }

  success(): void {
    this.release('success');
  }

  dropped(): void {
    this.release('dropped');
  }

  failure(): void {
    this.release('failure');
  }

  ignore(): void {
    this.release('ignore');
  }

  /** Settles the action (once). */
  #end(): void {
    const settle = this.#settle;
    if (settle === undefined) return;
    this.#settle = undefined;
    settle(this);
  }
}
