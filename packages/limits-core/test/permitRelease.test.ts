import { describe, expect, test } from 'vitest';
import { Limiter } from '../src/limiter/Limiter.js';
import { OUTCOMES, type Outcome } from '../src/permit/outcome.js';

describe('permit.release(outcome)', () => {
  test.each(OUTCOMES)('release(%s) releases the permit with that outcome', (outcome) => {
    const limiter = new Limiter({ limit: 1 });
    const seen: Outcome[] = [];
    limiter.on('release', (e) => seen.push(e.outcome));
    const permit = limiter.tryAcquire();
    expect(permit).toBeDefined();
    permit?.release(outcome);
    expect(seen).toEqual([outcome]);
    expect(limiter.inflight).toBe(0);
    expect(permit?.released).toBe(true);
  });

  test('the first outcome wins: a later release or outcome method does nothing', () => {
    const limiter = new Limiter({ limit: 1 });
    const seen: Outcome[] = [];
    limiter.on('release', (e) => seen.push(e.outcome));
    const permit = limiter.tryAcquire();
    permit?.release('dropped');
    permit?.release('success');
    permit?.success();
    expect(seen).toEqual(['dropped']);
    expect(limiter.inflight).toBe(0);
  });

  test('an outcome that is not one is refused with a TypeError naming the value, and the permit stays held', () => {
    const limiter = new Limiter({ limit: 1 });
    const permit = limiter.tryAcquire();
    expect(() => permit?.release('bogus' as Outcome)).toThrow(
      /outcome must be one of "success", "dropped", "failure", "ignore", got "bogus"/,
    );
    expect(limiter.inflight).toBe(1);
    permit?.release('ignore');
    expect(limiter.inflight).toBe(0);
  });

  test('run() with a classify that answers something that is not an outcome releases as ignore', async () => {
    const limiter = new Limiter({
      limit: 1,
      classify: () => 'bogus' as Outcome,
    });
    const seen: Outcome[] = [];
    limiter.on('release', (e) => seen.push(e.outcome));
    await limiter.run(async () => 'ok', { timeoutMs: 1_000 });
    expect(seen).toEqual(['ignore']);
  });
});
