// Runs the main demo (latency-spike/demo.mjs) in its short mode and checks what it prints and draws:
// the comparison table has one row per strategy with every column filled, and the SVG chart is
// well-formed with one line group per strategy.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseSvg } from './helpers/svg.mjs';

const demo = fileURLToPath(new URL('../latency-spike/demo.mjs', import.meta.url));

test('the demo prints one table row per strategy and writes an SVG with one series per strategy', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'limits-demo-'));
  try {
    const out = join(dir, 'chart.svg');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [demo, '--quick', `--out=${out}`],
      {
        timeout: 60_000,
      },
    );
    const rows = stdout.split('\n').filter((l) => l.startsWith('| '));
    const header = rows[0]
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    assert.deepEqual(header.slice(0, 2), ['strategy', 'peak in flight']);
    const body = rows.slice(2).map((r) =>
      r
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
    assert.deepEqual(
      body.map((r) => r[0]),
      ['vegas', 'vegas+breaker'],
    );
    for (const r of body) {
      assert.equal(r.length, header.length);
      assert.ok(
        r.every((c) => c !== ''),
        `empty cell in ${r}`,
      );
      assert.match(r[1], /^\d+$/);
    }
    const elements = parseSvg(readFileSync(out, 'utf8'));
    assert.equal(elements[0].name, 'svg');
    const names = new Set(
      elements.filter((e) => e.attrs.class === 'series').map((e) => e.attrs['data-series']),
    );
    assert.deepEqual([...names].sort(), ['vegas', 'vegas+breaker']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
