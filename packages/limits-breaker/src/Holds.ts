import {
  checkOneOf,
  type Limiter,
  LimitsError,
  OUTCOMES,
  type Outcome,
  type Permit,
} from 'limits-core';
import { type Call, CallFlag, OUTCOME_SHIFT } from './Call.js';
import type { PermitHold } from './PermitHold.js';

/** The outcome names by their code in a call's flags (0: none stored). */
const BY_CODE: readonly (Outcome | undefined)[] = [
  undefined,
  'success',
  'dropped',
  'failure',
  'ignore',
];
const { HOLD, HOLDING, LIVE } = CallFlag;
const OUTCOME_MASK = 7 << OUTCOME_SHIFT;

/** Releases `permit` with `outcome`. */
export function releaseAs(permit: Permit, outcome: Outcome): void {
  if (outcome === 'success') permit.success();
  else if (outcome === 'dropped') permit.dropped();
  else if (outcome === 'failure') permit.failure();
  else permit.ignore();
}

/** The outcome stored in `call`'s flags, if any. */
export function storedOutcome(call: Call): Outcome | undefined {
  return BY_CODE[(call.flags & OUTCOME_MASK) >> OUTCOME_SHIFT];
}

/** Stores `outcome` in `call`'s flags (no field per call: the queue may hold 10^5 calls). */
export function storeOutcome(call: Call, outcome: Outcome): void {
  call.unmark(OUTCOME_MASK);
  call.mark(BY_CODE.indexOf(outcome) << OUTCOME_SHIFT);
}

/**
 * @internal What a hold reports to: the guard's calls in flight, which keep a held call listed (so
 * `shutdown()` aborts it and releases its permit) until its hold is released.
 */
export interface HoldOwner {
  /** The held call's permit went back: take it off the list of calls in flight. */
  _unhold(call: Call): void;
  /** The limiter, whose `leak` event reports a hold collected unreleased. */
  readonly limiter: Limiter;
}

/** One hold. It references its call; nothing of the guard's references it, so it can be collected. */
class Hold implements PermitHold {
  readonly #call: Call;
  readonly #holds: Holds;
  constructor(call: Call, holds: Holds) {
    this.#call = call;
    this.#holds = holds;
  }
  release(outcome?: Outcome): void {
    if (outcome !== undefined) checkOneOf('outcome', outcome, 'success', OUTCOMES);
    this.#holds.release(this, this.#call, outcome);
  }
}

/**
 * @internal The guard's holds (`ctx.hold()`). A hold lives in the call's flags (`HOLD`: made,
 * `HOLDING`: not released, plus an outcome code); the hold object is registered with a
 * `FinalizationRegistry`, so a hold collected unreleased releases its permit as `ignore` and is
 * reported on the limiter's `leak` event (and once as a process warning), like a leaked permit.
 */
export class Holds {
  readonly #owner: HoldOwner;
  #registry: FinalizationRegistry<Call> | undefined = undefined;
  #warned = false;

  constructor(owner: HoldOwner) {
    this.#owner = owner;
  }

  /** `ctx.hold()`. @throws LimitsError `HOLD_STATE` when the action has settled or already holds. */
  hold(call: Call): PermitHold {
    if (!call.is(LIVE) || (call.permit as Permit | undefined)?.released !== false) {
      throw new LimitsError(
        'HOLD_STATE',
        'limits: ctx.hold() must be called while the action runs, before it settles; this call has ended',
      );
    }
    if (call.is(HOLD)) {
      throw new LimitsError('HOLD_STATE', 'limits: ctx.hold() was already called for this call');
    }
    call.mark(HOLD | HOLDING);
    const hold = new Hold(call, this);
    if (typeof FinalizationRegistry === 'function') {
      this.#registry ??= new FinalizationRegistry((c) => this.#collected(c));
      this.#registry.register(hold, call, hold);
    }
    return hold;
  }

  /** `hold.release(outcome)`. */
  release(hold: Hold, call: Call, outcome: Outcome | undefined): void {
    if (!call.is(HOLDING)) return;
    call.unmark(HOLDING);
    this.#registry?.unregister(hold);
    // Released while the action runs: its permit goes back when it settles, with this outcome.
    if (call.is(LIVE)) {
      if (outcome !== undefined) storeOutcome(call, outcome);
      return;
    }
    const permit = call.permit as Permit;
    if (permit.released) return;
    this.#owner._unhold(call);
    releaseAs(permit, outcome ?? storedOutcome(call) ?? 'success');
  }

  /** A hold was collected (from the collector's cleanup task). */
  #collected(call: Call): void {
    if (!call.is(HOLDING)) return;
    call.unmark(HOLDING);
    // Dropped while the action runs: its permit goes back when it settles, as without a hold.
    if (call.is(LIVE)) return;
    const permit = call.permit as Permit;
    if (permit.released) return;
    this.#owner._unhold(call);
    permit.ignore();
    this.#report(permit);
  }

  /** Reports a reclaimed hold: the limiter's `leak` event, and a process warning once per guard. */
  #report(permit: Permit): void {
    const limiter = this.#owner.limiter;
    try {
      if (limiter.listenerCount('leak') > 0) {
        limiter.emit('leak', { cost: permit.cost, heldMs: Number.NaN });
      }
      if (!this.#warned) {
        this.#warned = true;
        const proc = (globalThis as { process?: { emitWarning?: (...a: unknown[]) => void } })
          .process;
        proc?.emitWarning?.call(
          proc,
          'limits: a permit held with ctx.hold() was garbage-collected before release() was ' +
            'called; its capacity was reclaimed (released as ignore). (Reported once per guard.)',
          { code: 'LIMITS_PERMIT_LEAK', type: 'LimitsWarning' },
        );
      }
    } catch {
      // A report that fails must not stop the reclaim (it is done).
    }
  }
}
