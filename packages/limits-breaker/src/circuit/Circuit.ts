import type { BreakerStats, CircuitState } from '../types.js';

/**
 * @internal What a call shows the circuit: whether it is a trial, and the episode it was admitted
 * in. Each state change starts a new episode; only calls of the current episode report to the
 * circuit, and only trials of the current HALF_OPEN episode hold one of its trial slots.
 */
export interface CircuitTicket {
  readonly trial: boolean;
  readonly episode: number;
}

/** @internal Whom a circuit tells about its state changes and about errors it caught. */
export interface CircuitOwner {
  /** The circuit changed state (a new episode has begun: trial slots are empty). */
  _stateChanged(from: CircuitState, to: CircuitState): void;
  /** A listener of the circuit's engine threw; the circuit carried on. */
  _report(error: unknown): void;
}

/**
 * @internal The circuit a guard consults before each call and reports each outcome to: its state,
 * "may this call go through" (free while CLOSED; one of `probeSlots` trial slots while HALF_OPEN;
 * never while OPEN), success, failure, state changes (to its {@link CircuitOwner}), counts and
 * shutdown. One class implements it (`OpossumCircuit`, the only code that knows opossum), so calls
 * through it stay monomorphic.
 */
export interface Circuit {
  /** The current state. */
  readonly state: CircuitState;
  /** State changes so far (a call carries the episode it was admitted in). */
  readonly episode: number;
  /** Trial calls of the current HALF_OPEN episode in flight (0 in any other state). */
  readonly trials: number;
  /** HALF_OPEN with a trial slot free: takes the slot and returns true; false otherwise. */
  admitTrial(): boolean;
  /** A call ended without an outcome for the circuit (ignored, refused, never started): frees its trial slot. */
  endTrial(ticket: CircuitTicket): void;
  /** A call succeeded: counted in the window; a trial's success closes the circuit. */
  success(ticket: CircuitTicket): void;
  /** A call failed with `error`: the window may open the circuit; a trial's failure re-opens it. */
  failure(ticket: CircuitTicket, error: unknown): void;
  /** A fallback answered a call with `result` (counted in the window's `fallbacks`). */
  fallback(result: unknown, error: unknown): void;
  /** Rolling counts of the window. */
  stats(): BreakerStats;
  /** Stops the circuit's timers and listeners. */
  shutdown(): void;
}
