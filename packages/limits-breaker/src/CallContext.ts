import { LimitsError, type Outcome } from 'limits-core';

/**
 * What a guarded action receives as its first argument: the call's own `signal`, and `hold()` to keep
 * the call's permit past the action's end. Any other property on the object the guard passes is
 * internal and may change.
 *
 * A `CallContext` made with `new` (to call an action outside a guard, e.g. in a test) has a signal
 * that never aborts, and cannot hold.
 */
export class CallContext {
  /**
   * This call's signal: aborted when the call times out or the guard shuts down. Made on first read:
   * an AbortController costs several microseconds on Node 20, far more than the rest of a guarded
   * call, so an action that never reads it does not pay for it.
   */
  get signal(): AbortSignal {
    let controller = bareControllers.get(this);
    if (controller === undefined) {
      controller = new AbortController();
      bareControllers.set(this, controller);
    }
    return controller.signal;
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
}

/** The signals of contexts made with `new CallContext()` (never aborted). */
const bareControllers = new WeakMap<CallContext, AbortController>();

/**
 * The permit of a guarded call, kept past the end of its action (see {@link CallContext.hold}): a
 * response body still streaming is work in flight. Release it exactly when that work ends.
 */
export interface PermitHold {
  /**
   * Releases the held permit. The first call wins; later calls do nothing, as do calls after the
   * permit went back another way (the action failed or timed out, the guard shut down).
   * @param outcome - how the held work ended, for the limiter (the breaker was judged when the action
   *   settled). @default the outcome the guard gave the action when it settled (its `classify`), or
   *   that outcome later when released while the action still runs.
   * @throws TypeError/RangeError for an outcome that is not `success`, `dropped`, `failure` or
   *   `ignore` (the permit stays held).
   */
  release(outcome?: Outcome): void;
}
