import { EventEmitter } from 'eventemitter3';
import { LimitExceededError, type RejectReason } from '../errors/LimitExceededError.js';
import type { CostEstimator } from '../fairness/CostEstimator.js';
import type { Clock } from '../internal/clock.js';
import { checkNumber } from '../internal/validate.js';
import type { LimitAlgorithm, Sample } from '../limit/LimitAlgorithm.js';
import { DeficitRoundRobin } from '../queue/DeficitRoundRobin.js';
import { ExpiryHeap } from '../queue/ExpiryHeap.js';
import type { Selector } from '../queue/Selector.js';
import { SelectorEntry, Waiter, type WaiterOwner } from '../queue/Waiter.js';
import { WaiterList } from '../queue/WaiterList.js';
import { describeRejection } from './describe.js';
import type { LimiterEvents } from './events.js';
import type {
  AcquireOptions,
  CapacityGate,
  LimiterOptions,
  LimiterSnapshot,
  QueueOrder,
} from './options.js';
import type { Outcome } from './outcome.js';
import { Permit, type PermitOwner } from './Permit.js';
import { resolveOptions } from './resolveOptions.js';
import { type RunHooks, runUnderPermit } from './runTask.js';
import { StallDetector } from './StallDetector.js';

/** Weight of a new hold time in the service-time average. */
const SERVICE_WEIGHT = 1 / 16;

/**
 * A concurrency limiter: a semaphore whose size comes from a limit algorithm, with probe slots and a
 * bounded queue (count, bytes, age, deadline, cost). It measures each call and feeds the algorithm.
 *
 * @example
 * ```ts
 * const limiter = new Limiter({ limit: new VegasLimit({ maxLimit: 100 }), maxQueued: 50, maxQueueWaitMs: 200 });
 * limiter.on('limit', (e) => console.log(e.limit, e.decision?.reason));
 * const body = await limiter.run((signal) => fetch(url, { signal }).then((r) => r.text()), { timeout: 1000 });
 * ```
 */
export class Limiter extends EventEmitter<LimiterEvents> implements PermitOwner, WaiterOwner {
  readonly #algorithm: LimitAlgorithm;
  readonly #probeSlots: number;
  readonly #maxQueued: number;
  readonly #maxQueuedBytes: number;
  readonly #maxQueueWaitMs: number;
  readonly #order: QueueOrder;
  readonly #standingMs: number;
  readonly #codelTargetMs: number;
  readonly #clock: Clock;
  readonly #adaptive: boolean;
  readonly #stall: StallDetector | undefined;
  readonly #maxCost: number;
  readonly #initialServiceMs: number;
  readonly #list = new WaiterList();
  readonly #heap = new ExpiryHeap();
  /**
   * Expiry bookkeeping: while waiters arrive in expiry order (the usual case: one `maxQueueWaitMs`,
   * or the same `timeout` on every call), the arrival list is already sorted by expiry and its head
   * expires first; the heap is used only once an earlier expiry arrives after a later one, until
   * the queue empties.
   */
  #heapMode = false;
  #lastExpiry = -Infinity;
  readonly #selector: Selector | undefined;
  readonly #estimator: CostEstimator | undefined;
  readonly #hooks: RunHooks;
  readonly #gate: CapacityGate | undefined;
  readonly #sampleEvery: number;
  #sampleCount = 0;
  #limit: number;
  #capacity: number;
  #inflight = 0;
  #permits = 0;
  #queuedCost = 0;
  #queuedBytes = 0;
  #lastEmptyAt = 0;
  #timer: unknown = undefined;
  #timerAt = Infinity;
  #serviceMs = 0;
  /** Mean absolute deviation of the hold time (same weight): the margin of deadline checks. */
  #serviceDevMs = 0;
  #untimed = 0;
  #stalledSamples = 0;
  #closed = false;
  #drained: Array<() => void> = [];

  /** @throws RangeError/TypeError naming the option, the allowed range and the value given. */
  constructor(options: LimiterOptions = {}) {
    super();
    const o = resolveOptions(options);
    this.#algorithm = o.algorithm;
    this.#probeSlots = o.probeSlots;
    this.#maxQueued = o.maxQueued;
    this.#maxQueuedBytes = o.maxQueuedBytes;
    this.#maxQueueWaitMs = o.maxQueueWaitMs;
    this.#order = o.order;
    this.#codelTargetMs = o.codelTargetMs;
    this.#standingMs = o.standingMs;
    this.#clock = o.clock;
    this.#initialServiceMs = o.initialServiceMs;
    this.#adaptive = o.adaptive;
    this.#maxCost = o.maxCost;
    this.#selector = o.selector;
    this.#estimator = o.estimator;
    this.#gate = o.gate;
    this.#sampleEvery = o.sampleEvery;
    if (o.adaptive && o.stallThresholdMs !== Infinity) {
      this.#stall = new StallDetector(o.clock, o.stallThresholdMs, () => this.#permits > 0);
    }
    this.#limit = Math.floor(o.algorithm.limit);
    this.#capacity = Math.max(this.#limit, o.probeSlots);
    this.#hooks = { classify: o.classify, onError: (e) => this.#reportListenerError(e) };
  }

  /** The algorithm's current limit, as an integer. */
  get limit(): number {
    return this.#limit;
  }

  /** Units that may be in flight: `max(limit, probeSlots)`. */
  get capacity(): number {
    return this.#capacity;
  }

  /** Units in flight (a permit of cost 3 counts 3). */
  get inflight(): number {
    return this.#inflight;
  }

  /** Waiters in the queue. */
  get queued(): number {
    return this.#list.size;
  }

  /** Bytes held by queued waiters. */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /** The limit algorithm. */
  get algorithm(): LimitAlgorithm {
    return this.#algorithm;
  }

  /** A point-in-time view of the counters. */
  snapshot(): LimiterSnapshot {
    const head = this.#list.head;
    return {
      limit: this.#limit,
      capacity: this.#capacity,
      inflight: this.#inflight,
      permits: this.#permits,
      queued: this.#list.size,
      queuedCost: this.#queuedCost,
      queuedBytes: this.#queuedBytes,
      oldestQueuedMs: head === undefined ? 0 : Math.max(0, this.#clock.now() - head.enqueuedAt),
      serviceMs: this.#service(),
      stalledSamples: this.#stalledSamples,
      tenants: this.#selector instanceof DeficitRoundRobin ? this.#selector.tenants : 0,
      closed: this.#closed,
    };
  }

  /**
   * Takes a permit if capacity is free now and nobody is queued; never waits.
   * @returns the permit, or `undefined` when the limiter is full, closed, has waiters, the cost can
   *   never fit, or `signal` is aborted.
   * @throws RangeError/TypeError for a bad `cost`.
   */
  tryAcquire(options?: AcquireOptions): Permit | undefined {
    const cost = options?.cost === undefined ? 1 : checkCost(options.cost);
    if (
      this.#closed ||
      this.#list.size > 0 ||
      cost > this.#maxCost ||
      !this.#fits(cost) ||
      options?.signal?.aborted
    ) {
      return undefined;
    }
    return this.#grant(cost, 0, options?.timeout !== undefined || options?.deadline !== undefined);
  }

  /**
   * Takes a permit, waiting in the bounded queue when the limiter is full.
   * @returns the permit.
   * @throws LimitExceededError (rejected promise) with the reason it was not admitted.
   */
  acquire(options?: AcquireOptions): Promise<Permit> {
    return this.#admit(options, undefined) as Promise<Permit>;
  }

  #admit(
    options: AcquireOptions | undefined,
    task: ((signal: AbortSignal) => unknown) | undefined,
  ): Promise<unknown> {
    const cost = options?.cost === undefined ? 1 : checkCost(options.cost);
    const signal = options?.signal;
    if (signal?.aborted) return Promise.reject(this.#reject('aborted', cost, signal.reason));
    if (this.#closed) return Promise.reject(this.#reject('closed', cost));
    if (cost > this.#maxCost) return Promise.reject(this.#reject('too_large', cost));
    if (this.#list.size === 0 && this.#fits(cost)) {
      const permit = this.#grant(
        cost,
        0,
        options?.timeout !== undefined || options?.deadline !== undefined,
      );
      return task === undefined ? Promise.resolve(permit) : this.#runWith(permit, task, options);
    }
    if (this.#maxQueued === 0) return Promise.reject(this.#reject('limit', cost));
    if (this.#list.size >= this.#maxQueued) return Promise.reject(this.#reject('queue_full', cost));
    if (this.#selector?.refuse(options?.tenant) !== undefined) {
      return Promise.reject(this.#reject('queue_full', cost, undefined, 0, options?.tenant));
    }
    const bytes = options?.bytes === undefined ? 0 : checkBytes(options.bytes);
    if (this.#queuedBytes + bytes > this.#maxQueuedBytes) {
      return Promise.reject(this.#reject('queue_bytes', cost, undefined, bytes));
    }
    const now = this.#clock.now();
    let deadline = options?.deadline ?? Infinity;
    if (options?.timeout !== undefined) {
      deadline = Math.min(deadline, now + checkNumber('timeout', options.timeout, 0, { min: 0 }));
    }
    if (deadline !== Infinity) {
      if (typeof deadline !== 'number' || Number.isNaN(deadline)) {
        throw new TypeError(
          `limits: option "deadline" must be a number (clock ms), got ${String(deadline)}`,
        );
      }
      // Deadline-aware admission: the caller needs the result by `deadline`; refuse now what the
      // queue ahead cannot start, and the call cannot finish, in time.
      if (deadline <= now || now + this.#estimateWait(cost) + this.#finishMargin() > deadline) {
        return Promise.reject(this.#reject('deadline', cost));
      }
    }
    return this.#enqueue(cost, bytes, now, deadline, signal, options, task);
  }

  /**
   * Runs `task` under a permit: acquires (waiting if the queue allows), calls `task(signal)`, times
   * it, and releases when the task's promise really settles, even after the caller gave up on it.
   * The outcome comes from `classify` (default: resolved → success, timeout/abort error → dropped,
   * other error → ignore). A task that throws synchronously never started: its permit is returned at
   * once with `ignore`.
   * @returns what the task returned.
   * @throws LimitExceededError when not admitted; otherwise whatever the task threw.
   */
  run<T>(task: (signal: AbortSignal) => T | PromiseLike<T>, options?: AcquireOptions): Promise<T> {
    const permit = this.tryAcquire(options);
    if (permit !== undefined) return this.#runWith(permit, task, options);
    // A queued run carries its task in the waiter, which starts it when granted: one promise and no
    // closure per queued call.
    return this.#admit(options, task as (signal: AbortSignal) => unknown) as Promise<T>;
  }

  /**
   * Stops admitting (new requests reject with reason `closed`), rejects every queued waiter with
   * reason `closed`, and resolves once every permit in flight has been released. Idempotent.
   */
  close(): Promise<void> {
    this.#closed = true;
    while (this.#list.head !== undefined) this.#fail(this.#list.head, 'closed');
    this.#clearTimer();
    if (this.#permits === 0) {
      this.#stall?.stop();
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#drained.push(resolve));
  }

  /** @internal Called by a permit, once. */
  _release(permit: Permit, outcome: Outcome): void {
    this.#inflight -= permit.cost;
    this.#permits--;
    const timed = !Number.isNaN(permit.startTime);
    const rtt = timed ? this.#clock.now() - permit.startTime : Number.NaN;
    let stalled = false;
    if (timed) {
      if (this.#serviceMs === 0) {
        this.#serviceMs = rtt;
      } else {
        this.#serviceDevMs +=
          (Math.abs(rtt - this.#serviceMs) - this.#serviceDevMs) * SERVICE_WEIGHT;
        this.#serviceMs += (rtt - this.#serviceMs) * SERVICE_WEIGHT;
      }
      if (this.#adaptive && outcome !== 'ignore') {
        stalled = this.#stall?.overlaps(permit.startTime, permit.startTime + rtt) ?? false;
        if (stalled) this.#stalledSamples++;
        else this.#feed(permit.startTime, permit.inflight, rtt, outcome === 'dropped');
      }
    } else if (outcome === 'dropped' && this.#adaptive) {
      // An unsampled call that dropped still tells the algorithm: its duration is taken to be the
      // service-time estimate (drops are too important to sample away).
      const service = this.#service();
      this.#feed(this.#clock.now() - service, permit.inflight, service, true);
    }
    if (this.#events.release !== undefined) {
      this.#emit('release', { outcome, rtt, cost: permit.cost, inflight: this.#inflight, stalled });
    }
    this.#gate?.released(permit.cost);
    if (this.#list.size > 0) this.#dispatch();
    this.#gate?.afterRelease();
    if (this.#permits === 0 && this.#closed) this.#finishClose();
  }

  /** @internal Called by a queued waiter whose signal aborted. */
  _abortWaiter(waiter: Waiter): void {
    if (!waiter.queued) return;
    this.#fail(waiter, 'aborted', waiter.signal?.reason);
    // The waiter may have been the head blocking others.
    this.#dispatch();
  }

  /**
   * eventemitter3's listener table: `this.#events.release !== undefined` tells whether anyone listens,
   * with a property read instead of a `listenerCount` call (this runs several times per call).
   */
  get #events(): Partial<Record<keyof LimiterEvents, unknown>> {
    return (this as unknown as { _events: Partial<Record<keyof LimiterEvents, unknown>> })._events;
  }

  /** @internal Serves queued waiters that now fit (called by a `PartitionedLimiter` when shared capacity frees). */
  _dispatch(): void {
    if (this.#list.size > 0) this.#dispatch();
  }

  #fits(cost: number): boolean {
    if (this.#gate !== undefined) return this.#gate.fits(cost, this.#inflight);
    // A job costlier than the current capacity (the limit shrank below it) runs alone once in-flight
    // has drained to zero; otherwise it could never run.
    return this.#inflight + cost <= this.#capacity || (this.#inflight === 0 && this.#capacity > 0);
  }

  #service(): number {
    return this.#serviceMs > 0 ? this.#serviceMs : this.#initialServiceMs;
  }

  /**
   * Time a call needs to finish once started, for deadline checks: the mean hold time plus twice its
   * mean deviation, so a call with just the mean left is not started to finish late half the time.
   */
  #finishMargin(): number {
    return this.#service() + 2 * this.#serviceDevMs;
  }

  /** Ms until the work ahead leaves room for `cost` units, at `capacity` units per service time. */
  #estimateWait(cost: number): number {
    const units = this.#inflight + this.#queuedCost + cost - this.#capacity;
    return units <= 0 ? 0 : (units * this.#service()) / Math.max(1, this.#capacity);
  }

  #enqueue(
    cost: number,
    bytes: number,
    now: number,
    deadline: number,
    signal: AbortSignal | undefined,
    options: AcquireOptions | undefined,
    task: ((signal: AbortSignal) => unknown) | undefined,
  ): Promise<unknown> {
    const expiresAt = Math.min(deadline, now + this.#maxQueueWaitMs);
    let resolve!: (value: unknown) => void;
    const promise = new Promise<unknown>((res) => {
      resolve = res;
    });
    const waiter = new Waiter(this, cost, bytes, now, expiresAt, deadline, signal, resolve);
    if (task !== undefined) {
      waiter.task = task;
      waiter.options = options;
    }
    if (this.#list.size === 0) this.#lastEmptyAt = now;
    this.#list.push(waiter);
    const selector = this.#selector;
    if (selector !== undefined) {
      waiter.sel = new SelectorEntry(
        waiter,
        options?.tenant,
        checkNumber('priority', options?.priority, 0, {}),
        this.#estimator === undefined ? cost : this.#estimator.estimate(options?.kind ?? '', bytes),
      );
      selector.add(waiter);
    }
    if (this.#heapMode) {
      if (expiresAt !== Infinity) this.#heap.push(waiter);
    } else if (expiresAt < this.#lastExpiry) {
      this.#heapMode = true;
      for (let w = this.#list.head; w !== undefined; w = w.next) {
        if (w.expiresAt !== Infinity) this.#heap.push(w);
      }
    } else {
      this.#lastExpiry = expiresAt;
    }
    this.#queuedCost += cost;
    this.#queuedBytes += bytes;
    signal?.addEventListener('abort', waiter);
    this.#schedule(now);
    if (this.#events.queue !== undefined) {
      this.#emit('queue', { cost, bytes, queued: this.#list.size, queuedBytes: this.#queuedBytes });
    }
    return promise;
  }

  /** Hands out permits to waiters while capacity allows (strict head of line), dropping expired ones. */
  #dispatch(): void {
    const list = this.#list;
    if (list.size === 0) return;
    const selector = this.#selector;
    const timed =
      this.#earliest() !== undefined ||
      this.#order !== 'fifo' ||
      this.#codelTargetMs !== Infinity ||
      selector !== undefined;
    const now = timed ? this.#clock.now() : 0;
    const standing = timed && now - this.#lastEmptyAt >= this.#standingMs;
    const lifo = this.#order === 'lifo' || (this.#order === 'adaptive' && standing);
    const measured = this.#serviceMs > 0 ? this.#finishMargin() : 0;
    for (;;) {
      const w = selector !== undefined ? selector.peek(now) : lifo ? list.tail : list.head;
      if (w === undefined) break;
      if (timed) {
        // Never hand a permit to a waiter that is expired or can no longer finish by its deadline.
        if (w.expiresAt <= now || (w.deadline !== Infinity && now + measured > w.deadline)) {
          this.#fail(w, 'expired');
          continue;
        }
        if (standing && now - w.enqueuedAt >= this.#codelTargetMs) {
          this.#fail(w, 'expired');
          continue;
        }
      }
      if (!this.#fits(w.cost)) break;
      this.#unqueue(w, true, now);
      const permit = this.#grant(
        w.cost,
        timed ? now - w.enqueuedAt : Number.NaN,
        w.deadline !== Infinity,
      );
      w.resolve(w.task === undefined ? permit : this.#runWith(permit, w.task, w.options));
    }
    if (list.size === 0) this.#clearTimer();
  }

  #unqueue(w: Waiter, served: boolean, now: number): void {
    w.queued = false;
    this.#list.remove(w);
    if (this.#selector !== undefined) {
      if (served) this.#selector.served(w, now);
      else this.#selector.delete(w);
    }
    if (w.heapIndex >= 0) this.#heap.remove(w);
    if (this.#list.size === 0) {
      this.#heapMode = false;
      this.#lastExpiry = -Infinity;
    }
    this.#queuedCost -= w.cost;
    this.#queuedBytes -= w.bytes;
    w.signal?.removeEventListener('abort', w);
  }

  /** Removes a waiter and rejects its promise. */
  #fail(w: Waiter, reason: RejectReason, cause?: unknown): void {
    this.#unqueue(w, false, 0);
    if (reason === 'expired' && this.#events.expire !== undefined) {
      this.#emit('expire', { reason, cost: w.cost, waitedMs: this.#clock.now() - w.enqueuedAt });
    }
    w.resolve(Promise.reject(this.#reject(reason, w.cost, cause)));
  }

  /** The waiter that expires first, if any waiter has an expiry. */
  #earliest(): Waiter | undefined {
    if (this.#heapMode) return this.#heap.peek();
    const head = this.#list.head;
    return head !== undefined && head.expiresAt !== Infinity ? head : undefined;
  }

  /** Keeps one timer, at the earliest moment a waiter must leave the queue. */
  #schedule(now: number): void {
    let at = this.#earliest()?.expiresAt ?? Infinity;
    const head = this.#list.head;
    if (head !== undefined && this.#codelTargetMs !== Infinity) {
      const standingAt = this.#lastEmptyAt + this.#standingMs;
      at = Math.min(at, Math.max(standingAt, head.enqueuedAt + this.#codelTargetMs));
    }
    if (at === Infinity || at >= this.#timerAt) return;
    this.#clearTimer();
    this.#timerAt = at;
    this.#timer = this.#clock.setTimeout(this.#onTimer, Math.max(0, at - now));
  }

  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const now = this.#clock.now();
    for (let w = this.#earliest(); w !== undefined && w.expiresAt <= now; w = this.#earliest()) {
      this.#fail(w, 'expired');
    }
    if (this.#codelTargetMs !== Infinity && now - this.#lastEmptyAt >= this.#standingMs) {
      for (
        let w = this.#list.head;
        w !== undefined && now - w.enqueuedAt >= this.#codelTargetMs;
        w = this.#list.head
      ) {
        this.#fail(w, 'expired');
      }
    }
    this.#dispatch();
    if (this.#list.size > 0) this.#schedule(now);
  };

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #feed(startTime: number, inflight: number, rtt: number, dropped: boolean): void {
    const sample: Sample = { startTime, rtt, inflight, dropped };
    this.#algorithm.update(sample);
    const next = Math.floor(this.#algorithm.limit);
    if (next === this.#limit) return;
    const previous = this.#limit;
    this.#limit = next;
    this.#capacity = Math.max(next, this.#probeSlots);
    if (this.#events.limit !== undefined) {
      const decision = this.#algorithm.lastDecision;
      this.#emit('limit', {
        limit: next,
        previous,
        capacity: this.#capacity,
        sample,
        ...(decision === undefined ? {} : { decision }),
      });
    }
  }

  /** @param hasDeadline - the caller gave a deadline: its call is timed, deadline checks need the data. */
  #grant(cost: number, waitedMs: number, hasDeadline: boolean): Permit {
    this.#inflight += cost;
    this.#permits++;
    // Adaptive algorithms need every call timed (or one in `sampleEvery`), and so do calls with a
    // deadline (deadline checks
    // rely on the service-time estimate); otherwise one call in 32 keeps that estimate (queue
    // admission, retryAfterMs) current without a clock read per call.
    const timed =
      (this.#adaptive &&
        (this.#sampleEvery === 1 || ++this.#sampleCount % this.#sampleEvery === 0)) ||
      hasDeadline ||
      (++this.#untimed & 31) === 0 ||
      this.#events.release !== undefined;
    const gate = this.#gate;
    gate?.granted(cost);
    const inflight = gate === undefined ? this.#inflight : gate.inflight();
    const permit = new Permit(this, cost, timed ? this.#clock.now() : Number.NaN, inflight);
    if (this.#stall !== undefined && timed) this.#stall.arm();
    if (this.#events.acquire !== undefined) {
      this.#emit('acquire', { cost, inflight: this.#inflight, capacity: this.#capacity, waitedMs });
    }
    return permit;
  }

  #runWith<T>(
    permit: Permit,
    task: (signal: AbortSignal) => T | PromiseLike<T>,
    options: AcquireOptions | undefined,
  ): Promise<T> {
    const estimator = this.#estimator;
    const kind = options?.kind;
    if (estimator === undefined || kind === undefined) {
      return runUnderPermit(permit, task, options?.signal, this.#hooks);
    }
    // Fair queueing charges estimates: feed it what this kind of call really cost (ms held).
    const start = this.#clock.now();
    const bytes = options?.bytes ?? 0;
    return runUnderPermit(permit, task, options?.signal, {
      ...this.#hooks,
      onSettled: () => estimator.observe(kind, Math.max(0, this.#clock.now() - start), bytes),
    });
  }

  #reject(
    reason: RejectReason,
    cost: number,
    cause?: unknown,
    bytes = 0,
    tenant?: string,
  ): LimitExceededError {
    const units = Math.max(1, this.#inflight + this.#queuedCost + cost - this.#capacity);
    const retryAfterMs = Math.max(
      0,
      Math.ceil((units * this.#service()) / Math.max(1, this.#capacity)),
    );
    const message = describeRejection(reason, {
      inflight: this.#inflight,
      capacity: this.#capacity,
      queued: this.#list.size,
      maxQueued: this.#maxQueued,
      queuedCost: this.#queuedCost,
      queuedBytes: this.#queuedBytes,
      maxQueuedBytes: this.#maxQueuedBytes,
      maxCost: this.#maxCost,
      serviceMs: this.#service(),
      cost,
      bytes,
      tenant,
    });
    const error = new LimitExceededError(`limits: ${message}`, {
      reason,
      retryAfterMs,
      ...(cause === undefined ? {} : { cause }),
    });
    if (this.#events.reject !== undefined) this.#emit('reject', { reason, cost, retryAfterMs });
    return error;
  }

  #finishClose(): void {
    this.#stall?.stop();
    const resolvers = this.#drained;
    this.#drained = [];
    for (const resolve of resolvers) resolve();
  }

  #emit<E extends keyof LimiterEvents>(event: E, payload: Parameters<LimiterEvents[E]>[0]): void {
    try {
      (this.emit as (e: E, p: unknown) => boolean)(event, payload);
    } catch (error) {
      this.#reportListenerError(error);
    }
  }

  #reportListenerError(error: unknown): void {
    if (this.#events.error !== undefined) {
      try {
        this.emit('error', error);
        return;
      } catch {
        // An error listener that throws is reported like any other listener error.
      }
    }
    queueMicrotask(() => {
      throw error;
    });
  }
}

function checkCost(cost: unknown): number {
  return checkNumber('cost', cost, 1, { min: 0, minExclusive: true });
}

function checkBytes(bytes: unknown): number {
  return checkNumber('bytes', bytes, 0, { min: 0 });
}
