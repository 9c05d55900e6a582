import { describe, expect, test } from 'vitest';
import { maxReach, sharedAt } from '../src/partition/reach.js';

describe('what each partition can ever have', () => {
  test('without fractions: its reserve plus what it may borrow of the pool at the largest total', () => {
    const parts = [
      { reserved: 3, maxBorrow: Infinity },
      { reserved: 2, maxBorrow: 4 },
      { reserved: 0, maxBorrow: Infinity },
      { reserved: 0, maxBorrow: 2 },
    ];
    expect(maxReach(parts, 10)).toEqual([8, 6, 5, 2]);
  });

  test('with fractions, the largest reach may sit below the largest total (rounding), and is found', () => {
    const parts = [
      { reserved: 0.5, maxBorrow: Infinity },
      { reserved: 0.49, maxBorrow: Infinity },
      { reserved: 0, maxBorrow: Infinity },
    ];
    expect(sharedAt(parts, 200)).toBe(2);
    expect(sharedAt(parts, 199)).toBe(3);
    expect(maxReach(parts, 200)[2]).toBe(3);
  });

  test('without a maxLimit: unbounded, unless fractions take the whole pool', () => {
    expect(
      maxReach(
        [
          { reserved: 0.25, maxBorrow: 0 },
          { reserved: 2, maxBorrow: 3 },
          { reserved: 0, maxBorrow: Infinity },
        ],
        Infinity,
      ),
    ).toEqual([Infinity, 5, Infinity]);
    // 0.5 + 0.5: the pool is what rounding leaves, at most 1 unit.
    expect(
      maxReach(
        [
          { reserved: 0.5, maxBorrow: 0 },
          { reserved: 0.5, maxBorrow: 0 },
          { reserved: 0, maxBorrow: Infinity },
        ],
        Infinity,
      )[2],
    ).toBe(1);
  });
});
