/**
 * The source of time for a limiter: `now()` in milliseconds plus one-shot timers.
 * Inject a fake one in tests so every timing rule runs deterministically.
 */
export interface Clock {
  /** Current time in milliseconds (monotonic). */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds; returns a handle for {@link Clock.clearTimeout}. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a timer made by {@link Clock.setTimeout}; unknown handles are ignored. */
  clearTimeout(handle: unknown): void;
}

/**
 * The `performance` object, read once: on Node the global is a lazy accessor, and reading it on
 * every `now()` (a few times per call) cost more than the clock read itself.
 */
const perf = globalThis.performance;

/**
 * The default clock: `performance.now()` and Node timers that do not keep the process alive
 * (a limiter's housekeeping timers never hold a process open on their own).
 */
export const systemClock: Clock = {
  now: () => perf.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout(handle) {
    clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};
