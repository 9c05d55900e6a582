import { EventEmitter } from 'eventemitter3';
import { describe, expect, test } from 'vitest';
import { FixedLimit } from '../src/algorithms/FixedLimit.js';
import type { LimitExceededError } from '../src/errors/LimitExceededError.js';
import { MonotonicTime } from '../src/internal/MonotonicTime.js';
import { PromiseCapture } from '../src/internal/PromiseCapture.js';
import { Admission } from '../src/limiter/Admission.js';
import type { LimiterEvents } from '../src/limiter/events.js';
import { Limiter } from '../src/limiter/Limiter.js';
import type { PermitRequest, QueueTicket } from '../src/limiter/PermitRequest.js';
import { resolveOptions } from '../src/limiter/resolveOptions.js';
import { ServiceTime } from '../src/limiter/ServiceTime.js';
import { TaskRunner } from '../src/limiter/TaskRunner.js';
import { Permit } from '../src/permit/Permit.js';
import type { Waiter } from '../src/queue/Waiter.js';
import { FakeClock } from './support/FakeClock.js';

/**
 * A stand-in limiter with `capacity` units: what Admission and Refusals see of a limiter (events,
 * counters, the waiters' owner) and the grants it gives them.
 */
class Host extends EventEmitter<LimiterEvents> {
  inflight = 0;
  admission: Admission;
  readonly clock = new FakeClock();
  readonly events: string[] = [];

  constructor(
    readonly capacity: number,
    options: { maxQueued?: number; maxQueueWaitMs?: number } = {},
  ) {
    super();
    const o = resolveOptions({
      algorithm: new FixedLimit(Math.max(1, capacity)),
      clock: this.clock,
      maxQueued: 10,
      ...options,
    });
    const time = new MonotonicTime(this.clock);
    const capture = new PromiseCapture();
    const runner = new TaskRunner(
      time,
      capture,
      { classify: undefined, onError() {} },
      undefined,
      undefined,
      undefined,
    );
    const grants = {
      fits: (cost: number) => this.inflight + cost <= this.capacity,
      grant: (w: Waiter) => {
        this.inflight += w.cost;
      },
      grantNew: (cost: number) => {
        this.inflight += cost;
        return new Permit(this, cost, Number.NaN, this.inflight);
      },
      // No plain runs here (the runner has none): nothing is ever queued in the lane.
      startLane: () => {
        throw new Error('no lane requests without plain runs');
      },
    };
    this.admission = new Admission(
      this,
      o,
      time,
      new ServiceTime(10),
      capture,
      runner,
      undefined,
      grants,
    );
    this.on('queue', () => this.events.push('queue'));
    this.on('expire', (e) => this.events.push(`expire ${e.reason}`));
    this.on('reject', (e) => this.events.push(`reject ${e.reason}`));
  }

  _release(permit: Permit): void {
    this.inflight -= permit.cost;
    this.admission.queue.dispatch(Number.NaN);
  }

  _abortWaiter(w: Waiter, cause: unknown): boolean {
    return this.admission.refusals.abort(w, cause);
  }
}

/** A request that records how its wait ended. */
function request() {
  const log: { granted?: Permit; refused?: LimitExceededError; ticket?: QueueTicket } = {};
  const r: PermitRequest = {
    granted: (permit) => {
      log.granted = permit;
    },
    refused: (error) => {
      log.refused = error;
    },
    queued: (ticket) => {
      log.ticket = ticket;
    },
  };
  return { r, log };
}

describe('Admission and Refusals (the limiter side of the queue)', () => {
  test('a request that fits with nobody ahead is granted at once through the host, without calling the request', () => {
    const host = new Host(1);
    const { r, log } = request();
    const permit = host.admission.admit(undefined, undefined, r, false);
    expect(permit).toBeInstanceOf(Permit);
    expect(host.inflight).toBe(1);
    expect(log).toEqual({});
  });

  test('a request that does not fit is queued, gets its ticket, and is granted when capacity frees', () => {
    const host = new Host(1);
    const first = host.admission.admit(undefined, undefined, request().r, false) as Permit;
    const { r, log } = request();
    expect(host.admission.admit(undefined, undefined, r, false)).toBeUndefined();
    expect(log.ticket).toBeDefined();
    expect(host.events).toEqual(['queue']);
    first.success();
    expect(log.granted).toBeInstanceOf(Permit);
    expect(host.inflight).toBe(1);
  });

  test('a refusal at admission rejects a promise caller, or calls the request and returns undefined; each emits reject once', async () => {
    const host = new Host(1, { maxQueued: 0 });
    host.admission.admit(undefined, undefined, undefined, false);
    await expect(
      host.admission.admit(undefined, undefined, undefined, false),
    ).rejects.toMatchObject({
      reason: 'at_limit',
    });
    const { r, log } = request();
    expect(host.admission.admit(undefined, undefined, r, true)).toBeUndefined();
    expect(log.refused?.reason).toBe('closed');
    expect(host.events).toEqual(['reject at_limit', 'reject closed']);
  });

  test('a ticket takes its request out of the queue, refused as aborted with the cause, once', () => {
    const host = new Host(0);
    const { r, log } = request();
    host.admission.admit(undefined, undefined, r, false);
    expect(log.ticket?.cancel('bye')).toBe(true);
    expect(log.refused?.reason).toBe('aborted');
    expect(log.refused?.cause).toBe('bye');
    expect(log.ticket?.cancel('again')).toBe(false);
    expect(host.admission.queue.size).toBe(0);
  });

  test('a waiter past maxQueueWaitMs is refused as expired and emits expire', async () => {
    const host = new Host(0, { maxQueueWaitMs: 50 });
    const { r, log } = request();
    host.admission.admit(undefined, undefined, r, false);
    await host.clock.advance(50);
    expect(log.refused?.reason).toBe('expired');
    expect(host.events).toEqual(['queue', 'expire expired', 'reject expired']);
  });

  test('closeAll refuses every queued waiter as closed and stops the queue timer', () => {
    const host = new Host(0, { maxQueueWaitMs: 50 });
    const a = request();
    const b = request();
    host.admission.admit(undefined, undefined, a.r, false);
    host.admission.admit(undefined, undefined, b.r, false);
    expect(host.clock.pending).toBe(1);
    host.admission.refusals.closeAll();
    expect([a.log.refused?.reason, b.log.refused?.reason]).toEqual(['closed', 'closed']);
    expect(host.admission.queue.size).toBe(0);
    expect(host.clock.pending).toBe(0);
  });
});

describe('Limiter fast paths', () => {
  test('acquire() and acquireWith() without options refuse a cost above maxCost as too_large even with capacity free', async () => {
    const algorithm = { limit: 3, maxLimit: 0.5, update: () => 3 };
    const limiter = new Limiter({ algorithm, probeSlots: 0 });
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'too_large' });
    const { r, log } = request();
    expect(limiter.acquireWith(r)).toBeUndefined();
    expect(log.refused?.reason).toBe('too_large');
    expect(limiter.inflight).toBe(0);
  });
});
