import type { Clock } from 'limits-core';
import type { Lease } from './Lease.js';

/**
 * @internal One timer per budget, running only while there is something to do: renew the leases this
 * instance holds (one script call for all of them every `renewEveryMs`), and retry the releases that
 * failed (orphans), until their TTL has surely passed. It stops when nothing is held.
 */
export class Maintenance {
  /** Leases held here, by member. */
  readonly held = new Map<string, Lease>();
  /** Members whose release failed or came back late, with the time (budget clock) after which their TTL has surely freed them. */
  readonly orphans = new Map<string, number>();
  readonly #clock: Clock;
  readonly #everyMs: number;
  readonly #tick: () => Promise<void>;
  #timer: unknown;
  #running = false;
  #stopped = false;

  constructor(clock: Clock, everyMs: number, tick: () => Promise<void>) {
    this.#clock = clock;
    this.#everyMs = everyMs;
    this.#tick = tick;
  }

  /** Starts the timer if it is not running and there is work. */
  wake(): void {
    if (this.#timer !== undefined || this.#running || this.#stopped) return;
    if (this.held.size === 0 && this.orphans.size === 0) return;
    this.#timer = this.#clock.setTimeout(() => this.#run(), this.#everyMs);
  }

  async #run(): Promise<void> {
    this.#timer = undefined;
    this.#running = true;
    try {
      await this.#tick();
    } finally {
      this.#running = false;
      this.wake();
    }
  }

  /** Stops for good (close). */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Whether the timer is scheduled (for tests of leaks). */
  get active(): boolean {
    return this.#timer !== undefined;
  }
}
