import fc from 'fast-check';
import { expect, test } from 'vitest';
import { seededRandom } from '../src/internal/random.js';
import { RetryBudget } from '../src/retry/RetryBudget.js';
import { RetryPolicy } from '../src/retry/RetryPolicy.js';
import { FakeClock } from './support/FakeClock.js';

type Op = { kind: 'time'; ms: number } | { kind: 'call'; failures: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 0, max: 4000 }) }),
  fc.record({ kind: fc.constant('call' as const), failures: fc.integer({ min: 0, max: 6 }) }),
);

const WINDOW_MS = 10_000;
const BUCKET_MS = WINDOW_MS / 10;

/**
 * The budget's arithmetic, recomputed from the log of requests and retries: what counts at `now`
 * is what was recorded in the current bucket or the nine before it.
 */
function counted(times: number[], now: number): number {
  const head = Math.floor(now / BUCKET_MS);
  return times.filter((t) => Math.floor(t / BUCKET_MS) > head - 10).length;
}

test('retries never exceed ratio × requests + minPerSecond × windowMs / 1000 in the window, and a refusal happens only at that bound', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(0, 0.1, 0.25, 0.5, 1, 2),
      fc.constantFrom(0, 0.2, 1, 3),
      fc.integer({ min: 1, max: 1000 }),
      fc.array(op, { minLength: 1, maxLength: 120 }),
      async (ratio, minPerSecond, seed, ops) => {
        const clock = new FakeClock(5 * WINDOW_MS);
        const budget = new RetryBudget({ ratio, minPerSecond, windowMs: WINDOW_MS, clock });
        const policy = new RetryPolicy({
          maxAttempts: 5,
          baseDelayMs: 200,
          maxDelayMs: 3000,
          budget,
          clock,
          random: seededRandom(seed),
        });
        const reserve = (minPerSecond * WINDOW_MS) / 1000;
        const requests: number[] = [];
        const retries: number[] = [];
        const violations: string[] = [];
        policy.on('retry', () => {
          const now = clock.now();
          retries.push(now);
          const r = counted(retries, now);
          const q = counted(requests, now);
          if (r > ratio * q + reserve + 1e-9)
            violations.push(`retry at ${now}: ${r} > ${ratio} × ${q} + ${reserve}`);
        });
        policy.on('budget_exhausted', () => {
          const now = clock.now();
          const r = counted(retries, now);
          const q = counted(requests, now);
          if (r + 1 <= ratio * q + reserve - 1e-9)
            violations.push(`refused at ${now} with room: ${r} + 1 ≤ ${ratio} × ${q} + ${reserve}`);
        });
        const calls: Promise<unknown>[] = [];
        for (const o of ops) {
          if (o.kind === 'time') {
            await clock.advance(o.ms);
            continue;
          }
          requests.push(clock.now());
          calls.push(
            policy
              .run(async (attempt) => {
                if (attempt <= o.failures) throw new Error('down');
                return attempt;
              })
              .catch(() => undefined),
          );
        }
        await clock.advance(5 * 3000);
        await Promise.all(calls);
        expect(violations).toEqual([]);
        expect(clock.pending).toBe(0);
        const stats = policy.stats();
        expect(stats.calls).toBe(requests.length);
        expect(stats.retries).toBe(retries.length);
        expect(stats.attempts).toBe(stats.calls + stats.retries);
      },
    ),
    { numRuns: 150 },
  );
});
