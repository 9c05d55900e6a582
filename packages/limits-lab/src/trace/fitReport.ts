import type { DownstreamFit } from './DownstreamFit.js';

const count = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

function ms(v: number): string {
  return v < 10 ? `${v.toFixed(1)} ms` : `${count.format(v)} ms`;
}

function s(v: number): string {
  return `${(v / 1000).toFixed(2)} s`;
}

function pct(v: number): string {
  return `${(100 * v).toFixed(1)} %`;
}

/** Spikes listed in full; more are counted. */
const MAX_SPIKES = 5;

/**
 * A short text of a fit, for a person: the records by outcome, the model, the base latency's range
 * and spikes, the knee and exponent, R², the outcome rates.
 */
export function fitReport(fit: DownstreamFit): string {
  const { records: r } = fit;
  const reached = r.success + r.failure + r.overload;
  const total = reached + r.refused;
  const lines = [
    `Records: ${count.format(total)} (${count.format(r.success)} success, ${count.format(r.failure)} failure, ${count.format(r.overload)} overload, ${count.format(r.refused)} refused: not counted as load on the downstream).`,
    `Model: latency(t, n) = base(t) × max(1, n / knee)^exponent × jitter (log-normal, σ ${fit.sigma.toFixed(3)}), n = calls in flight as a call starts; ${fit.baseMs.length} buckets of ${count.format(fit.bucketMs)} ms.`,
    `Base latency: ${ms(Math.min(...fit.baseMs))} to ${ms(Math.max(...fit.baseMs))}, median ${ms(fit.medianBaseMs)}.`,
  ];
  const spikes = fit.spikes
    .slice(0, MAX_SPIKES)
    .map((x) => `${s(x.fromMs)} to ${s(x.toMs)} (peak ${ms(x.peakMs)})`);
  if (fit.spikes.length > MAX_SPIKES) spikes.push(`and ${fit.spikes.length - MAX_SPIKES} more`);
  lines.push(
    `Spikes (base above 3 × median): ${spikes.length === 0 ? 'none' : spikes.join(', ')}.`,
  );
  lines.push(
    Number.isFinite(fit.knee)
      ? `Knee: ${fit.knee.toFixed(1)} calls in flight, exponent ${fit.exponent.toFixed(2)} (t ${fit.exponentT.toFixed(1)}); peak concurrency ${fit.peakConcurrency}.`
      : `Knee: none (latency does not grow with concurrency: no exponent reaches t 4); peak concurrency ${fit.peakConcurrency}.`,
  );
  lines.push(
    `R²: ${fit.rSquared.toFixed(3)} on log latency (time buckets and concurrency); concurrency explains ${pct(fit.concurrencyShare)} of it within a bucket.`,
  );
  const worst = (rates: readonly number[]) => {
    let at = 0;
    for (let i = 1; i < rates.length; i++) if ((rates[i] as number) > (rates[at] as number)) at = i;
    const top = rates[at] as number;
    return top === 0 ? '' : ` (highest ${pct(top)} at ${s(fit.originMs + at * fit.bucketMs)})`;
  };
  lines.push(
    `Outcome rates of calls reaching the downstream: failure ${pct(reached === 0 ? 0 : r.failure / reached)}${worst(fit.failureRate)}, overload ${pct(reached === 0 ? 0 : r.overload / reached)}${worst(fit.overloadRate)}.`,
  );
  return lines.join('\n');
}
