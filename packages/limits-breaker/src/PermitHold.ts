import type { Outcome } from 'limits-core';

/**
 * The permit of a guarded call, kept past the end of its action (see `CallContext.hold()`): a
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
