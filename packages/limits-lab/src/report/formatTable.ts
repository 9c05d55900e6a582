import type { SimResult } from '../sim/SimResult.js';
import { COLUMNS } from './format.js';
import type { RunInfo } from './RunInfo.js';

/**
 * A plain-text table of a run, one row per configuration (columns: see the README's "Output
 * columns"), under a line naming the run. Deterministic: the same results give the same text.
 */
export function formatTable(results: readonly SimResult[], info: RunInfo): string {
  const rows = [COLUMNS.map(([h]) => h), ...results.map((r) => COLUMNS.map(([, cell]) => cell(r)))];
  const widths = (rows[0] as string[]).map((_, i) =>
    Math.max(...rows.map((row) => (row[i] as string).length)),
  );
  const line = (row: string[]) =>
    row
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)))
      .join('  ')
      .trimEnd();
  const first = results[0];
  const arrivals = first === undefined ? 0 : first.arrivals;
  const seconds = first === undefined ? 0 : first.durationMs / 1000;
  const spikes =
    first === undefined || first.spikes.length === 0
      ? ''
      : `; spikes ${first.spikes.map((s) => `${s.fromMs}-${s.toMs} ms`).join(', ')}`;
  return [
    `${info.title}: ${info.loop}, ${arrivals} requests over ${seconds.toFixed(1)} s, seed ${info.seed}${spikes}`,
    '',
    line(rows[0] as string[]),
    line((widths as number[]).map((w) => '-'.repeat(w))),
    ...rows.slice(1).map(line),
    '',
  ].join('\n');
}
