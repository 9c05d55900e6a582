import type { MonotonicTime } from '../internal/MonotonicTime.js';
import { ExpiryHeap } from './ExpiryHeap.js';
import { RunLane } from './RunLane.js';
import type { ChargeEstimator, Selector, SelectorKeys } from './Selector.js';
import { SelectorEntry, type Waiter, WaiterExtras } from './Waiter.js';
import { WaiterList } from './WaiterList.js';

/** @internal How a `WaitQueue` orders and bounds its waiters (resolved limiter options). */
export interface WaitQueueOptions {
  /** Longest wait in the queue (ms); `Infinity`: no bound. */
  maxQueueWaitMs: number;
  /** Who is served next without a selector: the oldest, the newest, or the newest while a queue stands. */
  order: 'fifo' | 'lifo' | 'adaptive';
  /** A queue that has not emptied for this long is standing (adaptive order, CoDel). */
  standingMs: number;
  /** CoDel: while standing, a waiter queued this long leaves (`Infinity`: CoDel off). */
  codelTargetMs: number;
  /** Fair or priority queueing: chooses who is served next (the list keeps arrival order). */
  selector: Selector | undefined;
  /** What fair queueing charges a request (`undefined`: its cost). */
  estimator: ChargeEstimator | undefined;
}

/**
 * @internal The limiter's hold-time estimate, as the queue reads it for deadline checks (the
 * limiter's `ServiceTime`).
 */
export interface FinishEstimate {
  /** Mean hold time (ms); 0 until a call was timed. */
  readonly meanMs: number;
  /** Time a call needs to finish once started. */
  finishMargin(): number;
}

/**
 * @internal Who grants the queue's waiters: the limiter above it. The one call back from the queue
 * into its limiter (the queue is the lower layer and knows nothing else of it): while serving, it
 * asks whether the next request fits and hands it over to be granted, and hands over a waiter that
 * left by time to be refused.
 */
export interface Grantor {
  /** Whether `cost` units fit now. */
  _fits(cost: number): boolean;
  /**
   * Grants `w`, already out of the queue: counts it, makes it the permit, and ends its wait (resolves
   * its caller, starts its task, or answers its request).
   * @param now - the limiter's time if read for this dispatch (`NaN` otherwise: its wait is not
   *   measured).
   */
  _serve(w: Waiter, now: number): void;
  /** Grants a lane request (a queued plain `run()`, no waiter) and starts its task. */
  _serveLane(task: unknown, resolve: unknown): void;
  /** Refuses `w`, which left the queue by time (expired, past its deadline, CoDel). */
  _expired(w: Waiter): void;
}

/**
 * @internal The limiter's wait queue: the {@link Waiter}s in arrival order, their expiry (one timer on
 * the limiter's clock, at the earliest moment a waiter must leave), the order policy (FIFO, LIFO,
 * adaptive, CoDel) and the selector (fair or priority queueing). It decides who is next and who must
 * leave by time; the limiter (its {@link Grantor}) says whether the next one fits, grants it and refuses
 * the others. {@link dispatch} serves waiters in order while they fit (strict head of line); a
 * waiter that must leave by time (expired, past its deadline, CoDel) is removed and handed to
 * `expired` on the way, and when the timer fires. Counters: `size`, `queuedCost`, `queuedBytes`.
 */
export class WaitQueue {
  readonly #list = new WaiterList();
  /**
   * Queued `run()`s of cost 1 without options, in compact form (no waiter), older than every listed
   * waiter: the admission adds to it while {@link laneOpen}, dispatch serves it first.
   */
  readonly lane = new RunLane();
  readonly #heap = new ExpiryHeap();
  readonly #time: MonotonicTime;
  readonly #maxQueueWaitMs: number;
  readonly #order: 'fifo' | 'lifo' | 'adaptive';
  readonly #standingMs: number;
  readonly #codelTargetMs: number;
  readonly #selector: Selector | undefined;
  readonly #estimator: ChargeEstimator | undefined;
  /** Every dispatch needs the time (order, CoDel or selector), not only when something may expire. */
  readonly #alwaysTimed: boolean;
  readonly #grantor: Grantor;
  readonly #service: FinishEstimate;
  /**
   * While waiters arrive in expiry order (one `maxQueueWaitMs`, or the same `timeoutMs` on every
   * call) the arrival list is sorted by expiry; the heap is used once an earlier expiry arrives after
   * a later one, until the queue empties.
   */
  #heapMode = false;
  #lastExpiry = -Infinity;
  /** Queued waiters with a deadline (with no `maxQueueWaitMs`, only they can expire). */
  #deadlines = 0;
  #lastEmptyAt = 0;
  /** A dispatch is running (a release from inside it leaves the serving to that loop). */
  #dispatching = false;
  #timer: unknown = undefined;
  #timerAt = Infinity;
  /** The time's skew when the timer was set: a backward jump since then is detected when it fires. */
  #timerSkew = 0;
  #cost = 0; // the listed waiters' costs
  /** Bytes held by queued waiters. */
  queuedBytes = 0;

  /**
   * @param service - the limiter's hold-time estimate (the margin of deadline checks).
   * @param grantor - the limiter: grants the waiters served and refuses those that leave by time.
   */
  constructor(
    options: WaitQueueOptions,
    time: MonotonicTime,
    service: FinishEstimate,
    grantor: Grantor,
  ) {
    this.#time = time;
    this.#maxQueueWaitMs = options.maxQueueWaitMs;
    this.#order = options.order;
    this.#standingMs = options.standingMs;
    this.#codelTargetMs = options.codelTargetMs;
    this.#selector = options.selector;
    this.#estimator = options.estimator;
    this.#alwaysTimed =
      options.order !== 'fifo' ||
      options.codelTargetMs !== Infinity ||
      options.selector !== undefined;
    this.#grantor = grantor;
    this.#service = service;
  }

  /**
   * Nothing in this queue acts on a waiter's arrival time unless the waiter has a deadline: no
   * `maxQueueWaitMs`, FIFO order, no CoDel, no selector. A plain waiter's arrival is then only
   * reported (`oldestQueuedMs`, `waitedMs`) and may be read coarsely (`MonotonicTime.turnNow`).
   */
  get arrivalReportedOnly(): boolean {
    return this.#maxQueueWaitMs === Infinity && !this.#alwaysTimed;
  }

  /** Requests in the queue (waiters and lane requests). */
  get size(): number {
    return this.#list.size + this.lane.size;
  }

  /** Sum of the queued requests' costs. */
  get queuedCost(): number {
    return this.#cost + this.lane.size;
  }

  /** The oldest listed waiter (lane requests are older still, and not waiters). */
  get head(): Waiter | undefined {
    return this.#list.head;
  }

  /** Calls `fn` for each listed waiter, oldest first (`fn` must not change the queue). */
  forEach(fn: (w: Waiter) => void): void {
    this.#list.forEach(fn);
  }

  /**
   * Whether a request may join the {@link lane} and FIFO order still hold: nothing acts on arrival
   * times (so nothing in it ever expires or is picked out of order) and no waiter is listed.
   */
  get laneOpen(): boolean {
    return this.#list.size === 0 && this.arrivalReportedOnly;
  }

  /** The selector (fair or priority queueing), if any. */
  get selector(): Selector | undefined {
    return this.#selector;
  }

  /** Whether `w` is still queued. */
  has(w: Waiter): boolean {
    return this.#list.has(w);
  }

  /**
   * Whether a newcomer is next in line although waiters are queued: LIFO order (and adaptive order
   * while a standing queue persists) serves the newest first, so one that fits starts at once
   * (work-conserving).
   */
  newestFirst(): boolean {
    if (this.#selector !== undefined || this.#order === 'fifo') return false;
    return this.#order === 'lifo' || this.#time.now() - this.#lastEmptyAt >= this.#standingMs;
  }

  /**
   * Serves waiters while they fit (strict head of line), dropping on the way those that must leave.
   * The loop lives here, so serving a waiter costs the limiter only its `_fits` and `_serve` calls.
   * @param known - the limiter's time, if the caller just read it (`NaN` otherwise).
   */
  dispatch(known: number): void {
    // A waiter served here may release at once (a task that throws, an action that ends
    // synchronously): that release must not dispatch again from inside this loop (the stack would
    // grow with the queue); the loop re-reads capacity each turn and serves what it freed.
    if (this.size === 0 || this.#dispatching) return;
    this.#dispatching = true;
    try {
      this.#dispatchLoop(known);
    } finally {
      this.#dispatching = false;
    }
  }

  #dispatchLoop(known: number): void {
    const grantor = this.#grantor;
    // Lane requests are the oldest: they go first, and need no time.
    const lane = this.lane;
    while (lane.size > 0) {
      if (!grantor._fits(1)) {
        if (this.#list.size === 0) this.clearTimer();
        return;
      }
      const task = lane.firstTask;
      const resolve = lane.firstResolve;
      lane.dropFirst();
      grantor._serveLane(task, resolve);
    }
    const timed = this.#timed();
    const now = timed ? (Number.isNaN(known) ? this.#time.now() : known) : Number.NaN;
    const standing = timed && this.standing(now);
    const service = this.#service;
    const margin = timed && service.meanMs > 0 ? service.finishMargin() : 0;
    for (;;) {
      const w = this.#next(now, margin, standing);
      if (w === undefined || !grantor._fits(w.cost)) break;
      this.#unqueue(w, true, now);
      grantor._serve(w, now);
    }
    if (this.#list.size === 0) this.clearTimer();
  }

  /** Whether choosing the next waiter needs the time (something may expire, or the order depends on it). */
  #timed(): boolean {
    return (
      ((this.#maxQueueWaitMs !== Infinity || this.#deadlines > 0) &&
        this.#earliestExpiry() !== Infinity) ||
      this.#alwaysTimed
    );
  }

  /** Whether the queue has not emptied for `standingMs` at `now` (false for `NaN`). */
  standing(now: number): boolean {
    return now - this.#lastEmptyAt >= this.#standingMs;
  }

  /**
   * The waiter to serve next (strict head of line), after removing every one that must leave first:
   * expired, unable to finish by its deadline (`now + margin` past it), or CoDel's while `standing`.
   * It stays queued until served.
   * @param now - the limiter's time, or `NaN` when the choice does not need it (see `#timed`).
   * @param margin - time a call needs to finish once started (0: unknown).
   */
  #next(now: number, margin: number, standing: boolean): Waiter | undefined {
    const list = this.#list;
    // Untimed (FIFO, no selector, nothing can expire): the head.
    if (!this.#alwaysTimed && Number.isNaN(now)) return list.head;
    const selector = this.#selector;
    const lifo = this.#order === 'lifo' || (this.#order === 'adaptive' && standing);
    for (;;) {
      const w = selector !== undefined ? selector.peek(now) : lifo ? list.tail : list.head;
      if (w === undefined || Number.isNaN(now) || !this.#mustLeave(w, now, margin, standing)) {
        return w;
      }
      this.#expire(w);
    }
  }

  /** Whether `w` must leave (expired, cannot finish by its deadline, CoDel's) instead of being served. */
  #mustLeave(w: Waiter, now: number, margin: number, standing: boolean): boolean {
    const extras = w.extras;
    if (extras !== undefined) {
      const deadline = extras.deadline;
      if (deadline !== Infinity && (deadline <= now || now + margin > deadline)) return true;
    }
    return (
      w.enqueuedAt + this.#maxQueueWaitMs <= now ||
      (standing && now - w.enqueuedAt >= this.#codelTargetMs)
    );
  }

  /**
   * Adds a waiter (with a selector, it must have extras) and sets the timer if it may have to leave
   * earlier than the timer fires.
   * @param keys - what the selector orders by (tenant, priority, kind).
   * @throws what a user's estimator or fairness quantum function throws, before anything changes.
   */
  add(w: Waiter, now: number, keys: SelectorKeys | undefined): void {
    const selector = this.#selector;
    if (selector !== undefined) {
      // Everything that can throw (a user's estimator, a fairness quantum function) runs first: a
      // refused waiter must leave nothing behind.
      const extras = w.extras as WaiterExtras;
      const estimator = this.#estimator;
      extras.sel = new SelectorEntry(
        w,
        keys?.tenant,
        keys?.priority ?? 0,
        estimator === undefined ? w.cost : estimator.estimate(keys?.kind ?? '', extras.bytes),
      );
      selector.add(w);
    }
    const list = this.#list;
    if (list.size === 0) this.#lastEmptyAt = now;
    list.push(w);
    const expiresAt = this.#expiry(w);
    if (this.#heapMode) {
      if (expiresAt !== Infinity) this.#toHeap(w, expiresAt);
    } else if (expiresAt < this.#lastExpiry) {
      this.#heapMode = true;
      list.forEach((x) => {
        const at = this.#expiry(x);
        if (at !== Infinity) this.#toHeap(x, at);
      });
    } else {
      this.#lastExpiry = expiresAt;
    }
    this.#cost += w.cost;
    const extras = w.extras;
    if (extras !== undefined) {
      this.queuedBytes += extras.bytes;
      if (extras.deadline !== Infinity) this.#deadlines++;
      extras.signal?.addEventListener('abort', w);
    }
    // A waiter that never expires cannot need an earlier timer (CoDel's depends on the head).
    if (expiresAt !== Infinity || this.#codelTargetMs !== Infinity) this.#schedule(now);
  }

  /** Whether the selector puts `w` first now (work-conserving: it may start before the next release). */
  selectorPicks(w: Waiter, now: number): boolean {
    return this.#selector?.peek(now) === w;
  }

  /** Removes a waiter that is being served (the newcomer the selector put first). */
  take(w: Waiter, now: number): void {
    this.#unqueue(w, true, now);
  }

  /** Removes a waiter that leaves without being served (aborted, closed). */
  remove(w: Waiter): void {
    this.#unqueue(w, false, 0);
  }

  /** Cancels the timer (the queue emptied, or the limiter closed). */
  clearTimer(): void {
    if (this.#timer === undefined) return;
    this.#time.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  #unqueue(w: Waiter, served: boolean, now: number): void {
    this.#list.remove(w);
    if (this.#selector !== undefined) {
      if (served) this.#selector.served(w, now);
      else this.#selector.delete(w);
    }
    const extras = w.extras;
    if (extras !== undefined) {
      if (extras.heapIndex >= 0) this.#heap.remove(w);
      if (extras.deadline !== Infinity) this.#deadlines--;
      this.queuedBytes -= extras.bytes;
      extras.signal?.removeEventListener('abort', w);
    }
    if (this.#list.size === 0) {
      this.#heapMode = false;
      this.#lastExpiry = -Infinity;
    }
    this.#cost -= w.cost;
  }

  /** Removes a waiter that must leave by time and hands it to the limiter to refuse. */
  #expire(w: Waiter): void {
    this.#unqueue(w, false, 0);
    this.#grantor._expired(w);
  }

  #toHeap(w: Waiter, expiresAt: number): void {
    w.extras ??= new WaiterExtras();
    this.#heap.push(w, expiresAt);
  }

  /** Clock ms after which `w` leaves the queue (`Infinity`: never by time). */
  #expiry(w: Waiter): number {
    const extras = w.extras;
    const deadline = extras === undefined ? Infinity : extras.deadline;
    // A plain waiter's times are not even read (each is one more memory access per grant).
    if (this.#maxQueueWaitMs === Infinity) return deadline;
    return Math.min(deadline, w.enqueuedAt + this.#maxQueueWaitMs);
  }

  /** The waiter that expires first (it may never expire: check `#earliestExpiry`). */
  #earliest(): Waiter | undefined {
    return this.#heapMode ? this.#heap.peek() : this.#list.head;
  }

  /** When the first waiter expires (`Infinity`: none ever does). */
  #earliestExpiry(): number {
    if (this.#heapMode) return this.#heap.peekTime();
    const head = this.#list.head;
    return head === undefined ? Infinity : this.#expiry(head);
  }

  /** Keeps one timer, at the earliest moment a waiter must leave the queue. */
  #schedule(now: number): void {
    let at = this.#earliestExpiry();
    const head = this.#list.head;
    if (head !== undefined && this.#codelTargetMs !== Infinity) {
      const standingAt = this.#lastEmptyAt + this.#standingMs;
      at = Math.min(at, Math.max(standingAt, head.enqueuedAt + this.#codelTargetMs));
    }
    if (at === Infinity || at >= this.#timerAt) return;
    this.clearTimer();
    this.#timerAt = at;
    this.#timerSkew = this.#time.skew;
    this.#timer = this.#time.clock.setTimeout(this.#fire, Math.max(0, at - now));
  }

  readonly #fire = (): void => {
    const due = this.#timerAt;
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const time = this.#time;
    let now = time.now();
    if (now < due && time.skew !== this.#timerSkew) {
      // The clock jumped back since the timer was set; the timer firing shows that real time
      // reached its due moment: move the limiter's time there, so waiters leave on time.
      time.skew += due - now;
      now = due;
    }
    while (this.#earliestExpiry() <= now) this.#expire(this.#earliest() as Waiter);
    if (this.#codelTargetMs !== Infinity && this.standing(now)) {
      for (
        let w = this.#list.head;
        w !== undefined && now - w.enqueuedAt >= this.#codelTargetMs;
        w = this.#list.head
      ) {
        this.#expire(w);
      }
    }
    this.dispatch(now);
    if (this.#list.size > 0) this.#schedule(now);
  };
}
