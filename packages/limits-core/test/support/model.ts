/**
 * Shared helpers of the model-based suites (test/model.*.test.ts; limits-breaker's
 * test/model.guard.test.ts reads the same seed knobs): seeds and run counts, the checks that can be
 * switched off, and a counter of the abort listeners attached to signals. Environment knobs (CI sets
 * none of them):
 * - `LIMITS_MODEL_SEED`: base seed (default 90001; each property adds its own offset);
 * - `LIMITS_MODEL_RUNS`: runs per property (default 1000);
 * - `LIMITS_MODEL_PATH`: with the seed fast-check printed, replays one counterexample;
 * - `LIMITS_MODEL_LENGTH`: longest command sequence (default 30);
 * - `LIMITS_MODEL_SKIP_CHECKS`: checks switched off, by name (e.g. `lifo-work-conserving,run-deadline`;
 *   the names are the keys of {@link MODEL_CHECKS}), to look past a known bug for new ones;
 * - `LIMITS_MODEL_STRICT=1`: also generates fair-queue configurations with `maxCredit` below a cost.
 *   Off by default: a fair queue that failed to serve such a charge would spin forever, synchronously,
 *   where no test timeout can stop it (test/fairness.progress.test.ts checks the rule on the fair
 *   queue alone).
 */

/** Seed of the model suites: fixed, or `LIMITS_MODEL_SEED` to explore (each suite adds its own offset). */
export const MODEL_SEED = Number(process.env.LIMITS_MODEL_SEED ?? 9_0001);

/** Runs per property: `LIMITS_MODEL_RUNS`, default 1000 (CI runs at least 1,000). */
export const MODEL_RUNS = Number(process.env.LIMITS_MODEL_RUNS ?? 1000);

/**
 * `fc.assert` parameters for one property: a seed derived from the suite seed, `numRuns`, and — when
 * `LIMITS_MODEL_PATH` is set with `LIMITS_MODEL_SEED` — the replay path fast-check printed.
 */
export function modelParams(offset: number): { seed: number; numRuns: number; path?: string } {
  const path = process.env.LIMITS_MODEL_PATH;
  return {
    seed: MODEL_SEED + offset,
    numRuns: MODEL_RUNS,
    ...(path === undefined || path === '' ? {} : { path }),
  };
}

interface Registration {
  listener: unknown;
  once: boolean;
}

/**
 * Counts `abort` listeners on AbortSignals by wrapping `AbortSignal.prototype.addEventListener` and
 * `removeEventListener` (a `once` listener counts as gone once its signal aborted). Install before a
 * suite, uninstall after.
 */
export class AbortListenerCounter {
  readonly #listeners = new WeakMap<AbortSignal, Registration[]>();
  #installed = false;
  #add: PropertyDescriptor | undefined;
  #remove: PropertyDescriptor | undefined;

  install(): void {
    if (this.#installed) return;
    this.#installed = true;
    const proto = AbortSignal.prototype as unknown as Record<string, unknown>;
    this.#add = Object.getOwnPropertyDescriptor(proto, 'addEventListener');
    this.#remove = Object.getOwnPropertyDescriptor(proto, 'removeEventListener');
    const baseAdd = EventTarget.prototype.addEventListener;
    const baseRemove = EventTarget.prototype.removeEventListener;
    const map = this.#listeners;
    Object.defineProperty(proto, 'addEventListener', {
      configurable: true,
      writable: true,
      value(this: AbortSignal, type: string, listener: unknown, options?: unknown) {
        if (type === 'abort' && listener != null) {
          const capture = captureOf(options);
          let list = map.get(this);
          if (list === undefined) {
            list = [];
            map.set(this, list);
          }
          if (!list.some((r) => r.listener === listener && !capture)) {
            const once =
              typeof options === 'object' &&
              options !== null &&
              Boolean((options as { once?: unknown }).once);
            if (!capture) list.push({ listener, once });
          }
        }
        return baseAdd.call(
          this,
          type,
          listener as Parameters<typeof baseAdd>[1],
          options as Parameters<typeof baseAdd>[2],
        );
      },
    });
    Object.defineProperty(proto, 'removeEventListener', {
      configurable: true,
      writable: true,
      value(this: AbortSignal, type: string, listener: unknown, options?: unknown) {
        if (type === 'abort' && !captureOf(options)) {
          const list = map.get(this);
          if (list !== undefined) {
            const i = list.findIndex((r) => r.listener === listener);
            if (i >= 0) list.splice(i, 1);
          }
        }
        return baseRemove.call(
          this,
          type,
          listener as Parameters<typeof baseAdd>[1],
          options as Parameters<typeof baseRemove>[2],
        );
      },
    });
  }

  uninstall(): void {
    if (!this.#installed) return;
    this.#installed = false;
    const proto = AbortSignal.prototype as unknown as Record<string, unknown>;
    if (this.#add === undefined) delete proto.addEventListener;
    else Object.defineProperty(proto, 'addEventListener', this.#add);
    if (this.#remove === undefined) delete proto.removeEventListener;
    else Object.defineProperty(proto, 'removeEventListener', this.#remove);
  }

  /** `abort` listeners still attached to `signal` (through addEventListener). */
  count(signal: AbortSignal): number {
    const list = this.#listeners.get(signal);
    if (list === undefined) return 0;
    return list.filter((r) => !(r.once && signal.aborted)).length;
  }
}

function captureOf(options: unknown): boolean {
  if (typeof options === 'boolean') return options;
  return (
    typeof options === 'object' &&
    options !== null &&
    Boolean((options as { capture?: unknown }).capture)
  );
}

/**
 * The checks of the model suites that `LIMITS_MODEL_SKIP_CHECKS` can switch off, each named by the
 * rule it checks. CI sets nothing: every check runs.
 */
export const MODEL_CHECKS = {
  'bad-options':
    'bad acquire options are refused through a rejected promise (one channel) and change nothing',
  'bad-limit':
    "an algorithm's NaN, ±Infinity or negative limit is not used: capacity stays a whole number ≥ probeSlots",
  'zero-rtt': 'Gradient fed calls that take no time keeps a whole, finite limit',
  'fair-credit': 'a fair queue serves a charge above maxCredit (with LIMITS_MODEL_STRICT=1)',
  'partition-reach': "a cost above a partition's reach is refused at admission, not queued forever",
  'run-deadline': 'a run() with a time limit is answered at its deadline and its signal aborts',
  'run-signal':
    'an abortable run() task gets a signal of its own; the shared inert signal keeps no listener',
  'past-deadline': "a deadline already past (or timeoutMs 0) is refused with reason 'deadline'",
  'lifo-work-conserving': 'in LIFO order the waiter next in line never waits when it fits',
  'clock-jump':
    'a clock that jumps neither keeps waiters past their wait nor poisons the service-time estimate',
} as const;

/** The name of a check of the model suites (a key of {@link MODEL_CHECKS}). */
export type ModelCheck = keyof typeof MODEL_CHECKS;

/**
 * Checks switched off, from `LIMITS_MODEL_SKIP_CHECKS` (comma-separated names): to look past a
 * known bug for new ones. An unknown name is an error listing the known ones.
 */
export const skippedChecks: ReadonlySet<ModelCheck> = new Set(
  (process.env.LIMITS_MODEL_SKIP_CHECKS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      if (!Object.hasOwn(MODEL_CHECKS, s)) {
        throw new Error(
          `LIMITS_MODEL_SKIP_CHECKS: unknown check "${s}"; known: ${Object.keys(MODEL_CHECKS).join(', ')}`,
        );
      }
      return s as ModelCheck;
    }),
);

/** Whether the check `name` runs (see {@link skippedChecks}). */
export function checks(name: ModelCheck): boolean {
  return !skippedChecks.has(name);
}

/** Longest command sequence: `LIMITS_MODEL_LENGTH`, default 30 (short keeps each suite at seconds). */
export const MODEL_LENGTH = Number(process.env.LIMITS_MODEL_LENGTH ?? 30);
