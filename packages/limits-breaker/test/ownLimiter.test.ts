import { AimdLimit, FixedLimit, Limiter, VegasLimit } from 'limits-core';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { guard } from '../src/guard.js';
import { opossum9 } from './support/opossum.js';

/** The `VegasLimit`s built through limits-core's public entry (the one the guard imports). */
const built = vi.hoisted(() => ({ vegas: [] as unknown[] }));

vi.mock('limits-core', async (importOriginal) => {
  const core = await importOriginal<typeof import('limits-core')>();
  class CountedVegasLimit extends core.VegasLimit {
    constructor(...args: ConstructorParameters<typeof core.VegasLimit>) {
      super(...args);
      built.vegas.push(this);
    }
  }
  return { ...core, VegasLimit: CountedVegasLimit };
});

const CircuitBreaker = opossum9;
const action = async () => 'ok';

describe("the guard's own limiter builds only the algorithm it uses", () => {
  afterEach(() => {
    built.vegas.length = 0;
  });

  test("without a limit or an algorithm, one VegasLimit is built: the limiter's algorithm", async () => {
    const g = guard(action, { CircuitBreaker, timeoutMs: false });
    expect(built.vegas).toHaveLength(1);
    expect(g.limiter.algorithm).toBe(built.vegas[0]);
    await g.shutdown();
  });

  test('with an algorithm of its own, no VegasLimit is built', async () => {
    const algorithm = new AimdLimit();
    const g = guard(action, { CircuitBreaker, timeoutMs: false, limiter: { algorithm } });
    expect(built.vegas).toHaveLength(0);
    expect(g.limiter.algorithm).toBe(algorithm);
    await g.shutdown();
  });

  test('with a VegasLimit of its own, that one only is built', async () => {
    const algorithm = new VegasLimit({ maxLimit: 50 });
    const g = guard(action, { CircuitBreaker, timeoutMs: false, limiter: { algorithm } });
    expect(built.vegas).toEqual([algorithm]);
    expect(g.limiter.algorithm).toBe(algorithm);
    await g.shutdown();
  });

  test('with a fixed limit, no VegasLimit is built', async () => {
    const g = guard(action, { CircuitBreaker, timeoutMs: false, limiter: { limit: 3 } });
    expect(built.vegas).toHaveLength(0);
    expect(g.limiter.algorithm).toBeInstanceOf(FixedLimit);
    await g.shutdown();
  });

  test('with a shared limiter, no VegasLimit is built', async () => {
    const shared = new Limiter({ limit: 2 });
    const g = guard(action, { CircuitBreaker, timeoutMs: false, limiter: shared });
    expect(built.vegas).toHaveLength(0);
    expect(g.limiter).toBe(shared);
    await g.shutdown();
  });
});
