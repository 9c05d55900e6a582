import { type Criticality, seededRandom } from 'limits-core';
import type { Arrival } from '../traffic.js';
import type { Model } from './Model.js';

/** Seed of the arrival stream, apart from the downstream's: every configuration sees the same requests. */
const ARRIVAL_STREAM = 0x6a09e667;

/**
 * The requests a model sends, as an iterable that restarts from the same seed each time it is
 * iterated: every configuration of a run is offered the very same requests. Generated one at a time
 * (a million of them take no memory), sorted by `atMs`, all before `model.durationMs`.
 * @param seed - the run's seed (an integer).
 */
export function modelArrivals(model: Model, seed: number): Iterable<Arrival> {
  return {
    [Symbol.iterator]: () => generate(model, seededRandom(seed ^ ARRIVAL_STREAM)),
  };
}

function* times(model: Model, random: () => number): Generator<number> {
  const end = model.durationMs;
  const a = model.arrivals;
  switch (a.pattern) {
    case 'constant': {
      const period = 1000 / a.ratePerS;
      for (let n = 0; n * period < end; n++) yield n * period;
      return;
    }
    case 'poisson': {
      const mean = 1000 / a.ratePerS;
      for (let t = -mean * Math.log(1 - random()); t < end; t += -mean * Math.log(1 - random())) {
        yield t;
      }
      return;
    }
    case 'bursts': {
      for (let t = 0; t < end; t += a.everyMs) for (let i = 0; i < a.size; i++) yield t;
      return;
    }
    case 'steps': {
      for (let s = 0; s < a.steps.length; s++) {
        const step = a.steps[s] as { fromMs: number; ratePerS: number };
        const to = Math.min(end, a.steps[s + 1]?.fromMs ?? end);
        if (step.ratePerS === 0) continue;
        const period = 1000 / step.ratePerS;
        for (let n = 0; step.fromMs + n * period < to; n++) yield step.fromMs + n * period;
      }
      return;
    }
  }
}

function* generate(model: Model, random: () => number): Generator<Arrival> {
  const mix = model.criticality === undefined ? undefined : Object.entries(model.criticality);
  const total = mix?.reduce((sum, [, share]) => sum + (share as number), 0) ?? 0;
  const budget = model.budgetMs;
  for (const atMs of times(model, random)) {
    const arrival: Arrival = { atMs };
    if (budget !== Number.POSITIVE_INFINITY) arrival.budgetMs = budget;
    if (model.tenants > 0) arrival.key = `t${Math.floor(random() * model.tenants)}`;
    if (mix !== undefined) {
      let u = random() * total;
      for (const [level, share] of mix) {
        arrival.criticality = level as Criticality;
        u -= share as number;
        if (u < 0) break;
      }
    }
    yield arrival;
  }
}
