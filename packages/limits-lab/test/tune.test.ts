import { describe, expect, it } from 'vitest';
import { parseObjective } from '../src/tune/objective.js';
import { paretoFront } from '../src/tune/pareto.js';
import { candidates, parseSearchSpace } from '../src/tune/searchSpace.js';

describe('parseObjective', () => {
  it('reads a goal and its bounds', () => {
    expect(parseObjective('max goodput, p99<=500, refused < 10')).toEqual({
      direction: 'max',
      metric: 'goodput',
      constraints: [
        { metric: 'p99', op: '<=', value: 500 },
        { metric: 'refused', op: '<', value: 10 },
      ],
      text: 'max goodput, p99<=500, refused < 10',
    });
  });

  it.each([
    ['goodput', /must start with "max <metric>" or "min <metric>"/],
    ['max goodput, p99=500', /bound "p99=500" must be <metric><op><number>/],
    ['min latency', /unknown metric "latency"/],
  ])('refuses %j', (text, message) => {
    expect(() => parseObjective(text)).toThrow(message);
  });
});

describe('the search space', () => {
  it('enumerates a whole grid, fixed options kept', () => {
    const space = parseSearchSpace('vegas:maxLimit=10|20,smoothing=0.5,maxQueued=0|5');
    expect(space).toMatchObject({ algorithm: 'vegas', mode: 'grid', size: 4 });
    expect(candidates(space, 100, 1)).toEqual([
      'vegas:smoothing=0.5,maxLimit=10,maxQueued=0',
      'vegas:smoothing=0.5,maxLimit=10,maxQueued=5',
      'vegas:smoothing=0.5,maxLimit=20,maxQueued=0',
      'vegas:smoothing=0.5,maxLimit=20,maxQueued=5',
    ]);
  });

  it('samples distinct grid points, and random points in ranges, the same for a seed', () => {
    const grid = parseSearchSpace('aimd:maxLimit=1|2|3|4|5|6|7|8|9|10');
    const some = candidates(grid, 4, 3);
    expect(new Set(some).size).toBe(4);
    expect(candidates(grid, 4, 3)).toEqual(some);
    const random = parseSearchSpace('vegas:maxLimit=10..100,smoothing=0.1..0.9');
    expect(random.mode).toBe('random');
    const drawn = candidates(random, 50, 7);
    expect(drawn).toEqual(candidates(random, 50, 7));
    expect(drawn).not.toEqual(candidates(random, 50, 8));
    for (const spec of drawn) {
      const m = /^vegas:maxLimit=(\d+),smoothing=([\d.]+)$/.exec(spec);
      expect(m).not.toBeNull();
      expect(Number(m?.[1])).toBeGreaterThanOrEqual(10);
      expect(Number(m?.[1])).toBeLessThanOrEqual(100);
      expect(Number(m?.[2])).toBeGreaterThanOrEqual(0.1);
      expect(Number(m?.[2])).toBeLessThanOrEqual(0.9);
    }
    expect(candidates(parseSearchSpace('vegas'), 1, 1)).toEqual(['vegas']);
  });

  it('refuses a pair without a value and an empty range', () => {
    expect(() => parseSearchSpace(':x=1')).toThrow(/must start with an algorithm/);
    expect(() => parseSearchSpace('vegas:maxLimit')).toThrow(
      /must be key=value, key=a\|b\|c or key=lo\.\.hi/,
    );
    expect(() => parseSearchSpace('vegas:maxLimit=5..5')).toThrow(/must have lo < hi/);
  });
});

describe('paretoFront', () => {
  it('keeps the points no other beats on both axes, best first', () => {
    const points = [
      { id: 'a', x: 10, y: 1 },
      { id: 'b', x: 8, y: 5 },
      { id: 'c', x: 8, y: 4 },
      { id: 'd', x: 5, y: 5 },
      { id: 'e', x: 3, y: 9 },
      { id: 'f', x: Number.NaN, y: 100 },
    ];
    expect(
      paretoFront(
        points,
        (p) => p.x,
        (p) => p.y,
      ).map((p) => p.id),
    ).toEqual(['a', 'b', 'e']);
  });
});
