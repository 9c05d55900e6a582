import type { LimitAlgorithm, Sample } from '../../src/algorithms/LimitAlgorithm.js';
import type { Clock } from '../../src/internal/clock.js';
import type { Limiter } from '../../src/limiter/Limiter.js';

/** A clock whose time moves only through `run`: timers fire in time order, synchronously. */
export class SimClock implements Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Calls `fn` at the absolute time `time` (not before now). */
  at(time: number, fn: () => void): unknown;
  /** Timers not fired yet (cancelled ones count until they reach the top). */
  readonly pending: number;
  /**
   * Fires timers in order until `until`, until `stop()` answers true after a timer, or until
   * `maxEvents` fired. @returns the number of timers fired.
   */
  run(until: number, stop?: () => boolean, maxEvents?: number): number;
}

/** A downstream shape (see traffic.mjs's SHAPES). */
export interface Shape {
  /** Latency in ms of a request that starts with `n` requests on the server (itself included) at `now`. */
  latencyMs(n: number, now: number): number;
  /** At most `max` requests at once; beyond, deferred ("try later") or dropped (no answer). */
  cap?: { max: number; mode: 'defer' | 'drop' };
  /** At most this many starts per sliding second; beyond, "try later". */
  rate?: number;
  /** This many workers; beyond, requests queue at the server. */
  queueAt?: number;
  /** A request whose client gave up leaves the server (with `queueAt`: if it has not started). */
  abandon?: boolean;
}

export const SHAPES: Record<
  'unlimited' | 'knee' | 'capDefer' | 'capDrop' | 'rate' | 'slowLink' | 's1' | 's2',
  Shape
>;

/** A simulated downstream of one shape. */
export class Downstream {
  inflight: number;
  peak: number;
  constructor(shape: Shape, clock: SimClock, random: () => number, noise?: number);
  /**
   * Sends one request; `reply` is called once with `ok` or `defer`, or never (a drop). Returns what
   * the client calls when it gives up (a shape with `abandon` stops working on the request).
   */
  send(reply: (kind: 'ok' | 'defer') => void): () => void;
}

/** Fibonacci backoff in ms for attempt `k` (1 after the first failure). */
export function fibonacciBackoffMs(k: number, unitMs?: number, capMs?: number): number;

export interface TrafficOptions {
  limiter: Limiter;
  downstream: Downstream;
  clock: SimClock;
  /** Retries outside the permit (each attempt takes one) or inside it. @default 'outside' */
  retries?: 'outside' | 'inside';
  /** The client timeout of one attempt. @default 1000 */
  timeoutMs?: number;
  /** The limiter's `probeSlots`. @default 1 */
  probeSlots?: number;
  /** The documented units beyond the limit at a grant, from the limit. @default () => 0 */
  bound?: (limit: number) => number;
}

/** Jobs sent through a limiter to a downstream, with what the limiter did (see traffic.mjs). */
export class Traffic {
  done: number;
  started: number;
  attempts: number;
  lastDoneAt: number;
  beyond: number;
  beyondAtLimit: number;
  overBound: number;
  waiting: number;
  stuckMs: number;
  refused: number;
  constructor(options: TrafficOptions);
  burst(count: number): void;
  arrivals(everyMs: number, forMs: number): void;
  runUntilDone(untilMs: number, maxEvents?: number): boolean;
}

/** The matrix's reference controller (after Vector's adaptive request concurrency). */
export class ReferenceLimit implements LimitAlgorithm {
  limit: number;
  update(sample: Sample): number;
}
