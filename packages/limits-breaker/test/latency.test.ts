import { describe, expect, test } from 'vitest';
import { LatencyWindow } from '../src/LatencyWindow.js';

describe('LatencyWindow', () => {
  test('past 1,024 calls in a slice it samples one in 16 with weight 16; the max stays exact', () => {
    let now = 0;
    const w = new LatencyWindow(60_000, 6, () => now);
    for (let i = 0; i < 1024; i++) w.record(10, now);
    // 1,600 more calls: 100 recorded with weight 16; one slow call among the skipped ones.
    for (let i = 0; i < 1600; i++) w.record(i === 7 ? 900 : 20, now);
    const s = w.summary();
    expect(s.count).toBe(1024 + 1600);
    expect(s.max).toBeCloseTo(900, 0);
    expect(s.p50).toBeCloseTo(20, 0);
    // A new slice records every call again.
    now = 10_000;
    w.record(30, now);
    expect(w.summary().count).toBe(1024 + 1600 + 1);
  });
});
