// A discrete-event world for a real `Limiter`: a simulated clock, a downstream of a given shape, and
// callers that send batches or open-loop arrivals through the limiter, with retries outside the
// permit (each attempt takes a permit) or inside it (one permit held across every attempt, as
// `limiter.run(() => fetchWithRetry(url))` does). Everything runs synchronously on simulated time:
// the limiter gets the clock (its stall detector's ticks, which report late calls, are timers on it)
// and is driven through `acquireWith`, so no promise is involved and a run is deterministic.
//
// Plain JavaScript so that the tests (through their TypeScript) and bench/ (against the built
// package) run the same world; its types are in traffic.d.mts.

/** A clock whose time moves only through {@link SimClock.run}: timers fire in time order, synchronously. */
export class SimClock {
  #now = 0;
  #seq = 0;
  /** Min-heap of timers by (at, seq). */
  #heap = [];

  now() {
    return this.#now;
  }

  setTimeout(fn, ms) {
    return this.at(this.#now + Math.max(0, ms), fn);
  }

  clearTimeout(handle) {
    if (handle !== null && typeof handle === 'object') handle.cancelled = true;
  }

  /** Calls `fn` at the absolute time `time` (not before now). @returns a handle for clearTimeout. */
  at(time, fn) {
    const timer = { at: Math.max(time, this.#now), seq: this.#seq++, fn, cancelled: false };
    const heap = this.#heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(timer, heap[p])) break;
      heap[i] = heap[p];
      i = p;
    }
    heap[i] = timer;
    return timer;
  }

  /** Timers not fired nor cancelled yet (cancelled ones are counted until they reach the top). */
  get pending() {
    return this.#heap.length;
  }

  /**
   * Fires timers in order until time `until`, until `stop()` answers true after a timer, or until
   * `maxEvents` timers fired. Time ends at `until` when no timer is left before it.
   * @returns the number of timers fired.
   */
  run(until, stop = () => false, maxEvents = Infinity) {
    const heap = this.#heap;
    let fired = 0;
    while (heap.length > 0 && heap[0].at <= until && fired < maxEvents) {
      const timer = pop(heap);
      if (timer.cancelled) continue;
      this.#now = timer.at;
      fired++;
      timer.fn();
      if (stop()) return fired;
    }
    if (until !== Infinity && fired < maxEvents) this.#now = Math.max(this.#now, until);
    return fired;
  }
}

function before(a, b) {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

function pop(heap) {
  const top = heap[0];
  const last = heap.pop();
  if (heap.length > 0) {
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l], m === i ? last : heap[m])) m = l;
      if (r < heap.length && before(heap[r], m === i ? last : heap[m])) m = r;
      if (m === i) break;
      heap[i] = heap[m];
      i = m;
    }
    heap[i] = last;
  }
  return top;
}

/**
 * The downstream shapes of the matrix. Each takes the requests the server is working on `n` (the new
 * one included) and the time, and answers how long the request takes; a shape may also cap the
 * requests it works on (`cap`: past it a request is deferred at once with a "try later" answer, or
 * dropped without an answer, so only the client's timeout tells) or the starts per second (`rate`:
 * past it, "try later"). A request's latency is fixed when it starts; the server works on it until
 * then even if the client gave up (a database keeps executing a query whose client timed out).
 */
export const SHAPES = {
  /** No limit: 100 ms whatever the load. */
  unlimited: { latencyMs: () => 100 },
  /**
   * A gentle knee: 100 ms up to 10 at once, then ×1.1 per request beyond; a request whose client
   * gave up leaves the server (an HTTP service that stops work when its client disconnects; with
   * `queueAt`, a queued request is dropped before it starts).
   */
  knee: { latencyMs: (n) => 100 * 1.1 ** Math.max(0, n - 10), abandon: true },
  /** A hard cap: at most 5 at once (100 ms each); beyond, an immediate "try later". */
  capDefer: { latencyMs: () => 100, cap: { max: 5, mode: 'defer' } },
  /** The same cap, dropping beyond it without an answer: only the client timeout tells. */
  capDrop: { latencyMs: () => 100, cap: { max: 5, mode: 'drop' } },
  /** A rate limit: 100 starts per second (sliding second), 50 ms each; beyond, "try later". */
  rate: { latencyMs: () => 50, rate: 100 },
  /** A slow link: 100 ms × the requests on it (throughput flat at 10 per second). */
  slowLink: { latencyMs: (n) => 100 * n },
  /** Seed 004's latency spike: 50 ms, 3,000 ms for requests started in [2 s, 10 s), then 50 ms. */
  s1: { latencyMs: (_n, t) => (t >= 2_000 && t < 10_000 ? 3_000 : 50) },
  /** Seed 000's saturated database: 4 at once at 100 ms; beyond, requests queue at the database. */
  s2: { latencyMs: () => 100, queueAt: 4 },
};

/**
 * A simulated downstream of one shape (see {@link SHAPES}) on `clock`, with relative jitter
 * `noise` (latency × (1 ± noise)) from `random`.
 */
export class Downstream {
  /** Requests the server is working on now. */
  inflight = 0;
  /** The most it ever worked on at once. */
  peak = 0;
  #shape;
  #clock;
  #random;
  #noise;
  /** Start times of the last second (a `rate` shape). */
  #starts = [];
  /** Requests waiting for one of `queueAt` workers (an `s2`-like shape), FIFO. */
  #waiting = [];
  #busy = 0;

  constructor(shape, clock, random, noise = 0.05) {
    this.#shape = shape;
    this.#clock = clock;
    this.#random = random;
    this.#noise = noise;
  }

  /**
   * Sends one request; `reply(kind)` is called once with `ok` or `defer`, or never (a drop).
   * @returns a function the client calls when it gives up on the request: a shape with `abandon`
   *   then stops working on it.
   */
  send(reply) {
    const shape = this.#shape;
    const clock = this.#clock;
    const now = clock.now();
    if (shape.rate !== undefined) {
      const starts = this.#starts;
      while (starts.length > 0 && starts[0] <= now - 1_000) starts.shift();
      if (starts.length >= shape.rate) {
        clock.setTimeout(() => reply('defer'), 1);
        return noop;
      }
      starts.push(now);
    }
    if (shape.cap !== undefined && this.inflight >= shape.cap.max) {
      if (shape.cap.mode === 'defer') clock.setTimeout(() => reply('defer'), 1);
      return noop;
    }
    this.inflight++;
    if (this.inflight > this.peak) this.peak = this.inflight;
    if (shape.queueAt !== undefined) {
      const entry = { reply };
      this.#waiting.push(entry);
      this.#serveQueue();
      if (!shape.abandon) return noop;
      // A request still queued whose client gave up is dropped before it starts.
      return () => {
        const i = this.#waiting.indexOf(entry);
        if (i < 0) return;
        this.#waiting.splice(i, 1);
        this.inflight--;
      };
    }
    const took = shape.latencyMs(this.inflight, now) * this.#jitter();
    const timer = clock.setTimeout(() => {
      this.inflight--;
      reply('ok');
    }, took);
    if (!shape.abandon) return noop;
    return () => {
      if (timer.cancelled) return;
      clock.clearTimeout(timer);
      this.inflight--;
    };
  }

  #jitter() {
    return 1 + this.#noise * (2 * this.#random() - 1);
  }

  #serveQueue() {
    const shape = this.#shape;
    while (this.#busy < shape.queueAt && this.#waiting.length > 0) {
      const { reply } = this.#waiting.shift();
      this.#busy++;
      const took = shape.latencyMs(this.#busy, this.#clock.now()) * this.#jitter();
      this.#clock.setTimeout(() => {
        this.#busy--;
        this.inflight--;
        reply('ok');
        this.#serveQueue();
      }, took);
    }
  }
}

function noop() {}

/** Fibonacci backoff in ms for attempt `k` (1 after the first failure): 100, 100, 200, 300, 500, … capped. */
export function fibonacciBackoffMs(k, unitMs = 100, capMs = 5_000) {
  let a = 1;
  let b = 1;
  for (let i = 1; i < k; i++) [a, b] = [b, a + b];
  return Math.min(capMs, a * unitMs);
}

/**
 * Sends traffic through `limiter` to `downstream` on `clock` and records what the limiter did.
 *
 * A job is one logical request: it ends when an attempt is answered `ok` within the client timeout.
 * A failed attempt (a "try later" answer, or no answer by `timeoutMs`) is retried after a Fibonacci
 * backoff — outside the permit (the permit is released as dropped, and the retry takes a new one) or
 * inside it (`retries: 'inside'`: the job keeps its permit across every attempt and backoff, and
 * releases it as a success at the end, as a task that retries within `limiter.run` does).
 *
 * Checks, at every grant: the units in flight beyond `max(floor(limit), probeSlots)` (`beyond`), and
 * how many grants went past `bound(limit)` (`overBound`); and the progress: the longest time a job
 * waited in the queue while no grant happened (`stuckMs`).
 */
export class Traffic {
  /** Jobs done. */
  done = 0;
  /** Jobs started (arrived). */
  started = 0;
  /** Attempts sent to the downstream. */
  attempts = 0;
  /** When the last job ended. */
  lastDoneAt = 0;
  /** The most units in flight beyond `max(floor(limit), probeSlots)` seen at a grant. */
  beyond = 0;
  /** The limit at that grant. */
  beyondAtLimit = 0;
  /** Grants that left more units in flight than `max(floor(limit), probeSlots) + bound(limit)`. */
  overBound = 0;
  /** Jobs waiting for a permit now. */
  waiting = 0;
  /** Longest span with jobs waiting and no grant (ms). */
  stuckMs = 0;
  /** Refusals by the limiter (a job then retries after a backoff). */
  refused = 0;
  #limiter;
  #downstream;
  #clock;
  #timeoutMs;
  #inside;
  #probeSlots;
  #bound;
  /** Since when jobs waited with no grant (NaN: nobody waiting). */
  #stuckSince = Number.NaN;

  /**
   * @param o.limiter - a `Limiter` built with `clock` (and a queue large enough for the jobs).
   * @param o.retries - `outside` (default) or `inside` the permit.
   * @param o.timeoutMs - the client timeout of one attempt (default 1,000 ms).
   * @param o.probeSlots - the limiter's `probeSlots` (default 1).
   * @param o.bound - the documented units beyond the limit at a grant, from the limit (default 0).
   */
  constructor(o) {
    this.#limiter = o.limiter;
    this.#downstream = o.downstream;
    this.#clock = o.clock;
    this.#timeoutMs = o.timeoutMs ?? 1_000;
    this.#inside = o.retries === 'inside';
    this.#probeSlots = o.probeSlots ?? 1;
    this.#bound = o.bound ?? (() => 0);
    o.limiter.on('acquire', (e) => this.#granted(e.inflight));
  }

  /** `count` jobs arrive now. */
  burst(count) {
    for (let i = 0; i < count; i++) this.#job();
  }

  /** Jobs arrive every `everyMs` from now until `forMs` later (open loop). */
  arrivals(everyMs, forMs) {
    const end = this.#clock.now() + forMs;
    const next = () => {
      this.#job();
      if (this.#clock.now() + everyMs < end) this.#clock.setTimeout(next, everyMs);
    };
    next();
  }

  /** Runs until every started job is done or `untilMs`. @returns whether every job is done. */
  runUntilDone(untilMs, maxEvents = 5_000_000) {
    this.#clock.run(untilMs, () => this.done === this.started, maxEvents);
    this.#checkStuck();
    return this.done === this.started;
  }

  #granted(inflight) {
    const limiter = this.#limiter;
    const limit = Math.floor(limiter.limit);
    const base = Math.max(limit, this.#probeSlots);
    const beyond = inflight - base;
    if (beyond > this.beyond) {
      this.beyond = beyond;
      this.beyondAtLimit = limit;
    }
    if (beyond > this.#bound(limit)) this.overBound++;
    this.#checkStuck();
    this.#stuckSince = Number.NaN;
  }

  #checkStuck() {
    if (!Number.isNaN(this.#stuckSince)) {
      const span = this.#clock.now() - this.#stuckSince;
      if (span > this.stuckMs) this.stuckMs = span;
    }
  }

  #job() {
    this.started++;
    const job = { failures: 0, permit: undefined };
    this.#acquire(job);
  }

  #acquire(job) {
    const limiter = this.#limiter;
    this.waiting++;
    if (Number.isNaN(this.#stuckSince)) this.#stuckSince = this.#clock.now();
    const request = {
      granted: (permit) => this.#run(job, permit),
      refused: () => {
        this.waiting--;
        this.refused++;
        job.failures++;
        this.#clock.setTimeout(() => this.#acquire(job), fibonacciBackoffMs(job.failures));
      },
    };
    const permit = limiter.acquireWith(request);
    if (permit !== undefined) this.#run(job, permit);
  }

  #run(job, permit) {
    this.waiting--;
    if (this.waiting === 0) this.#stuckSince = Number.NaN;
    job.permit = permit;
    this.#attempt(job);
  }

  #attempt(job) {
    const clock = this.#clock;
    this.attempts++;
    let settled = false;
    let abandon = noop;
    const timer = clock.setTimeout(() => {
      if (settled) return;
      settled = true;
      abandon();
      this.#failed(job);
    }, this.#timeoutMs);
    abandon = this.#downstream.send((kind) => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(timer);
      if (kind === 'ok') this.#succeeded(job);
      else this.#failed(job);
    });
  }

  #succeeded(job) {
    job.permit.success();
    this.done++;
    this.lastDoneAt = this.#clock.now();
  }

  #failed(job) {
    job.failures++;
    const wait = fibonacciBackoffMs(job.failures);
    if (this.#inside) {
      this.#clock.setTimeout(() => this.#attempt(job), wait);
      return;
    }
    job.permit.dropped();
    this.#clock.setTimeout(() => this.#acquire(job), wait);
  }
}

/**
 * The reference controller of the matrix, after Vector's adaptive request concurrency: it starts at
 * 1, adds 1 per round trip while the limit is in use and the RTT holds, and multiplies by 0.9 once per
 * round trip when the RTT rises (the round's mean over the running average plus twice its mean
 * deviation, and at least 5 % over it) or any call was dropped. A round trip ends at the first
 * sample that ends one average RTT after the round began.
 */
export class ReferenceLimit {
  limit = 1;
  #avg = Number.NaN;
  #dev = 0;
  #roundStart = Number.NEGATIVE_INFINITY;
  #sum = 0;
  #count = 0;
  #dropped = false;
  #used = false;

  update(sample) {
    const end = sample.startTime + sample.rtt;
    if (sample.dropped) this.#dropped = true;
    else {
      this.#sum += sample.rtt;
      this.#count++;
    }
    if (sample.inflight >= Math.floor(this.limit)) this.#used = true;
    const length = Number.isNaN(this.#avg) ? 0 : this.#avg;
    if (end - this.#roundStart < length) return this.limit;
    const mean = this.#count > 0 ? this.#sum / this.#count : Number.NaN;
    const rising =
      !Number.isNaN(this.#avg) && mean > this.#avg + Math.max(2 * this.#dev, 0.05 * this.#avg);
    if (this.#dropped || rising) this.limit = Math.max(1, Math.floor(this.limit * 0.9));
    else if (this.#used) this.limit += 1;
    if (!Number.isNaN(mean)) {
      if (Number.isNaN(this.#avg)) this.#avg = mean;
      else {
        this.#dev += 0.4 * (Math.abs(mean - this.#avg) - this.#dev);
        this.#avg += 0.4 * (mean - this.#avg);
      }
    }
    this.#roundStart = end;
    this.#sum = 0;
    this.#count = 0;
    this.#dropped = false;
    this.#used = false;
    return this.limit;
  }
}
