import { EventEmitter } from 'eventemitter3';
import type { Limiter } from 'limits-core';
import { forwardLimiterEvent, reportListenerError } from './listeners.js';
import type { GuardEvents } from './types.js';

/**
 * The events side of a {@link Guard}: eventemitter3 with the limiter's `limit`, `reject` and
 * `release` events forwarded once someone listens to them, and listener errors isolated.
 */
export abstract class GuardEmitter extends EventEmitter<GuardEvents> {
  /** The limiter whose events are forwarded (and whose `error` event is the fallback for reports). */
  abstract readonly limiter: Limiter;
  /** Stops every forwarding and listener the guard added (run by `shutdown()`). */
  protected readonly _unsubscribe: Array<() => void> = [];
  readonly #forwarding = new Set<string>();

  /**
   * Subscribes like eventemitter3's `on`; the limiter's `limit`, `reject` and `release` events are
   * forwarded only once someone listens to them here (a `release` listener makes the limiter time
   * every call, which a guard nobody charts should not pay for).
   */
  override on<T extends EventEmitter.EventNames<GuardEvents>>(
    event: T,
    fn: EventEmitter.EventListener<GuardEvents, T>,
    context?: unknown,
  ): this {
    this.#forward(event);
    return super.on(event, fn, context);
  }

  /** Like {@link GuardEmitter.on}, once. */
  override once<T extends EventEmitter.EventNames<GuardEvents>>(
    event: T,
    fn: EventEmitter.EventListener<GuardEvents, T>,
    context?: unknown,
  ): this {
    this.#forward(event);
    return super.once(event, fn, context);
  }

  #forward(event: string): void {
    if (event !== 'limit' && event !== 'reject' && event !== 'release') return;
    if (this.#forwarding.has(event)) return;
    this.#forwarding.add(event);
    // Through _emitSafely: a guard listener's error is the guard's to report, not the limiter's.
    const off = forwardLimiterEvent(this.limiter, event, (payload) =>
      this._emitSafely(event, payload as never),
    );
    this._unsubscribe.push(off);
  }

  /**
   * @internal Emits one of the guard's events. Every event the guard emits goes through here (callers
   * check that someone listens first): a listener that throws is reported (`_report`), never thrown
   * into the guard, the limiter or opossum, so the guard's state stays consistent and every caller is
   * answered.
   */
  protected _emitSafely<E extends Exclude<keyof GuardEvents, 'error'>>(
    event: E,
    payload: Parameters<GuardEvents[E]>[0],
  ): void {
    try {
      (this.emit as (e: E, p: unknown) => boolean)(event, payload);
    } catch (error) {
      this._report(error);
    }
  }

  /** @internal Reports a listener's error (see `reportListenerError`). */
  _report(error: unknown): void {
    reportListenerError(this, this.limiter, error);
  }
}
