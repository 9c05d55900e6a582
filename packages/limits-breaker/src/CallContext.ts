import { LimitsError } from 'limits-core';
import type { PermitHold } from './PermitHold.js';

/**
 * What a guarded action receives as its first argument. Reading `signal` creates the call's own
 * AbortController on first use: on Node 20 creating an AbortSignal costs several microseconds — more
 * than the rest of the guard — so an action that never looks at it does not pay for it. The object
 * the guard passes is its own record of the call (a subclass, so a call costs one object): `signal`
 * is the API; any other property on it is internal and may change.
 */
export class CallContext {
  #controller: AbortController | undefined = undefined;
  /** The abort reason, or NOT_ABORTED. */
  #reason: unknown = NOT_ABORTED;

  /** This call's signal: aborted when the call times out or the guard shuts down. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== NOT_ABORTED) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /**
   * Keeps this call's permit past the end of the action, until the returned hold is released: for an
   * action whose work goes on after it returns, such as a response body still streaming. Call it
   * while the action runs. When the action settles the guard does what it always does — judges the
   * breaker, answers the caller — but the permit (and the limiter's sample) goes back only at
   * `hold.release(outcome?)`, with that outcome or by default the action's.
   *
   * The hold is over, and the permit released when the action settles as without a hold, if the
   * action rejects or throws (nothing was handed on to hold), or times out (released as `dropped`, as
   * a late timed-out call is). `shutdown()` aborts a held call's signal and releases its permit. A
   * hold released while the action still runs releases the permit when it settles. A hold that is
   * garbage-collected unreleased is reclaimed (released as `ignore`) and reported on the limiter's
   * `leak` event and once as a process warning `LIMITS_PERMIT_LEAK`.
   *
   * @returns the hold; its `release()` is safe to call more than once.
   * @throws LimitsError with `code` `HOLD_STATE` when the action has already settled (or the call
   *   ended), or `hold()` was already called for this call; or outside a guarded call.
   * @example
   * ```ts
   * const g = guard(async (ctx, url: string) => {
   *   const res = await fetch(url, { signal: ctx.signal });
   *   const hold = ctx.hold();
   *   return { res, done: () => hold.release() }; // release once the body is read
   * });
   * ```
   */
  hold(): PermitHold {
    throw new LimitsError('HOLD_STATE', 'limits: ctx.hold() works only inside a guarded call');
  }

  /** @internal Aborts this call's signal (now, or as soon as it is created). */
  _abort(reason: unknown): void {
    if (this.#reason !== NOT_ABORTED) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/** What `#reason` holds until the call is aborted (any abort reason, even `undefined`, differs). */
const NOT_ABORTED: unique symbol = Symbol('not aborted');
