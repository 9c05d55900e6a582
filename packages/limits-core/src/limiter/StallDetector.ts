import type { Clock } from '../internal/clock.js';

/** How many recent stalls are remembered for the overlap check. */
const HISTORY = 8;

/**
 * Detects event-loop stalls (GC pauses, synchronous work) with a cheap drift timer, so RTTs measured
 * across a stall are not taken for downstream congestion.
 *
 * While the limiter has work in flight, a timer is due every `thresholdMs / 2`; when it fires more
 * than `thresholdMs` late, the loop was blocked somewhere since the previous tick, and that span is
 * recorded. A sample whose `[start, end]` overlaps a recorded span, or that ends while a tick is
 * overdue by more than the threshold (the stall is still being paid off), is reported as stalled.
 * The timer stops itself at the first tick with nothing in flight, so an idle limiter holds no timer.
 * Its ticks also drive the report of late calls (see `LateCalls`).
 */
export class StallDetector {
  readonly #clock: Clock;
  readonly #thresholdMs: number;
  readonly #intervalMs: number;
  readonly #busy: () => boolean;
  readonly #onTick: ((now: number, stalled: boolean) => void) | undefined;
  readonly #starts: number[] = [];
  readonly #ends: number[] = [];
  #next = 0;
  #timer: unknown = undefined;
  #lastTick = 0;
  /** Stalls seen since construction. */
  stalls = 0;

  /**
   * @param clock - time source and timers.
   * @param thresholdMs - a tick this much late is a stall.
   * @param busy - whether the limiter has work in flight (the timer runs only then).
   * @param onTick - called on every tick, after the stall check, with the tick's time and whether
   *   it found a stall (the limiter reports late calls from it).
   */
  constructor(
    clock: Clock,
    thresholdMs: number,
    busy: () => boolean,
    onTick?: (now: number, stalled: boolean) => void,
  ) {
    this.#clock = clock;
    this.#thresholdMs = thresholdMs;
    this.#intervalMs = thresholdMs / 2;
    this.#busy = busy;
    this.#onTick = onTick;
  }

  /** Starts the timer if it is not running (called when work is admitted). */
  arm(): void {
    if (this.#timer !== undefined) return;
    this.#lastTick = this.#clock.now();
    this.#timer = this.#clock.setTimeout(this.#tick, this.#intervalMs);
  }

  /** Stops the timer. */
  stop(): void {
    if (this.#timer === undefined) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Whether a call that ran from `start` to `end` (clock ms) overlapped a stall. */
  overlaps(start: number, end: number): boolean {
    if (this.#timer !== undefined && end - this.#lastTick > this.#intervalMs + this.#thresholdMs) {
      return true;
    }
    for (let i = 0; i < this.#starts.length; i++) {
      if (start < (this.#ends[i] as number) && end > (this.#starts[i] as number)) return true;
    }
    return false;
  }

  readonly #tick = (): void => {
    const now = this.#clock.now();
    const stalled = now - this.#lastTick > this.#intervalMs + this.#thresholdMs;
    if (stalled) {
      this.stalls++;
      this.#starts[this.#next] = this.#lastTick;
      this.#ends[this.#next] = now;
      this.#next = (this.#next + 1) % HISTORY;
    }
    this.#lastTick = now;
    this.#onTick?.(now, stalled);
    if (this.#busy()) {
      this.#timer = this.#clock.setTimeout(this.#tick, this.#intervalMs);
    } else {
      this.#timer = undefined;
    }
  };
}
