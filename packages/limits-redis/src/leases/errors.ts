import { LimitsError } from 'limits-core';

/** What the pool was doing when Redis failed. */
export type LeasePoolOperation = 'acquire' | 'release' | 'renew' | 'status';

/**
 * Redis failed or did not answer within `timeoutMs`, and the pool's `onFailure` is
 * `'closed'`: the call is refused. `code` is `REDIS_UNAVAILABLE`; `cause` is the client's error
 * (or the timeout).
 */
export class RedisUnavailableError extends LimitsError {
  static readonly code = 'REDIS_UNAVAILABLE';
  /** The operation that failed. */
  readonly operation: LeasePoolOperation;
  /** Redis did not answer within the timeout (as opposed to answering with an error). */
  readonly timedOut: boolean;

  /**
   * @param message - what failed, with the numbers.
   * @param operation - the operation that failed.
   * @param timedOut - whether it timed out.
   * @param cause - the underlying error.
   */
  constructor(message: string, operation: LeasePoolOperation, timedOut: boolean, cause?: unknown) {
    super(RedisUnavailableError.code, message, cause === undefined ? undefined : { cause });
    this.name = 'RedisUnavailableError';
    this.operation = operation;
    this.timedOut = timedOut;
  }
}

/** @internal A Redis call that did not answer in time. */
export class RedisTimeoutError extends Error {
  constructor(ms: number) {
    super(`limits: Redis did not answer within ${ms} ms`);
    this.name = 'TimeoutError';
  }
}

/** @internal Redis is known to be down and another call is already probing it: failed at once. */
export class RedisDownError extends Error {
  constructor(cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(`limits: Redis is down (${why}); another call is probing it`, { cause });
    this.name = 'RedisDownError';
  }
}
