import { describe, expect, test } from 'vitest';
import { Limiter } from '../src/limiter/Limiter.js';

describe('what a partition hands its limiters is not a limiter option', () => {
  test('an option "gate" is refused as unknown', () => {
    expect(() => new Limiter({ gate: { fits: () => true } } as never)).toThrow(
      /unknown option "gate"/,
    );
  });
});
