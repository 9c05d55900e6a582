import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../src/sim/VirtualClock.js';

describe('VirtualClock', () => {
  it('runs timers in due order, equal times in scheduling order, each at its due time', () => {
    const clock = new VirtualClock();
    const seen: string[] = [];
    const at = (label: string) => () => seen.push(`${label}@${clock.now()}`);
    clock.setTimeout(at('c'), 30);
    clock.setTimeout(at('a'), 10);
    clock.setTimeout(at('b1'), 20);
    clock.setTimeout(at('b2'), 20);
    clock.setTimeout(at('now'), -5);
    expect(clock.nextAt()).toBe(0);
    clock.runUntil(25);
    expect(seen).toEqual(['now@0', 'a@10', 'b1@20', 'b2@20']);
    expect(clock.now()).toBe(25);
    expect(clock.pending).toBe(1);
    expect(clock.step()).toBe(true);
    expect(seen.at(-1)).toBe('c@30');
    expect(clock.step()).toBe(false);
    expect(clock.nextAt()).toBe(Number.POSITIVE_INFINITY);
  });

  it('cancels a timer, runs what a timer schedules within the span, and never goes back', () => {
    const clock = new VirtualClock();
    const seen: number[] = [];
    const t = clock.setTimeout(() => seen.push(-1), 5);
    clock.clearTimeout(t);
    clock.clearTimeout('not a timer');
    clock.setTimeout(() => clock.setTimeout(() => seen.push(clock.now()), 5), 10);
    clock.runUntil(100);
    expect(seen).toEqual([15]);
    clock.schedule(50, { fire: () => seen.push(clock.now()) });
    clock.runUntil(100);
    expect(seen).toEqual([15, 100]);
  });

  it('keeps heap order over many random timers', () => {
    const clock = new VirtualClock();
    const fired: number[] = [];
    let x = 7;
    for (let i = 0; i < 2_000; i++) {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      const ms = x % 1_000;
      clock.setTimeout(() => fired.push(clock.now()), ms);
    }
    while (clock.step()) {}
    expect(fired).toHaveLength(2_000);
    expect(fired.every((t, i) => i === 0 || t >= (fired[i - 1] as number))).toBe(true);
  });
});
