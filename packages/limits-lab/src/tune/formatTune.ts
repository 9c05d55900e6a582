import { COLUMNS } from '../report/format.js';
import type { TuneResult } from './tune.js';

/** Quotes a command-line argument for a POSIX shell when it needs it. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * A tuning run as text: what was searched, the Pareto front (the table's columns, with each
 * candidate's spec), and the exact command line that reruns the best candidate.
 * @param command - the command line before `--config`, e.g. `limits-lab model s1.lab.json --seed 1`.
 */
export function formatTune(result: TuneResult, command: string): string {
  const feasible = result.trials.filter((t) => t.feasible).length;
  const cols = COLUMNS.slice(1);
  const rows = [
    ['spec', ...cols.map(([h]) => h)],
    ...result.front.map((t) => [t.spec, ...cols.map(([, cell]) => cell(t.result))]),
  ];
  const widths = (rows[0] as string[]).map((_, i) =>
    Math.max(...rows.map((r) => (r[i] as string).length)),
  );
  const line = (r: string[]) =>
    r
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)))
      .join('  ')
      .trimEnd();
  const out = [
    `tune: ${result.mode === 'grid' ? 'grid' : 'random search'}, ${result.trials.length} candidates, ${feasible} meet "${result.objective.text}"`,
    '',
  ];
  if (result.front.length === 0) {
    out.push('no candidate meets the objective', '');
    return out.join('\n');
  }
  out.push(
    `Pareto front (${result.objective.metric} against ${result.objective.metric === 'p99' || result.objective.metric === 'p50' ? 'goodput' : 'p99'}):`,
    '',
    line(rows[0] as string[]),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.slice(1).map(line),
    '',
  );
  const best = result.best;
  if (best !== undefined) out.push(`best: ${command} --config ${shellQuote(best.spec)}`, '');
  return out.join('\n');
}
