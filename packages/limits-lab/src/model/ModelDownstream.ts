import type { CallOutcome, Downstream, DownstreamCall } from '../traffic.js';
import type { ModelDownstreamSpec, ModelSpike, parseModel } from './Model.js';

/**
 * The downstream a model describes, as a {@link Downstream}: a call started at `t` with `n` calls
 * in flight takes `base × max(1, n / knee) ^ growth` ms (the base and the knee as they stand at `t`:
 * a spike's latency, the last capacity change), times a jitter factor of mean 1 (uniform in
 * `1 ± spread`, or lognormal `exp(σZ − σ²/2)`); it fails with `errorRate` and is refused as overloaded
 * with `overloadRate` (a spike's own rates while it lasts). Each call draws its random numbers in a
 * fixed order, so one seed gives one run.
 */
export class ModelDownstream implements Downstream {
  readonly #spec: ModelDownstreamSpec;

  /** @param spec - a checked model's `downstream` ({@link parseModel}). */
  constructor(spec: ModelDownstreamSpec) {
    this.#spec = spec;
  }

  /** The spans of the model's spikes, for the recovery measures. */
  get spikes(): ReadonlyArray<{ fromMs: number; toMs: number }> {
    return this.#spec.spikes.map((s) => ({ fromMs: s.fromMs, toMs: s.toMs }));
  }

  /** How the downstream answers a call started at `atMs` with `concurrency` calls in flight (itself included). */
  call(atMs: number, concurrency: number, random: () => number): DownstreamCall {
    const spec = this.#spec;
    const spike = spikeAt(spec.spikes, atMs);
    let base = spec.baseMs;
    if (spike !== undefined) base = spike.latencyMs ?? base * (spike.latencyFactor as number);
    const knee = kneeAt(spec, atMs);
    const load = concurrency > knee ? (concurrency / knee) ** spec.growth : 1;
    const u = random();
    const errorRate = spike?.errorRate ?? spec.errorRate;
    const overloadRate = spike?.overloadRate ?? spec.overloadRate;
    const outcome: CallOutcome =
      u < errorRate ? 'failure' : u < errorRate + overloadRate ? 'overload' : 'success';
    return { serviceMs: base * load * jitter(spec.jitter, random), outcome };
  }
}

function spikeAt(spikes: readonly ModelSpike[], atMs: number): ModelSpike | undefined {
  for (const s of spikes) {
    if (s.fromMs > atMs) return undefined;
    if (atMs < s.toMs) return s;
  }
  return undefined;
}

function kneeAt(spec: ModelDownstreamSpec, atMs: number): number {
  let knee = spec.knee;
  for (const c of spec.capacityChanges) {
    if (c.atMs > atMs) break;
    knee = c.knee;
  }
  return knee;
}

function jitter(j: ModelDownstreamSpec['jitter'], random: () => number): number {
  switch (j.kind) {
    case 'none':
      return 1;
    case 'uniform':
      return 1 + j.spread * (2 * random() - 1);
    case 'lognormal': {
      // Box–Muller: one standard normal from two uniforms (1 − u keeps the log finite).
      const z = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
      return Math.exp(j.sigma * z - (j.sigma * j.sigma) / 2);
    }
  }
}
