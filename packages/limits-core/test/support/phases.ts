/**
 * Phases of traffic for a real `Limiter` on simulated time, with the liveness checks of
 * test/liveness.test.ts made at every grant, release and phase end (see that file's comment).
 */

import type { LimitAlgorithm } from '../../src/algorithms/LimitAlgorithm.js';
import { seededRandom } from '../../src/internal/random.js';
import { maxLateProbes } from '../../src/limiter/LateProbes.js';
import { Limiter } from '../../src/limiter/Limiter.js';
import type { QueueTicket } from '../../src/limiter/PermitRequest.js';
import type { Permit } from '../../src/permit/Permit.js';
import { CRITICALITIES, type Criticality } from '../../src/shedding/criticality.js';
import { SimClock } from './traffic.mjs';

/** One phase of traffic. */
export interface Phase {
  kind: 'idle' | 'steady' | 'flap' | 'spiky' | 'drops' | 'hold';
  /** How long callers keep sending (ms). */
  ms: number;
  /** Callers, each with one call at a time (0 for idle). */
  callers: number;
  /** The phase's latency (ms): every call (`steady`), the slow one of `flap`, each attempt of `hold`. */
  rttMs: number;
  /** `drops`: the share of calls that end as dropped after a 1 s client timeout. */
  dropShare: number;
  /** `hold`: attempts per call, each `rttMs` plus a Fibonacci backoff, under one permit. */
  attempts: number;
  /** The downstream's capacity: a call started with `n` in flight takes `rttMs × max(1, n / capacity)`. */
  capacity?: number;
}

/** The longest a call of `p` holds its permit. */
export function longestCallMs(p: Phase): number {
  switch (p.kind) {
    case 'idle':
      return 0;
    case 'spiky':
      return 1_000;
    case 'drops':
      return Math.max(1_000, p.rttMs);
    case 'hold': {
      let backoff = 0;
      for (let k = 1, a = 1, b = 1; k < p.attempts; k++, [a, b] = [b, a + b]) backoff += 100 * a;
      return p.attempts * p.rttMs + backoff;
    }
    default:
      return p.rttMs;
  }
}

/**
 * The last phase is judged over its last 12 s: it lasts long enough before that for a latency that
 * moved up for good to be relearned (the baseline goes stale after `BASELINE_MAX_AGE_MS`, 10 s, and
 * the deepest probe measures it) and the limit to regrow.
 */
export const SERVED_MS = 12_000;

/** The checks of a run (see test/liveness.test.ts); `regrowth` is the test's own. */
export type Check = 'bound' | 'capacity' | 'progress' | 'regrowth';

/**
 * The checks that run: all of them, or those in `LIMITS_LIVENESS_CHECKS` (e.g. `capacity,progress`),
 * to look past one known failure for others. CI sets nothing.
 */
export const CHECKS: ReadonlySet<Check> = new Set(
  (process.env.LIMITS_LIVENESS_CHECKS ?? 'bound,capacity,progress,regrowth')
    .split(',')
    .map((c) => c.trim() as Check),
);

export type Make = (seed: number) => LimitAlgorithm;

/** What a run found; empty `violations` when every check held. */
export interface Outcome {
  violations: string[];
  /** Median limit over the last {@link SERVED_MS} of the last phase. */
  settled: number;
  /** Calls that succeeded in the last {@link SERVED_MS} of the last phase. */
  served: number;
  /** The limit every 100 ms over the last {@link SERVED_MS} of the last phase. */
  limits: number[];
}

/**
 * Drives a fresh limiter with `make(seed)`'s algorithm through `phases` and checks the invariants
 * (see the file comment). The last phase is the regrowth check's, when `final` is given.
 */
export function drive(
  make: Make,
  seed: number,
  probeSlots: number,
  phases: Phase[],
  observe?: (limiter: Limiter, clock: SimClock) => void,
  shed = false,
): Outcome {
  const clock = new SimClock();
  const random = seededRandom(seed);
  // With `shed`: importance-based shedding; caller i has criticality i mod 4 and its own cohort, and
  // a caller refused as `shed` tries again 50 ms later as the next attempt (up to 3, then a new call).
  const limiter = new Limiter({
    algorithm: make(seed),
    clock,
    probeSlots,
    maxQueued: Infinity,
    ...(shed ? { shedding: {} } : {}),
  });
  observe?.(limiter, clock);
  const violations: string[] = [];
  const violate = (what: string, check: Check = 'progress'): void => {
    if (!CHECKS.has(check)) return;
    if (violations.length < 5) violations.push(`t=${clock.now().toFixed(1)} ms: ${what}`);
  };
  const floorCapacity = (): number => Math.max(probeSlots, Math.min(1, Math.floor(limiter.limit)));

  let phase: Phase = phases[0] as Phase;
  let calls = 0;
  let waiting = 0;
  let progressAt = 0;
  let allowedGapMs = 1_000;
  /** Callers refused as `shed`, waiting to try again. */
  let backingOff = 0;
  const checkGap = (): void => {
    if (waiting + backingOff > 0 && clock.now() - progressAt > allowedGapMs) {
      violate(
        `${waiting + backingOff} callers waited ${(clock.now() - progressAt).toFixed(0)} ms with no grant (allowed ${allowedGapMs} ms; capacity ${limiter.capacity}, in flight ${limiter.inflight}, limit ${limiter.limit})`,
      );
      progressAt = clock.now();
    }
  };

  limiter.on('acquire', (e) => {
    const limit = Math.floor(limiter.limit);
    const allowed = Math.max(limit, probeSlots) + maxLateProbes(limit);
    if (e.inflight > allowed) {
      violate(
        `a grant left ${e.inflight} units in flight with the limit at ${limit} (allowed ${allowed})`,
        'bound',
      );
    }
    if (limiter.capacity < floorCapacity())
      violate(`capacity ${limiter.capacity} at a grant`, 'capacity');
    checkGap();
    progressAt = clock.now();
  });
  limiter.on('release', () => {
    if (limiter.capacity < floorCapacity()) {
      violate(
        `capacity ${limiter.capacity} after a release (probeSlots ${probeSlots}, limit ${limiter.limit})`,
        'capacity',
      );
    }
  });

  interface Caller {
    id: number;
    ticket: QueueTicket | undefined;
    waiting: boolean;
    busy: boolean;
    /** The attempt of its current call (with `shed`). */
    attempt: number;
    /** Refused as `shed`, waiting to try again (with `shed`). */
    backingOff: boolean;
  }
  const callers: Caller[] = [];
  const active = (c: Caller): boolean => c.id < phase.callers;

  const run = (c: Caller, permit: Permit): void => {
    if (c.waiting) {
      c.waiting = false;
      waiting--;
    }
    c.ticket = undefined;
    c.busy = true;
    c.attempt = 1;
    const n = calls++;
    let ms = phase.rttMs;
    let dropped = false;
    switch (phase.kind) {
      case 'flap':
        ms = n % 2 === 0 ? 1 : phase.rttMs;
        break;
      case 'spiky':
        ms = 1_000 * random();
        break;
      case 'drops':
        if (random() < phase.dropShare) {
          ms = 1_000;
          dropped = true;
        }
        break;
      case 'hold':
        ms = longestCallMs(phase);
        break;
    }
    ms *= Math.max(1, limiter.inflight / (phase.capacity ?? Infinity));
    ms *= 1 + 0.05 * (2 * random() - 1);
    clock.setTimeout(() => {
      if (dropped) permit.dropped();
      else {
        permit.success();
        if (clock.now() >= servedFrom) served++;
      }
      c.busy = false;
      if (active(c)) request(c);
    }, ms);
  };

  const request = (c: Caller): void => {
    c.waiting = true;
    if (waiting++ + backingOff === 0) progressAt = clock.now();
    const permit = limiter.acquireWith(
      {
        granted: (p) => run(c, p),
        refused: (e) => {
          if (!c.waiting) return; // the phase ended and took it out of the queue
          c.waiting = false;
          waiting--;
          if (!shed || e.reason !== 'shed') {
            violate(`a caller was refused: ${e.reason}`);
            return;
          }
          backingOff++;
          c.backingOff = true;
          c.attempt = c.attempt >= 3 ? 1 : c.attempt + 1;
          clock.setTimeout(() => {
            backingOff--;
            c.backingOff = false;
            if (active(c)) request(c);
          }, 50);
        },
        queued: (ticket) => {
          c.ticket = ticket;
        },
      },
      shed
        ? {
            criticality: CRITICALITIES[c.id % 4] as Criticality,
            attempt: c.attempt,
            cohort: `caller-${c.id}`,
          }
        : undefined,
    );
    if (permit !== undefined) run(c, permit);
  };

  let settled = Number.NaN;
  let served = 0;
  let servedFrom = Infinity;
  let trace: number[] = [];
  let longest = 0;
  let t = 0;
  for (let i = 0; i < phases.length; i++) {
    phase = phases[i] as Phase;
    const last = i === phases.length - 1;
    // Calls of the phase before may still be in flight: the gap allowed covers both.
    const prev = longest;
    longest = longestCallMs(phase);
    allowedGapMs = 2 * Math.max(prev, longest) + 1_000;
    // Callers beyond this phase's count stop: a waiting one leaves the queue, a busy one after its call.
    for (const c of callers) {
      if (!active(c) && c.waiting) {
        c.waiting = false;
        waiting--;
        c.ticket?.cancel();
      }
    }
    while (callers.length < phase.callers) {
      callers.push({
        id: callers.length,
        ticket: undefined,
        waiting: false,
        busy: false,
        attempt: 1,
        backingOff: false,
      });
    }
    for (const c of callers) {
      if (active(c) && !c.busy && !c.waiting && !c.backingOff) request(c);
    }
    const end = t + phase.ms;
    if (last) {
      servedFrom = end - SERVED_MS;
      const limits: number[] = [];
      for (let at = servedFrom; at < end; at += 100) {
        clock.run(at, checkOnce(checkGap));
        limits.push(limiter.limit);
      }
      trace = limits;
      const sorted = [...limits].sort((a, b) => a - b);
      settled = sorted[sorted.length >> 1] ?? limiter.limit;
    }
    clock.run(end, checkOnce(checkGap));
    checkGap();
    if (limiter.capacity < floorCapacity()) {
      violate(`capacity ${limiter.capacity} after a ${phase.kind} phase`, 'capacity');
    }
    t = end;
  }
  return { violations, settled, served, limits: trace };
}

/** A `stop` for SimClock.run that checks the progress gap after every timer and never stops. */
function checkOnce(check: () => void): () => boolean {
  return () => {
    check();
    return false;
  };
}
