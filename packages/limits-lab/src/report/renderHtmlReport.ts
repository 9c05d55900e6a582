import { renderTimelineSvg } from '../renderTimelineSvg.js';
import type { SimResult } from '../sim/SimResult.js';
import { COLUMNS } from './format.js';
import type { RunInfo } from './RunInfo.js';

const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * One self-contained HTML page (no script, no external resource) of a run: the table of
 * {@link formatTable} and, side by side, each configuration's timeline drawn by
 * `renderTimelineSvg` (limit and in flight, latency, calls per second; spikes shaded).
 * Deterministic: no date, no path, the same results give the same bytes.
 */
export function renderHtmlReport(results: readonly SimResult[], info: RunInfo): string {
  const head = COLUMNS.map(([h]) => `<th>${escapeHtml(h)}</th>`).join('');
  const rows = results
    .map((r) => `<tr>${COLUMNS.map(([, cell]) => `<td>${escapeHtml(cell(r))}</td>`).join('')}</tr>`)
    .join('\n');
  const charts = results
    .filter((r) => r.timeline !== undefined)
    .map(
      (r) =>
        `<figure>${renderTimelineSvg([{ name: r.name, timeline: r.timeline as NonNullable<SimResult['timeline']> }], { title: r.name, width: 640 })}</figure>`,
    )
    .join('\n');
  const title = escapeHtml(`${info.title} — limits-lab`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${title}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin-bottom: 24px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; }
</style>
</head>
<body>
<h1>${escapeHtml(info.title)}</h1>
<p>${escapeHtml(`${info.loop}, seed ${info.seed}`)}</p>
<table>
<thead><tr>${head}</tr></thead>
<tbody>
${rows}
</tbody>
</table>
<div class="charts">
${charts}
</div>
</body>
</html>
`;
}
