import { LimitsError } from 'limits-core';

/**
 * The circuit is OPEN (or HALF_OPEN with every trial slot taken): the call failed fast without
 * touching the dependency or the limiter. `code` is `CIRCUIT_OPEN`.
 */
export class CircuitOpenError extends LimitsError {
  static readonly code = 'CIRCUIT_OPEN';
  /** The circuit state when the call was refused. */
  readonly state: 'OPEN' | 'HALF_OPEN';

  constructor(state: 'OPEN' | 'HALF_OPEN') {
    super(
      CircuitOpenError.code,
      state === 'OPEN'
        ? 'limits: circuit open, failing fast'
        : 'limits: circuit half-open and every trial slot is taken, failing fast',
    );
    this.name = 'CircuitOpenError';
    this.state = state;
  }
}

/**
 * The call did not finish within the guard's `timeoutMs`, counted from `fire()`. Its caller was
 * answered at that deadline. A call still waiting for a permit then left the limiter's queue; a
 * running one was aborted (its signal fired) and keeps its permit until it really ends. `code` is
 * `CALL_TIMEOUT`; `name` is `TimeoutError`, so limits-core classifies it as a dropped sample.
 */
export class CallTimeoutError extends LimitsError {
  static readonly code = 'CALL_TIMEOUT';
  /** The guard's `timeoutMs`. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(CallTimeoutError.code, `limits: call timed out after ${timeoutMs} ms`);
    this.name = 'TimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/** The error of a call answered because the guard shut down: `code` `SHUTDOWN`. */
export function shutDownError(): LimitsError {
  return new LimitsError('SHUTDOWN', 'limits: guard shut down');
}

/** `ctx.hold()` called when the call cannot hold: `code` `HOLD_STATE`. */
export function holdStateError(message: string): LimitsError {
  return new LimitsError('HOLD_STATE', `limits: ${message}`);
}
