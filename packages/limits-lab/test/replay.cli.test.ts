import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './support/cli.js';

// `limits-lab replay` end to end, on a trace written here: 100 requests/s for 12 s to a downstream
// of 50 ms, 1,500 ms from 4 s to 7 s.
const dir = mkdtempSync(join(tmpdir(), 'limits-lab-replay-'));
const trace = join(dir, 'spike.jsonl');
const lines: string[] = [];
for (let i = 0; i < 1_200; i++) {
  const start = i * 10;
  const duration = start >= 4_000 && start < 7_000 ? 1_500 : 50;
  lines.push(JSON.stringify({ start, duration, outcome: 'success' }));
}
writeFileSync(trace, `${lines.join('\n')}\n`);

describe('limits-lab replay', () => {
  it('fits the trace, replays it open loop through each configuration and reports the spike', async () => {
    const r = await cli([
      'replay',
      trace,
      '--config',
      'fixed:20',
      '--config',
      'vegas',
      '--spike',
      '4000-7000',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^spike\.jsonl: open loop, 1200 requests over \d+\.\d s, seed 1; spikes 4000-7000 ms$/m,
    );
    expect(r.stdout).toMatch(/^fixed:20 /m);
    expect(r.stdout).toMatch(/^vegas /m);
  });

  it('is deterministic for a seed, and replays in a closed loop', async () => {
    const args = ['replay', trace, '--config', 'vegas', '--seed', '3', '--json'];
    const a = await cli(args);
    expect((await cli(args)).stdout).toBe(a.stdout);
    const closed = await cli([
      'replay',
      trace,
      '--config',
      'fixed:5',
      '--closed-loop',
      '5',
      '--json',
    ]);
    expect(closed.code).toBe(0);
    const body = JSON.parse(closed.stdout);
    expect(body.loop).toBe('closed loop, 5 clients');
    expect(body.results[0].inflight.peak).toBeLessThanOrEqual(5);
  });
});
