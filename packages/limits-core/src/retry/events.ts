/** Payload of the `retry` event: an attempt's result is thrown away and another attempt follows. */
export interface RetryEvent {
  /** The attempt that just ended (1 for the first); the next one is `attempt + 1`. */
  attempt: number;
  /** Ms the policy waits before the next attempt (the jittered backoff, or a longer `Retry-After`). */
  delayMs: number;
  /** The attempt's error, when it rejected. */
  error?: unknown;
  /** The attempt's value, when it resolved with a value `retryIf` asked to retry (already discarded). */
  value?: unknown;
}

/** Payload of the `budget_exhausted` event: a retry was refused by the {@link RetryBudget}. */
export interface BudgetExhaustedEvent {
  /** The attempt whose retry was refused; its result is the call's result. */
  attempt: number;
}

/** Events of a {@link RetryPolicy} (eventemitter3), with their payloads. */
export interface RetryEvents {
  /** Another attempt follows, after `delayMs`. */
  retry: (event: RetryEvent) => void;
  /** The budget refused a retry: the last result is returned (or thrown) as is. */
  budget_exhausted: (event: BudgetExhaustedEvent) => void;
  /**
   * A listener or a `discard` callback threw. Without an `error` listener the error is rethrown on
   * a microtask; it never breaks the call.
   */
  error: (error: unknown) => void;
}
