import type { Outcome } from './outcome.js';

/** @internal What a permit reports back to: the limiter that granted it. */
export interface PermitOwner {
  /** @internal */
  _release(permit: Permit, outcome: Outcome): void;
}

/**
 * The right to run one call (of `cost` units) through a limiter. Report how the call ended exactly
 * once, when it really ended: `success()`, `dropped()` or `ignore()`. The first call wins; later
 * calls do nothing, so a permit can never be returned twice. `using permit = await limiter.acquire()`
 * releases it with `ignore` at the end of the block if nothing else did.
 *
 * @example
 * ```ts
 * const permit = await limiter.acquire();
 * try { await call(); permit.success(); }
 * catch (e) { isTimeout(e) ? permit.dropped() : permit.ignore(); throw e; }
 * ```
 */
export class Permit {
  /** Units of capacity this permit holds. */
  readonly cost: number;
  /** When the permit was granted (clock ms), or `NaN` when the limiter does not time calls. */
  readonly startTime: number;
  /** Units in flight right after this permit was granted, itself included. */
  readonly inflight: number;
  #owner: PermitOwner | undefined;

  /** @internal Permits are made by a limiter. */
  constructor(owner: PermitOwner, cost: number, startTime: number, inflight: number) {
    this.#owner = owner;
    this.cost = cost;
    this.startTime = startTime;
    this.inflight = inflight;
  }

  /** True once an outcome was reported (the capacity is back with the limiter). */
  get released(): boolean {
    return this.#owner === undefined;
  }

  /** The call succeeded: a normal latency sample. */
  success(): void {
    this.#settle('success');
  }

  /** The call ended in a congestion signal (timeout, overload reply): the algorithm backs off. */
  dropped(): void {
    this.#settle('dropped');
  }

  /** The call says nothing about the downstream's load (or never started): no sample. */
  ignore(): void {
    this.#settle('ignore');
  }

  /** Releases with `ignore` if no outcome was reported (for `using`). */
  [Symbol.dispose](): void {
    this.#settle('ignore');
  }

  #settle(outcome: Outcome): void {
    const owner = this.#owner;
    if (owner === undefined) return;
    this.#owner = undefined;
    owner._release(this, outcome);
  }
}
