/**
 * The part of opossum's `CircuitBreaker` that limits-breaker uses, typed here because
 * `@types/opossum` lags behind opossum 9 and 10. Both major versions satisfy it.
 */
export interface OpossumBreaker {
  /** Runs the breaker's action (the guard uses it to report failures). */
  fire(...args: unknown[]): Promise<unknown>;
  /** Forces the circuit OPEN. */
  open(): void;
  /** Forces the circuit CLOSED. */
  close(): void;
  /** Stops the breaker and its timers. */
  shutdown(): void;
  /** The circuit is OPEN. */
  readonly opened: boolean;
  /** The circuit is HALF_OPEN. */
  readonly halfOpen: boolean;
  /** The circuit is CLOSED. */
  readonly closed: boolean;
  /** `shutdown()` was called. */
  readonly isShutdown: boolean;
  /** Rolling counts over the statistics window. */
  readonly stats: OpossumStats;
  /** The rolling statistics: `window` is a copy of the array of buckets, newest first. */
  readonly status: { readonly window: OpossumBucket[] };
  /** Listeners of an event. */
  listenerCount(event: string): number;
  /** Subscribes to an opossum event (`open`, `halfOpen`, `close`, `success`, `failure`, …). */
  on(event: string, listener: (...args: unknown[]) => void): this;
  /** Emits an opossum event. */
  emit(event: string, ...args: unknown[]): boolean;
  /** Removes a listener. */
  removeListener(event: string, listener: (...args: unknown[]) => void): this;
}

/** One bucket of opossum's rolling window: counts of one slice of time (a subset). */
export interface OpossumBucket {
  readonly fires: number;
  readonly successes: number;
  [key: string]: unknown;
}

/** opossum's rolling counts (a subset). */
export interface OpossumStats {
  /** Calls reported in the window. */
  fires: number;
  /** Failures reported in the window. */
  failures: number;
  /** Successes reported in the window. */
  successes: number;
  /** Calls opossum itself refused (the guard fails fast before opossum, so usually 0). */
  rejects: number;
  /** opossum timeouts (off inside the guard, which times calls itself). */
  timeouts: number;
  /** opossum fallbacks (the guard runs its own). */
  fallbacks: number;
  [key: string]: unknown;
}

/** The opossum options limits-breaker passes through. */
export interface OpossumOptions {
  /** Error percentage in the rolling window at which the circuit opens. @default 50 */
  errorThresholdPercentage?: number;
  /** Ms the circuit stays OPEN before it lets trial calls through (HALF_OPEN). @default 30000 */
  resetTimeout?: number;
  /** Length of the rolling statistics window in ms. @default 10000 */
  rollingCountTimeout?: number;
  /** Buckets in the rolling window. @default 10 */
  rollingCountBuckets?: number;
  /** Calls in the window before the circuit may open. @default 0 */
  volumeThreshold?: number;
  /** Failures during the first rolling window do not open the circuit. @default false */
  allowWarmUp?: boolean;
  /** Name used in opossum's stats. */
  name?: string;
}

/** The opossum `CircuitBreaker` constructor (v9 or v10). */
export type OpossumConstructor = new (
  action: (...args: unknown[]) => unknown,
  options: Record<string, unknown>,
) => OpossumBreaker;
