import { EventEmitter } from 'node:events';
import type { LeasePoolEvents } from './events.js';

/** The pool's events, emitted so that a listener's error never reaches its callers. */
export class LeasePoolEmitter extends EventEmitter<LeasePoolEvents> {
  /**
   * @internal Emits `event`; a listener that throws never reaches the pool's callers: its error goes to the
   * `error` event, else is rethrown on a microtask (as limits-core's limiter does).
   */
  protected emitSafely<E extends Exclude<keyof LeasePoolEvents, 'error'>>(
    event: E,
    payload: LeasePoolEvents[E][0],
  ): void {
    try {
      (this.emit as (e: E, p: unknown) => boolean)(event, payload);
    } catch (error) {
      if (this.listenerCount('error') > 0) {
        try {
          this.emit('error', error);
          return;
        } catch {
          // reported below like any other listener error
        }
      }
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}
