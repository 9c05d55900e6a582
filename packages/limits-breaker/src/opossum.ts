/**
 * The part of opossum's `CircuitBreaker` that limits-breaker uses, typed here because
 * `@types/opossum` lags behind opossum 9 and 10. Both major versions satisfy it.
 */
export interface OpossumBreaker {
  fire(...args: unknown[]): Promise<unknown>;
  open(): void;
  close(): void;
  shutdown(): void;
  readonly opened: boolean;
  readonly halfOpen: boolean;
  readonly closed: boolean;
  readonly isShutdown: boolean;
  readonly stats: OpossumStats;
  on(event: string, listener: (...args: unknown[]) => void): this;
  emit(event: string, ...args: unknown[]): boolean;
  removeListener(event: string, listener: (...args: unknown[]) => void): this;
}

/** opossum's rolling counts (a subset). */
export interface OpossumStats {
  fires: number;
  failures: number;
  successes: number;
  rejects: number;
  timeouts: number;
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
