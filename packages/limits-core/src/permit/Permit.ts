/// <reference lib="esnext.disposable" preserve="true" />
// Permit has a [Symbol.dispose] method: the reference above keeps the published Permit.d.ts
// typechecking for users whose lib lacks ESNext.Disposable (and who have no @types/node).
import { formatValue } from '../internal/validate.js';
import { OUTCOMES, type Outcome } from './outcome.js';

/** @internal What a permit reports back to: the limiter that granted it. */
export interface PermitOwner {
  /** @internal */
  _release(permit: Permit, outcome: Outcome): void;
}

/**
 * The right to run one call (of `cost` units) through a limiter. Report how the call ended exactly
 * once, when it really ended: `success()`, `dropped()` or `ignore()`. The first call wins; later
 * calls do nothing, so a permit can never be returned twice. `using permit = await limiter.acquire()`
 * releases it with `ignore` at the end of the block if nothing else did. A permit from `acquire()` or
 * `tryAcquire()` that is garbage-collected without an outcome is reclaimed by its limiter and
 * reported (the `leak` event; see `trackLeaks`).
 *
 * @example
 * ```ts
 * const permit = await limiter.acquire();
 * try { await call(); permit.success(); }
 * catch (e) { isTimeout(e) ? permit.dropped() : permit.ignore(); throw e; }
 * ```
 */
export class Permit {
  // Fields are `declare`d and assigned in the constructor: no define-as-undefined first, no field
  // initializer per class of the Permit → Waiter → *Waiter chain. See Waiter for `startTime`.
  /** Units of capacity this permit holds. */
  declare readonly cost: number;
  /**
   * When the permit was granted, in the limiter's time (its clock's ms, made monotonic: a clock that
   * jumped back reads lower), or `NaN` when the limiter does not time calls.
   */
  declare readonly startTime: number;
  /** Units in flight right after this permit was granted, itself included. */
  declare readonly inflight: number;
  #owner: PermitOwner | undefined;

  /**
   * @internal Permits are made by a limiter. A queued request's waiter is itself a permit (a
   * subclass), granted later with {@link Permit._start}: no second object per queued call.
   */
  constructor(owner: PermitOwner, cost: number, startTime: number, inflight: number) {
    this.#owner = owner;
    this.cost = cost;
    this.startTime = startTime;
    this.inflight = inflight;
  }

  /** @internal The limiter, until the permit is released (a queued waiter's abort goes to it too). */
  protected _owner(): PermitOwner | undefined {
    return this.#owner;
  }

  /** @internal Sets what a waiter learns when it is granted (a waiter's permit fields wait until then). */
  protected _start(startTime: number, inflight: number): void {
    // A waiter starts with NaN (untimed): leave it untouched then, one memory write less per grant.
    if (!Number.isNaN(startTime)) (this as { startTime: number }).startTime = startTime;
    (this as { inflight: number }).inflight = inflight;
  }

  /** True once an outcome was reported (the capacity is back with the limiter). */
  get released(): boolean {
    return this.#owner === undefined;
  }

  /** The call succeeded: a normal latency sample. */
  success(): void {
    Permit.#settle(this, 'success');
  }

  /** The call ended in a congestion signal (timeout, overload reply): the algorithm backs off. */
  dropped(): void {
    Permit.#settle(this, 'dropped');
  }

  /**
   * The call failed in a way that says nothing about the downstream's load (e.g. a 500): no sample
   * for the algorithm (as `ignore`), reported as `failure` in the limiter's `release` event.
   */
  failure(): void {
    Permit.#settle(this, 'failure');
  }

  /** The call says nothing about the downstream's load (or never started): no sample. */
  ignore(): void {
    Permit.#settle(this, 'ignore');
  }

  /**
   * Reports how the call ended with an {@link Outcome} decided elsewhere (a classifier's answer):
   * `release('dropped')` is `dropped()`, and so on. The first outcome wins; later calls do nothing.
   * @throws TypeError when `outcome` is not one of `success`, `dropped`, `failure`, `ignore` (the
   *   permit stays held).
   */
  release(outcome: Outcome): void {
    if (!OUTCOMES.includes(outcome)) {
      throw new TypeError(
        `limits: permit.release(outcome): outcome must be one of ${OUTCOMES.map((o) => `"${o}"`).join(', ')}, got ${formatValue(outcome)}`,
      );
    }
    Permit.#settle(this, outcome);
  }

  /** Releases with `ignore` if no outcome was reported (for `using`). */
  [Symbol.dispose](): void {
    Permit.#settle(this, 'ignore');
  }

  /** @internal Marks the permit released without reporting (its units are released elsewhere). */
  static _detach(permit: Permit): void {
    permit.#owner = undefined;
  }

  /**
   * @internal Routes the permit's release through `owner` (leak tracking's record, which forwards to
   * the limiter). Does nothing once released.
   */
  static _retarget(permit: Permit, owner: PermitOwner): void {
    if (permit.#owner !== undefined) permit.#owner = owner;
  }

  /**
   * Static so that permits carry no private-method brand (one field less in each of them, and a
   * queued waiter is a permit).
   */
  static #settle(permit: Permit, outcome: Outcome): void {
    const owner = permit.#owner;
    if (owner === undefined) return;
    permit.#owner = undefined;
    owner._release(permit, outcome);
  }
}
