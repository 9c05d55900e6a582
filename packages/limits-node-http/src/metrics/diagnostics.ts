import diagnosticsChannel from 'node:diagnostics_channel';
import type { AcquireEvent, LimitEvent, Limiter, RejectEvent, ReleaseEvent } from 'limits-core';
import { type LimitsSource, resolveSource } from './source.js';

/** The names of the `node:diagnostics_channel` channels limits publishes on. */
export const diagnosticsChannels = Object.freeze({
  /** A permit was granted (the limiter's `acquire` event). */
  admit: 'limits:admit',
  /** A request was refused, at admission or in the queue (the limiter's `reject` event). */
  reject: 'limits:reject',
  /** A permit came back (the limiter's `release` event). */
  release: 'limits:release',
  /** The integer limit changed (the limiter's `limit` event). */
  limit: 'limits:limit',
} as const);

/**
 * A message on a `limits:` channel: the limiter it comes from, its partition name (within a
 * `PartitionedLimiter`, else `undefined`) and the limiter's event payload, as is.
 */
export interface DiagnosticsMessage<E> {
  /** The limiter that emitted the event (a partition's own limiter within a PartitionedLimiter). */
  readonly limiter: Limiter;
  /** The partition's name, or `undefined` outside a PartitionedLimiter. */
  readonly partition: string | undefined;
  /** The limiter's event payload (see limits-core's `LimiterEvents`). */
  readonly event: E;
}

/** Message of `limits:admit`. */
export type AdmitMessage = DiagnosticsMessage<AcquireEvent>;
/** Message of `limits:reject`. */
export type RejectMessage = DiagnosticsMessage<RejectEvent>;
/** Message of `limits:release`. */
export type ReleaseMessage = DiagnosticsMessage<ReleaseEvent>;
/** Message of `limits:limit`. */
export type LimitMessage = DiagnosticsMessage<LimitEvent>;

/** What {@link publishDiagnostics} returns. */
export interface DiagnosticsHandle {
  /**
   * Attaches the limiter listeners of the channels that have subscribers now and detaches the
   * others: a few property reads when nothing changed, cheap enough to call on every request.
   */
  sync(): void;
  /** Stops publishing for this source (its listeners are removed; idempotent). */
  close(): void;
}

type LimiterEventName = 'acquire' | 'reject' | 'release' | 'limit';

// Held here for the life of the module: Node keeps channels nobody holds only weakly.
const CHANNELS: ReadonlyArray<readonly [LimiterEventName, diagnosticsChannel.Channel]> = [
  ['acquire', diagnosticsChannel.channel(diagnosticsChannels.admit)],
  ['reject', diagnosticsChannel.channel(diagnosticsChannels.reject)],
  ['release', diagnosticsChannel.channel(diagnosticsChannels.release)],
  ['limit', diagnosticsChannel.channel(diagnosticsChannels.limit)],
];

/**
 * Publishes one limiter's events on the four channels. A listener is on the limiter only while its
 * channel has subscribers (as of the last sync), so an unwatched limiter keeps its fastest path.
 */
class LimiterPublisher {
  readonly limiter: Limiter;
  readonly #listeners: Array<(event: unknown) => void>;
  readonly #attached = [false, false, false, false];
  /** Handles that publish this limiter (a guard and its limiter may both be published). */
  refs = 0;

  constructor(limiter: Limiter, partition: string | undefined) {
    this.limiter = limiter;
    this.#listeners = CHANNELS.map(([, channel]) => (event: unknown) => {
      // One object per event, only while someone subscribes (else the listener is not here).
      if (channel.hasSubscribers) channel.publish({ limiter, partition, event });
      // Every event is also a sync point: a listener leaves when its channel lost its subscribers
      // (that one event was not published), and others come for newly watched channels.
      this.sync();
    });
  }

  sync(): void {
    // Closed (a subscriber may close the handle while its message is delivered): attach nothing.
    if (this.refs === 0) return;
    for (let i = 0; i < 4; i++) {
      const want = (CHANNELS[i] as (typeof CHANNELS)[number])[1].hasSubscribers;
      if (want !== this.#attached[i]) this.#set(i, want);
    }
  }

  detach(): void {
    for (let i = 0; i < 4; i++) if (this.#attached[i]) this.#set(i, false);
  }

  #set(i: number, on: boolean): void {
    const event = (CHANNELS[i] as (typeof CHANNELS)[number])[0];
    const listener = this.#listeners[i] as (event: unknown) => void;
    if (on) this.limiter.on(event, listener);
    else this.limiter.off(event, listener);
    this.#attached[i] = on;
  }
}

/** Publishers by limiter: one per limiter, however many sources reach it. */
const publishers = new WeakMap<Limiter, LimiterPublisher>();
/** Handles by source: `publishDiagnostics` is idempotent per source. */
const handles = new WeakMap<object, Handle>();

class Handle implements DiagnosticsHandle {
  readonly #source: object;
  readonly #publishers: LimiterPublisher[];
  #open = true;

  constructor(source: object, publishers: LimiterPublisher[]) {
    this.#source = source;
    this.#publishers = publishers;
  }

  sync(): void {
    const list = this.#publishers;
    for (let i = 0; i < list.length; i++) (list[i] as LimiterPublisher).sync();
  }

  close(): void {
    if (!this.#open) return;
    this.#open = false;
    handles.delete(this.#source);
    for (const p of this.#publishers) {
      if (--p.refs === 0) {
        p.detach();
        publishers.delete(p.limiter);
      }
    }
  }
}

/**
 * Publishes a source's limiter events on `node:diagnostics_channel` channels (see
 * {@link diagnosticsChannels}), so an APM tool can observe limits without its API, as undici's
 * `undici:` channels are observed. Each message is a {@link DiagnosticsMessage}:
 * `{ limiter, partition, event }`. A `PartitionedLimiter` publishes every partition (with its
 * name); a guard publishes its limiter. limitFetch, limitInterceptor and loadShed call this for
 * their limiter.
 *
 * **Cost.** Nothing for a limiter nobody watches: a listener is attached to the limiter only for a
 * channel that has subscribers (a `release` listener would make the limiter time every call). Node
 * 20's `diagnostics_channel` tells nobody when a channel gains a subscriber, so the listeners are
 * brought in line with the channels (`sync`) at these moments: each call of `publishDiagnostics`
 * (idempotent per source: it returns the same handle, after a sync; the entry points of this
 * package call it on every request), `handle.sync()`, and every event published (a listener whose
 * channel lost its subscribers leaves at its next event, which is not published). So a subscriber
 * that arrives while a limiter is idle sees events from the next call through an entry point, or
 * after the next `sync()`.
 *
 * @param source - a `Limiter`, a `PartitionedLimiter` or a limits-breaker guard.
 * @returns the source's handle (the same one for every call until `close()`).
 * @throws TypeError when `source` is none of those.
 * @example
 * ```ts
 * import { subscribe } from 'node:diagnostics_channel';
 * subscribe('limits:reject', ({ partition, event }) => console.log(partition, event.reason));
 * publishDiagnostics(bulkheads); // a PartitionedLimiter
 * ```
 */
export function publishDiagnostics(source: LimitsSource): DiagnosticsHandle {
  const known = handles.get(source);
  if (known !== undefined) {
    known.sync();
    return known;
  }
  const resolved = resolveSource('publishDiagnostics', source);
  const list = resolved.parts.map(({ limiter, partition }) => {
    let p = publishers.get(limiter);
    if (p === undefined) {
      p = new LimiterPublisher(limiter, partition);
      publishers.set(limiter, p);
    }
    p.refs++;
    return p;
  });
  const handle = new Handle(source, list);
  handles.set(source, handle);
  handle.sync();
  return handle;
}
