// Runs the main demo (latency-spike/demo.mjs) in its short mode and checks what it prints and draws:
// the comparison table has one column per strategy with every figure filled, the breaker's circuit
// opened during the spike, the lab command is printed, and the SVG chart is well-formed with one set
// of lines per strategy.
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

test('the demo prints one table column per strategy, the breaker opening during the spike, and an SVG with one series per strategy', async () => {
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
    const cells = (line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim());
    const rows = stdout
      .split('\n')
      .filter((l) => l.startsWith('| '))
      .map(cells);
    assert.deepEqual(rows[0], ['figure (window)', 'vegas', 'vegas+breaker']);
    const figures = new Map(rows.slice(2).map((r) => [r[0], r.slice(1)]));
    for (const [label, values] of figures) {
      assert.equal(values.length, 2, label);
      assert.ok(
        values.every((c) => c !== ''),
        `empty cell in ${label}`,
      );
    }
    for (const label of [
      '/internal p99 before spike',
      '/internal p99 during spike',
      '/internal p99 after spike',
    ]) {
      assert.ok(figures.has(label), label);
    }
    assert.match(figures.get('peak in flight during spike (calls)')[0], /^\d+$/);
    // Only the guard has a circuit; it opens during the 2 s spike (about 1 s in: its 1 s window
    // must fill with timeouts).
    const [vegasOpened, breakerOpened] = figures.get('circuit opened, into spike');
    assert.equal(vegasOpened, '—');
    const openedS = Number(breakerOpened.replace(/ s$/, ''));
    assert.ok(openedS > 0 && openedS < 2, `opened ${breakerOpened} into a 2 s spike`);
    // Closing again needs a trial call answered after the spike: within about 1.5 s of its end,
    // which the quick run's 1.5 s after the spike nearly always but not always holds.
    assert.match(figures.get('circuit closed again, after spike')[1], /^(-?\d+\.\d s|not in run)$/);
    assert.match(stdout, /^Windows: before = 1 s to 1\.5 s \(the first second warms up/m);
    assert.ok(
      stdout.includes(
        '\nnpx limits-lab model examples/latency-spike/s1.lab.json --config fixed:50 --config vegas --config gradient --out s1-lab.html\n',
      ),
    );
    const elements = parseSvg(readFileSync(out, 'utf8'));
    assert.equal(elements[0].name, 'svg');
    const names = new Set(
      elements.filter((e) => e.attrs.class === 'series').map((e) => e.attrs['data-series']),
    );
    assert.deepEqual([...names].sort(), ['vegas', 'vegas+breaker']);
    // The guard's row has its circuit band, open somewhere.
    const states = new Set(
      elements.filter((e) => e.attrs.class === 'state').map((e) => e.attrs['data-state']),
    );
    assert.ok(states.has('OPEN') && states.has('CLOSED'), [...states].join(', '));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
