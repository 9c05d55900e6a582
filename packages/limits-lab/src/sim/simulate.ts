import {
  type AcquireOptions,
  type Clock,
  type LimitExceededError,
  Limiter,
  type LimiterOptions,
  type Permit,
  type PermitRequest,
  REJECT_REASONS,
  type RejectReason,
  seededRandom,
} from 'limits-core';
import { checkKeys, checkNumber, checkObject, formatValue } from 'limits-core/internal';
import { TimelineRecorder } from '../TimelineRecorder.js';
import type { Arrival, CallOutcome, Downstream } from '../traffic.js';
import { GoodputBins, type Spike } from './GoodputBins.js';
import { LatencyHistogram } from './LatencyHistogram.js';
import type { SimResult } from './SimResult.js';
import { type SimEvent, VirtualClock } from './VirtualClock.js';

/** What a configuration's limiter options are built from, once per run. */
export interface LimiterEnv {
  /** The run's virtual clock (the simulator also sets it as the limiter's `clock`). */
  clock: Clock;
  /** A seeded random source of the run's own, for the algorithm's probe jitter. */
  random: () => number;
}

/**
 * A closed loop: `clients` callers, each sending its next request when the previous one ends. The run
 * ends when the requests run out or `durationMs` passes: an endless source needs `durationMs`.
 */
export interface ClosedLoop {
  /** Callers, an integer in [1, 1,000,000]. */
  clients: number;
  /** Pause between a caller's answer and its next request, in ms, ≥ 0. A refused caller waits at least 1 ms. @default 0 */
  thinkMs?: number;
}

/** Options of {@link simulate}. */
export interface SimulateOptions {
  /** The configuration's name, for tables. @default 'limiter' */
  name?: string;
  /**
   * The limiter under test: its options (without `clock`: the simulator sets it), or a function
   * building them for the run (algorithms keep state: build a fresh one per run).
   */
  limiter: LimiterOptions | ((env: LimiterEnv) => LimiterOptions);
  /** The downstream model. */
  downstream: Downstream;
  /**
   * The requests, sorted by `atMs`, read one at a time (a generator of a million keeps memory flat).
   * With `closedLoop`, their `atMs` is ignored: each caller takes the next one's key, cost,
   * criticality and budget when it sends, until they run out or `durationMs` passes.
   */
  arrivals: Iterable<Arrival> | Iterator<Arrival>;
  /** Send the requests in a closed loop instead of at their `atMs`. */
  closedLoop?: ClosedLoop;
  /** The seed of every random draw in the run (downstream, algorithm), an integer. @default 1 */
  seed?: number;
  /**
   * The measured span, in ms: no request is sent after it (closed loop), and rates count calls
   * ending before it. @default the end of the last call
   */
  durationMs?: number;
  /** Spans where the downstream is sick: the recovery after each is reported, and they are shaded on the timeline. */
  spikes?: readonly Spike[];
  /**
   * Deadline admission: acquire each request with its `budgetMs` as `timeoutMs`, so the limiter
   * refuses (`deadline`) or drops from its queue (`expired`) what cannot finish in time. @default false
   */
  deadlineAdmission?: boolean;
  /** Record the limiter's timeline (`false`: skip it, faster). @default `{ bucketMs: 100 }` */
  timeline?: false | { bucketMs?: number; maxPoints?: number };
  /** Called with every request once it is answered or refused (for tests and debugging). */
  onCall?: (call: CallRecord) => void;
}

/** One request's story, for {@link SimulateOptions.onCall}. */
export interface CallRecord {
  /** When it arrived, in virtual ms. */
  arrivalMs: number;
  /** When the downstream started it (`NaN` if refused). */
  startMs: number;
  /** When it was answered or refused. */
  endMs: number;
  /** The downstream's answer, or the refusal's reason. */
  outcome: CallOutcome | RejectReason;
  /** Calls on the downstream when it started, itself included (0 if refused). */
  inflight: number;
}

const OPTION_KEYS = [
  'name',
  'limiter',
  'downstream',
  'arrivals',
  'closedLoop',
  'seed',
  'durationMs',
  'spikes',
  'deadlineAdmission',
  'timeline',
  'onCall',
] as const;

/** Seeds of the run's independent random streams, derived from its one seed. */
const DOWNSTREAM_STREAM = 0x2545f491;
const ALGORITHM_STREAM = 0x9e3779b9;

/**
 * Runs one limiter configuration against a modelled downstream on virtual time and measures it:
 * goodput, latency, refusals by reason, wasted work, in-flight, recovery after each spike, and the
 * limiter's timeline. The limiter is a real limits-core `Limiter` on a virtual clock; every timer it
 * sets, every call's end and every closed-loop send is an event of one heap, run in time order (in
 * scheduling order at equal times, calls' ends before arrivals at the same ms). Same options and
 * seed, same result: no wall time, no real timer. Memory stays flat in the number of arrivals (they
 * are read one at a time; latencies go to a fixed-size histogram).
 *
 * @throws TypeError/RangeError naming the option for bad options; RangeError for an arrival out of
 *   order or a downstream answer that is not a finite `serviceMs` ≥ 0 and a known outcome.
 * @example
 * ```ts
 * const result = simulate({
 *   name: 'fixed:2',
 *   limiter: { limit: 2 },
 *   downstream: { call: () => ({ serviceMs: 100, outcome: 'success' }) },
 *   arrivals: [{ atMs: 0 }, { atMs: 0 }, { atMs: 0 }],
 * });
 * result.refused.at_limit; // 1
 * ```
 */
export function simulate(options: SimulateOptions): SimResult {
  checkKeys('simulate', options ?? null, OPTION_KEYS);
  const downstream = options.downstream;
  if (
    typeof downstream !== 'object' ||
    downstream === null ||
    typeof downstream.call !== 'function'
  ) {
    throw new TypeError(
      `limits: option "downstream" must be an object with a call() function, got ${formatValue(downstream)}`,
    );
  }
  const seed = checkNumber('seed', options.seed, 1, { integer: true });
  const durationMs = checkNumber('durationMs', options.durationMs, Number.NaN, {
    min: 0,
    allowInfinity: true,
  });
  const closed = checkClosedLoop(options.closedLoop);
  const spikes = checkSpikes(options.spikes);
  const iterator = iteratorOf(options.arrivals);
  const clock = new VirtualClock();
  const env: LimiterEnv = { clock, random: seededRandom(seed ^ ALGORITHM_STREAM) };
  const built =
    typeof options.limiter === 'function'
      ? options.limiter(env)
      : checkObject('limiter', options.limiter);
  if (built === undefined) throw new TypeError('limits: option "limiter" is required');
  const limiter = new Limiter({ ...built, clock });
  const timelineOptions = options.timeline === undefined ? {} : options.timeline;
  const recorder =
    timelineOptions === false
      ? undefined
      : new TimelineRecorder({ ...checkTimeline(timelineOptions), clock }).track(limiter);
  const run = new Run(
    limiter,
    clock,
    downstream,
    seededRandom(seed ^ DOWNSTREAM_STREAM),
    options.deadlineAdmission === true,
    options.onCall,
    Number.isNaN(durationMs) ? Number.POSITIVE_INFINITY : durationMs,
  );
  // Refusals are LimitExceededErrors, and capturing their stacks took 80 % of a run that refuses
  // most requests (Vegas refusing 83 % of 100,000 arrivals: 930 ms → 300 ms). Nobody reads those
  // stacks here (an error thrown by the downstream model has none either); the limit is restored
  // however the run ends.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    if (closed === undefined) run.openLoop(iterator);
    else run.closedLoop(iterator, closed);
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
  const span = Number.isNaN(durationMs) || durationMs === Infinity ? clock.now() : durationMs;
  let timeline: SimResult['timeline'];
  if (recorder !== undefined) {
    for (const s of spikes) recorder.mark('spike', s.fromMs, s.toMs);
    recorder.stop();
    timeline = recorder.timeline();
  }
  return run.result(options.name ?? 'limiter', span, spikes, timeline);
}

function iteratorOf(arrivals: unknown): Iterator<Arrival> {
  if (typeof arrivals === 'object' && arrivals !== null) {
    const it = arrivals as Partial<Iterable<Arrival>> & Partial<Iterator<Arrival>>;
    if (typeof it[Symbol.iterator] === 'function')
      return (it as Iterable<Arrival>)[Symbol.iterator]();
    if (typeof it.next === 'function') return it as Iterator<Arrival>;
  }
  throw new TypeError(
    `limits: option "arrivals" must be an iterable or an iterator of arrivals, got ${formatValue(arrivals)}`,
  );
}

function checkClosedLoop(value: unknown): Required<ClosedLoop> | undefined {
  if (value === undefined) return undefined;
  checkKeys('simulate', value, ['clients', 'thinkMs'], 'closedLoop.');
  const loop = value as ClosedLoop;
  return {
    clients: checkNumber('closedLoop.clients', loop.clients ?? null, 1, {
      min: 1,
      max: 1_000_000,
      integer: true,
    }),
    thinkMs: checkNumber('closedLoop.thinkMs', loop.thinkMs, 0, { min: 0 }),
  };
}

function checkSpikes(value: unknown): Spike[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new TypeError(`limits: option "spikes" must be an array, got ${formatValue(value)}`);
  }
  return value.map((s: unknown, i) => {
    checkKeys('simulate', s ?? null, ['fromMs', 'toMs'], `spikes[${i}].`);
    const spike = s as Spike;
    const fromMs = checkNumber(`spikes[${i}].fromMs`, spike.fromMs ?? null, 0, { min: 0 });
    const toMs = checkNumber(`spikes[${i}].toMs`, spike.toMs ?? null, 0, {
      min: fromMs,
      minExclusive: true,
    });
    return { fromMs, toMs };
  });
}

function checkTimeline(value: unknown): { bucketMs?: number; maxPoints?: number } {
  checkKeys('simulate', value, ['bucketMs', 'maxPoints'], 'timeline.');
  return value as { bucketMs?: number; maxPoints?: number };
}

const OUTCOMES: readonly string[] = ['success', 'failure', 'overload'];

/** One request, from its arrival to its answer or refusal: the limiter's `PermitRequest`, and the event of its end. */
class Call implements PermitRequest, SimEvent {
  permit: Permit | undefined = undefined;
  outcome: CallOutcome = 'success';
  startMs = Number.NaN;
  serviceMs = 0;
  inflight = 0;
  constructor(
    readonly run: Run,
    readonly arrivalMs: number,
    readonly budgetMs: number,
    readonly client: number,
  ) {}
  granted(permit: Permit): void {
    this.run.start(this, permit);
  }
  refused(error: LimitExceededError): void {
    this.run.refused(this, error);
  }
  fire(): void {
    this.run.end(this);
  }
}

/** A closed-loop caller's next send. */
class Send implements SimEvent {
  constructor(
    readonly run: Run,
    readonly client: number,
  ) {}
  fire(): void {
    this.run.send(this.client);
  }
}

/** The state of one run: the limiter, the calls outstanding, and the measures. */
class Run {
  readonly #limiter: Limiter;
  readonly #clock: VirtualClock;
  readonly #downstream: Downstream;
  readonly #random: () => number;
  readonly #deadlines: boolean;
  readonly #onCall: ((call: CallRecord) => void) | undefined;
  /** The measured span's end (`Infinity`: the end of the last call). */
  readonly #spanEnd: number;
  readonly #latency = new LatencyHistogram();
  readonly #bins = new GoodputBins();
  readonly #refused = new Map<RejectReason, number>();
  readonly #outcomes = { success: 0, failure: 0, overload: 0 };
  #arrivals = 0;
  #admitted = 0;
  #goodInSpan = 0;
  #inBudgetInSpan = 0;
  #wastedCalls = 0;
  #wastedMs = 0;
  #inflight = 0;
  #peak = 0;
  /** ∫ in-flight dt over the span, up to `#areaAt`. */
  #area = 0;
  #areaAt = 0;
  /** Requests offered and not yet answered or refused. */
  #outstanding = 0;
  // Closed loop only.
  #source: Iterator<Arrival> | undefined;
  #thinkMs = 0;
  #sendsPending = 0;
  #exhausted = false;

  constructor(
    limiter: Limiter,
    clock: VirtualClock,
    downstream: Downstream,
    random: () => number,
    deadlines: boolean,
    onCall: ((call: CallRecord) => void) | undefined,
    spanEnd: number,
  ) {
    this.#limiter = limiter;
    this.#clock = clock;
    this.#downstream = downstream;
    this.#random = random;
    this.#deadlines = deadlines;
    this.#onCall = onCall;
    this.#spanEnd = spanEnd;
  }

  /** Offers each arrival at its time, then runs until every call has ended. */
  openLoop(arrivals: Iterator<Arrival>): void {
    const clock = this.#clock;
    let previous = 0;
    for (let next = arrivals.next(); next.done !== true; next = arrivals.next()) {
      const arrival = next.value;
      const at = arrival?.atMs;
      if (typeof at !== 'number' || !(at >= previous) || at === Infinity) {
        throw new RangeError(
          `limits: arrival ${this.#arrivals} has atMs ${formatValue(at)}: arrivals must be sorted by atMs, finite and ≥ 0 (the previous one was at ${previous})`,
        );
      }
      previous = at;
      // Events due at the arrival's ms (calls ending, timers) run first: runUntil is inclusive.
      clock.runUntil(at);
      this.#offer(arrival, -1);
    }
    this.#drain();
  }

  /** Starts every caller at time 0, then runs until the requests run out or the span passes. */
  closedLoop(source: Iterator<Arrival>, loop: Required<ClosedLoop>): void {
    this.#source = source;
    this.#thinkMs = loop.thinkMs;
    for (let c = 0; c < loop.clients; c++) this.#schedule(0, c);
    this.#drain();
  }

  /** A closed-loop caller's turn: it sends its next request, if any is left and the span has not passed. */
  send(client: number): void {
    this.#sendsPending--;
    if (this.#exhausted || this.#clock.now() >= this.#spanEnd) return;
    const next = (this.#source as Iterator<Arrival>).next();
    if (next.done === true) {
      this.#exhausted = true;
      return;
    }
    this.#offer(next.value, client);
  }

  /** Runs events until no request is outstanding and no caller is due to send (the limiter's own timers then stop mattering). */
  #drain(): void {
    const clock = this.#clock;
    while (this.#outstanding > 0 || this.#sendsPending > 0) {
      if (!clock.step()) break;
    }
    this.#track(clock.now());
  }

  #offer(arrival: Arrival, client: number): void {
    this.#arrivals++;
    this.#outstanding++;
    const budget = arrival.budgetMs ?? Number.POSITIVE_INFINITY;
    const call = new Call(this, this.#clock.now(), budget, client);
    let options: AcquireOptions | undefined;
    // Only what the arrival carries: a call without options takes the limiter's fast path.
    if (arrival.cost !== undefined && arrival.cost !== 1) options = { cost: arrival.cost };
    if (arrival.criticality !== undefined)
      options = { ...options, criticality: arrival.criticality };
    if (arrival.key !== undefined)
      options = { ...options, tenant: arrival.key, cohort: arrival.key };
    if (this.#deadlines && budget !== Number.POSITIVE_INFINITY) {
      options = { ...options, timeoutMs: budget };
    }
    const permit = this.#limiter.acquireWith(call, options);
    if (permit !== undefined) this.start(call, permit);
  }

  /** A call was granted its permit: the downstream takes it, and its end is scheduled. */
  start(call: Call, permit: Permit): void {
    const now = this.#clock.now();
    this.#admitted++;
    this.#track(now);
    const inflight = ++this.#inflight;
    if (inflight > this.#peak) this.#peak = inflight;
    const answer = this.#downstream.call(now, inflight, this.#random);
    const serviceMs = answer?.serviceMs;
    if (
      typeof serviceMs !== 'number' ||
      !(serviceMs >= 0) ||
      serviceMs === Infinity ||
      !OUTCOMES.includes(answer.outcome)
    ) {
      throw new RangeError(
        `limits: the downstream's call() must return { serviceMs: a finite number ≥ 0, outcome: "success", "failure" or "overload" }, got serviceMs ${formatValue(serviceMs)} and outcome ${formatValue(answer?.outcome)}`,
      );
    }
    call.permit = permit;
    call.startMs = now;
    call.serviceMs = serviceMs;
    call.outcome = answer.outcome;
    call.inflight = inflight;
    this.#clock.schedule(now + serviceMs, call);
  }

  /** A call's answer comes back: the permit is released with its outcome, and the call measured. */
  end(call: Call): void {
    const now = this.#clock.now();
    this.#track(now);
    this.#inflight--;
    this.#outstanding--;
    const outcome = call.outcome;
    this.#outcomes[outcome]++;
    const permit = call.permit as Permit;
    if (outcome === 'success') permit.success();
    else if (outcome === 'overload') permit.dropped();
    else permit.failure();
    const latency = now - call.arrivalMs;
    this.#latency.record(latency);
    const late = latency > call.budgetMs;
    if (late) {
      this.#wastedCalls++;
      this.#wastedMs += call.serviceMs;
    }
    if (outcome === 'success' && now <= this.#spanEnd) {
      this.#goodInSpan++;
      if (!late) this.#inBudgetInSpan++;
      this.#bins.add(now);
    }
    this.#onCall?.({
      arrivalMs: call.arrivalMs,
      startMs: call.startMs,
      endMs: now,
      outcome,
      inflight: call.inflight,
    });
    this.#next(call.client, this.#thinkMs);
  }

  /** The limiter refused a request, at admission or from its queue. */
  refused(call: Call, error: LimitExceededError): void {
    this.#outstanding--;
    const reason = error.reason;
    this.#refused.set(reason, (this.#refused.get(reason) ?? 0) + 1);
    this.#onCall?.({
      arrivalMs: call.arrivalMs,
      startMs: Number.NaN,
      endMs: this.#clock.now(),
      outcome: reason,
      inflight: 0,
    });
    this.#next(call.client, Math.max(1, this.#thinkMs));
  }

  #next(client: number, afterMs: number): void {
    if (client >= 0 && !this.#exhausted) this.#schedule(this.#clock.now() + afterMs, client);
  }

  #schedule(atMs: number, client: number): void {
    this.#sendsPending++;
    this.#clock.schedule(atMs, new Send(this, client));
  }

  /** Adds the in-flight area up to `now` (clipped to the span). */
  #track(now: number): void {
    const to = Math.min(now, this.#spanEnd);
    if (to > this.#areaAt) {
      this.#area += this.#inflight * (to - this.#areaAt);
      this.#areaAt = to;
    }
  }

  result(
    name: string,
    spanMs: number,
    spikes: Spike[],
    timeline: SimResult['timeline'],
  ): SimResult {
    const seconds = spanMs / 1000;
    const latency = this.#latency;
    const refused: SimResult['refused'] = {};
    let refusedTotal = 0;
    for (const reason of REJECT_REASONS) {
      const n = this.#refused.get(reason);
      if (n !== undefined) {
        refused[reason] = n;
        refusedTotal += n;
      }
    }
    return {
      name,
      durationMs: spanMs,
      arrivals: this.#arrivals,
      admitted: this.#admitted,
      goodputPerS: seconds > 0 ? this.#goodInSpan / seconds : Number.NaN,
      goodputInBudgetPerS: seconds > 0 ? this.#inBudgetInSpan / seconds : Number.NaN,
      outcomes: { ...this.#outcomes },
      latencyMs: {
        p50: latency.quantile(0.5),
        p99: latency.quantile(0.99),
        mean: latency.mean,
        max: latency.max,
      },
      refused,
      refusedTotal,
      wasted: { calls: this.#wastedCalls, serviceMs: this.#wastedMs },
      inflight: { peak: this.#peak, mean: spanMs > 0 ? this.#area / spanMs : Number.NaN },
      spikes: this.#bins.recoveries(spikes, spanMs),
      timeline,
    };
  }
}
