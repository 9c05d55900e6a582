import type { Clock } from 'limits-core';
import type { RedisClient, RedisSubscriber } from './RedisClient.js';
import type { Waiter } from './Waiter.js';

/**
 * @internal The acquires waiting for a release, in arrival order. They are woken by the pool's
 * release messages (pub/sub, on a second connection opened with `redis.duplicate()` the first time
 * someone waits), and, in case a message is lost, the first of them retries every `pollMs`.
 */
export class WaitList {
  readonly #waiters: Waiter[] = [];
  readonly #redis: RedisClient;
  readonly #channel: string;
  readonly #self: string;
  readonly #clock: Clock;
  readonly #pollMs: number;
  readonly #attempt: (w: Waiter) => void;
  #subscriber: RedisSubscriber | undefined;
  #pollTimer: unknown;
  #closed = false;

  constructor(
    redis: RedisClient,
    channel: string,
    self: string,
    clock: Clock,
    pollMs: number,
    attempt: (w: Waiter) => void,
  ) {
    this.#redis = redis;
    this.#channel = channel;
    this.#self = self;
    this.#clock = clock;
    this.#pollMs = pollMs;
    this.#attempt = attempt;
  }

  get size(): number {
    return this.#waiters.length;
  }

  add(w: Waiter): void {
    if (w.queued) return;
    w.queued = true;
    this.#waiters.push(w);
    this.#subscribe();
    this.#startPoll();
  }

  remove(w: Waiter): void {
    if (!w.queued) return;
    w.queued = false;
    const i = this.#waiters.indexOf(w);
    if (i >= 0) this.#waiters.splice(i, 1);
    if (this.#waiters.length === 0) this.#stopPoll();
  }

  /** `units` were freed somewhere: try as many waiters from the head. */
  wake(units: number): void {
    let left = units;
    for (const w of this.#waiters) {
      if (left <= 0) break;
      left -= w.o.cost;
      if (w.attempting) w.recheck = true;
      else this.#attempt(w);
    }
  }

  /** Stops the poll and closes the subscriber connection (the caller settles the waiters). */
  close(): void {
    this.#closed = true;
    this.#stopPoll();
    const sub = this.#subscriber;
    this.#subscriber = undefined;
    sub?.disconnect();
  }

  #subscribe(): void {
    if (this.#subscriber !== undefined || this.#closed) return;
    const sub = this.#redis.duplicate();
    this.#subscriber = sub;
    // The connection dropped: Redis may be down. The first waiter tries now (a lost connection
    // fails at once), so the failure policy answers the waiters without waiting for the poll.
    sub.on('error', () => this.wake(1));
    sub.on('message', (channel, message) => {
      if (channel !== this.#channel) return;
      // `<units>` or `<units>:<instance>`: a release here already woke this instance's waiters.
      const at = message.indexOf(':');
      if (at >= 0 && message.slice(at + 1) === this.#self) return;
      this.wake(Number(at >= 0 ? message.slice(0, at) : message) || 1);
    });
    sub.subscribe(this.#channel).catch(() => {});
  }

  #startPoll(): void {
    if (this.#pollTimer !== undefined || this.#closed) return;
    this.#pollTimer = this.#clock.setTimeout(() => {
      this.#pollTimer = undefined;
      const head = this.#waiters[0];
      if (head === undefined) return;
      if (!head.attempting) this.#attempt(head);
      this.#startPoll();
    }, this.#pollMs);
  }

  #stopPoll(): void {
    if (this.#pollTimer !== undefined) this.#clock.clearTimeout(this.#pollTimer);
    this.#pollTimer = undefined;
  }
}
