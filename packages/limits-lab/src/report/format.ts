import type { SimResult } from '../sim/SimResult.js';

/** A number with `digits` decimals, `—` when it is not finite (stable across runs and locales). */
export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '—';
}

/** Refusals as `reason n` pairs, largest first (ties by name), or `0`. */
export function refusals(r: SimResult): string {
  const entries = Object.entries(r.refused).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return entries.length === 0 ? '0' : entries.map(([reason, n]) => `${reason} ${n}`).join(', ');
}

/** Recovery after each spike, in seconds (`never` when goodput did not come back within the run). */
export function recoveries(r: SimResult): string {
  if (r.spikes.length === 0) return '—';
  return r.spikes
    .map((s) => (s.recoveryMs === null ? 'never' : `${(s.recoveryMs / 1000).toFixed(2)} s`))
    .join(' / ');
}

/** The columns of the table, in order: heading and cell. */
export const COLUMNS: ReadonlyArray<readonly [string, (r: SimResult) => string]> = [
  ['config', (r) => r.name],
  ['goodput/s', (r) => fixed(r.goodputPerS, 1)],
  ['in budget/s', (r) => fixed(r.goodputInBudgetPerS, 1)],
  ['p50 ms', (r) => fixed(r.latencyMs.p50, 1)],
  ['p99 ms', (r) => fixed(r.latencyMs.p99, 1)],
  ['refused', refusals],
  ['wasted', (r) => `${r.wasted.calls} (${fixed(r.wasted.serviceMs / 1000, 1)} s)`],
  ['peak in flight', (r) => String(r.inflight.peak)],
  ['mean in flight', (r) => fixed(r.inflight.mean, 1)],
  ['recovery', recoveries],
];
