import type { SimResult } from '../sim/SimResult.js';
import type { RunInfo } from './RunInfo.js';

/**
 * A run as JSON for machines: `{ title, seed, loop, results: [...] }`, each result a
 * {@link SimResult} without its timeline, numbers that are not finite as `null`. Deterministic.
 */
export function reportJson(results: readonly SimResult[], info: RunInfo): string {
  const plain = results.map(({ timeline: _timeline, ...rest }) => rest);
  return `${JSON.stringify({ ...info, results: plain }, (_key, value) => (typeof value === 'number' && !Number.isFinite(value) ? null : value), 2)}\n`;
}
