import type { Criticality } from 'limits-core';

/**
 * How a call ended at the downstream, as the lab models it: `success`, `failure` (an error that says
 * nothing about load, e.g. a 500) or `overload` (the downstream refused it as too busy: a 429 or 503,
 * a timeout).
 */
export type CallOutcome = 'success' | 'failure' | 'overload';

/** One request offered to the limiter under test: when it arrives and what it carries. */
export interface Arrival {
  /** When it arrives, in ms since the start of the run (finite, ≥ 0; arrivals are sorted by it). */
  atMs: number;
  /** Its tenant or partition key, when the trace or the model has one. */
  key?: string;
  /** Its cost in units of the limit (default 1). */
  cost?: number;
  /** Its importance (default `critical`). */
  criticality?: Criticality;
  /** Its caller's time budget from arrival, in ms: a call that ends later was wasted work. */
  budgetMs?: number;
}

/** What the downstream does with one call it receives. */
export interface DownstreamCall {
  /** How long the downstream takes to answer, in ms (finite, ≥ 0). */
  serviceMs: number;
  /** How it answers. */
  outcome: CallOutcome;
}

/**
 * The downstream the limiter protects, as a model: a pure function of when a call starts, how many
 * calls are then in flight on it (this one included) and a seeded random source in [0, 1).
 */
export interface Downstream {
  call(atMs: number, concurrency: number, random: () => number): DownstreamCall;
}
