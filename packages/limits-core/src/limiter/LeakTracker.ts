import type { EventEmitter } from 'eventemitter3';
import type { MonotonicTime } from '../internal/MonotonicTime.js';
import type { Outcome } from '../permit/outcome.js';
import { Permit, type PermitOwner } from '../permit/Permit.js';
import { emitSafely, listeners } from './emit.js';
import type { LimiterEvents } from './events.js';

/**
 * The real timer functions, read once: leak tracking follows the garbage collector, not the
 * limiter's (possibly injected) clock, and must keep working under test fake timers installed later.
 */
const setTimer = globalThis.setTimeout;
const clearTimer = globalThis.clearTimeout;

/** A permit still unreleased this long after its grant is registered with the collector's registry. */
export const LEAK_WINDOW_MS = 100;
/** ...or once this many permits were granted since the last check (bounds what the window retains). */
export const LEAK_BATCH = 1024;

/**
 * @internal The record kept for one registered permit (never the permit itself: the registry holds it
 * strongly). It becomes the permit's owner, so releasing the permit unregisters it on the way to the
 * limiter while unregistered permits release with no extra cost.
 */
export class TrackedPermit implements PermitOwner {
  constructor(
    readonly tracker: LeakTracker,
    readonly owner: PermitOwner,
    /** Units the permit holds. */
    readonly cost: number,
    /** When it was granted (the limiter's time), `NaN` when untimed. */
    readonly startTime: number,
    /** Where it was acquired (`trackLeaks: 'stack'`). */
    readonly stack: string | undefined,
  ) {}

  /** @internal */
  _release(permit: Permit, outcome: Outcome): void {
    this.tracker.untrack(this);
    this.owner._release(permit, outcome);
  }
}

/**
 * @internal Finds permits that are garbage-collected before their outcome was reported, with a
 * `FinalizationRegistry`. Registering costs about 0.3–0.6 µs per object on Node 20 (measured:
 * several times a whole `acquire()`), so most permits never pay it: a granted permit first waits in a
 * plain array, and only those still unreleased `LEAK_WINDOW_MS` later (or `LEAK_BATCH` grants later)
 * are registered — a leaked permit is among them, and a call held that long can afford it. With
 * `stacks`, every permit is registered at once with the stack of its acquisition (debugging only).
 */
export class LeakTracker {
  readonly #registry: FinalizationRegistry<TrackedPermit>;
  readonly #owner: PermitOwner & EventEmitter<LimiterEvents>;
  readonly #time: MonotonicTime;
  readonly #reclaimUnits: (cost: number) => void;
  readonly #stacks: boolean;
  /**
   * The window: permits granted since the last check, in a preallocated array reused across windows
   * (a fresh, growing array per window was about 16 bytes of garbage per grant, enough to add a
   * scavenge to every drain of a long queue); slots past `#youngCount` are empty.
   */
  readonly #young: Array<Permit | undefined> = new Array<Permit | undefined>(LEAK_BATCH).fill(
    undefined,
  );
  #youngCount = 0;
  #timer: unknown = undefined;
  #warned = false;

  /**
   * The tracker for a limiter's `trackLeaks` option: `undefined` when it is `off` (or the runtime
   * has no `FinalizationRegistry`). See the constructor for the parameters.
   */
  static create(
    trackLeaks: 'off' | 'on' | 'stack',
    owner: PermitOwner & EventEmitter<LimiterEvents>,
    time: MonotonicTime,
    reclaim: (cost: number) => void,
  ): LeakTracker | undefined {
    if (trackLeaks === 'off' || typeof FinalizationRegistry !== 'function') return undefined;
    return new LeakTracker(owner, trackLeaks === 'stack', time, reclaim);
  }

  /**
   * @param owner - the limiter the permits release to (and that emits `leak`).
   * @param stacks - record where each permit was acquired.
   * @param time - the limiter's time (how long a leaked permit was held).
   * @param reclaim - gives a leaked permit's units back to the limiter (released as `ignore`, untimed).
   */
  constructor(
    owner: PermitOwner & EventEmitter<LimiterEvents>,
    stacks: boolean,
    time: MonotonicTime,
    reclaim: (cost: number) => void,
  ) {
    this.#owner = owner;
    this.#stacks = stacks;
    this.#time = time;
    this.#reclaimUnits = reclaim;
    this.#registry = new FinalizationRegistry((record) => this.#reclaim(record));
  }

  /** A permit was handed to user code. */
  track(permit: Permit): void {
    if (this.#stacks) {
      this.#register(permit, new Error('permit acquired here').stack);
      return;
    }
    const n = this.#youngCount;
    this.#young[n] = permit;
    this.#youngCount = n + 1;
    if (n === 0) {
      const timer = setTimer(this.#flush, LEAK_WINDOW_MS) as unknown as { unref?: () => void };
      timer.unref?.();
      this.#timer = timer;
    } else if (n + 1 >= LEAK_BATCH) {
      this.#flush();
    }
  }

  /** A registered permit was released. */
  untrack(record: TrackedPermit): void {
    this.#registry.unregister(record);
  }

  /** Registers the permits of the window that are still unreleased. */
  readonly #flush = (): void => {
    if (this.#timer !== undefined) {
      clearTimer(this.#timer as Parameters<typeof clearTimer>[0]);
      this.#timer = undefined;
    }
    const young = this.#young;
    const n = this.#youngCount;
    this.#youngCount = 0;
    for (let i = 0; i < n; i++) {
      const permit = young[i] as Permit;
      // The slot is emptied: the window retains nothing once checked.
      young[i] = undefined;
      if (!permit.released) this.#register(permit, undefined);
    }
  };

  #register(permit: Permit, stack: string | undefined): void {
    const record = new TrackedPermit(this, this.#owner, permit.cost, permit.startTime, stack);
    this.#registry.register(permit, record, record);
    Permit._retarget(permit, record);
  }

  /**
   * A tracked permit was collected without an outcome (called from the collector's cleanup task):
   * warns once, emits `leak`, and gives its units back.
   */
  #reclaim(record: TrackedPermit): void {
    const heldMs = Number.isNaN(record.startTime)
      ? Number.NaN
      : Math.max(0, this.#time.now() - record.startTime);
    this.#warnOnce();
    const owner = this.#owner;
    if (listeners(owner).leak !== undefined) {
      emitSafely(owner, 'leak', {
        cost: record.cost,
        heldMs,
        ...(record.stack === undefined ? {} : { stack: record.stack }),
      });
    }
    this.#reclaimUnits(record.cost);
  }

  /** Emits the process warning about a reclaimed permit, once per limiter. */
  #warnOnce(): void {
    if (this.#warned) return;
    this.#warned = true;
    const warn = (globalThis as { process?: { emitWarning?: (...args: unknown[]) => void } })
      .process?.emitWarning;
    try {
      warn?.call(
        (globalThis as { process?: unknown }).process,
        'limits: a permit was garbage-collected before success(), dropped() or ignore() was ' +
          "called; its capacity was reclaimed (released as ignore). Listen to the limiter's " +
          '"leak" event, or set trackLeaks: "stack" to see where it was acquired. ' +
          '(Reported once per limiter.)',
        { code: 'LIMITS_PERMIT_LEAK', type: 'LimitsWarning' },
      );
    } catch {
      // A warning that cannot be emitted must not stop the reclaim.
    }
  }
}
