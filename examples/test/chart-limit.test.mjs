// Runs examples/chart-limit in its short mode and reads the SVG it wrote: one series, the slowdown
// shaded, and a limit line that really falls inside the shaded span and climbs again after it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertExitedCleanly, runExample } from './helpers/run-example.mjs';
import { parseSvg, pathPoints } from './helpers/svg.mjs';

const script = 'chart-limit/main.mjs';

test('the chart drawn from the limiter events shows the limit falling during the shaded slowdown and rising after it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'limits-chart-limit-'));
  try {
    const out = join(dir, 'limit.svg');
    const run = await runExample(script, ['--quick', `--out=${out}`], { timeoutMs: 30_000 });
    assertExitedCleanly(assert, script, run);
    assert.match(
      run.stdout,
      new RegExp(`chart written to ${out.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
    // The text table: one row per 500 ms of the 3 s run, each with a limit and a peak in flight.
    const rows = run.stdout.match(/^ *\d+\.\ds +\d+ +\d+ +(\d+ ms|-) +\d+ +\d+$/gm) ?? [];
    assert.ok(rows.length >= 6, `table rows: ${rows.length}\n${run.stdout}`);

    const elements = parseSvg(readFileSync(out, 'utf8'));
    assert.equal(elements[0].name, 'svg');
    const series = elements.filter((e) => e.attrs.class === 'series');
    assert.deepEqual([...new Set(series.map((e) => e.attrs['data-series']))], ['vegas']);
    const marks = elements.filter((e) => e.attrs.class === 'mark');
    assert.equal(marks.length, 3); // shaded in each of the row's three panels
    // Its tooltip and legend name it with its span, e.g. "slowdown 1–2 s".
    assert.match(
      elements[elements.indexOf(marks[0]) + 1].text,
      /^slowdown \d+(\.\d+)?–\d+(\.\d+)? s$/,
    );

    // The limit is the first, solid line of the first panel; a lower limit is drawn lower (larger y).
    const panel = elements.findIndex(
      (e) => e.attrs.class === 'panel' && e.attrs['data-panel'] === '0',
    );
    const frame = elements[panel + 1]; // the panel's frame: its bottom edge is the value 0
    const bottom = Number(frame.attrs.y) + Number(frame.attrs.height);
    const limitPath = elements.slice(panel).find((e) => e.attrs.class === 'series');
    assert.equal(limitPath.attrs['stroke-dasharray'], undefined);
    const points = pathPoints(limitPath.attrs.d).map((p) => ({ x: p.x, v: bottom - p.y }));
    const from = Number(marks[0].attrs.x);
    const to = from + Number(marks[0].attrs.width);
    const before = points.filter((p) => p.x < from).map((p) => p.v);
    // The second half of the slowdown: Vegas needs a few of the slow round trips to react.
    const late = points.filter((p) => p.x > (from + to) / 2 && p.x < to).map((p) => p.v);
    const after = points.filter((p) => p.x > to).map((p) => p.v);
    assert.ok(before.length > 0 && late.length > 0 && after.length > 0);
    const lateMax = Math.max(...late);
    assert.ok(
      lateMax < 0.7 * Math.max(...before),
      `limit late in the slowdown (${lateMax}) not well below its peak before (${Math.max(...before)})`,
    );
    assert.ok(Math.max(...after) > lateMax, 'the limit did not climb after the slowdown');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
