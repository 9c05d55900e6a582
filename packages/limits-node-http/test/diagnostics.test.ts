import diagnosticsChannel from 'node:diagnostics_channel';
import { guard } from 'limits-breaker';
import { type LimitAlgorithm, Limiter, PartitionedLimiter, type Permit } from 'limits-core';
import { afterEach, describe, expect, it } from 'vitest';
import { type DiagnosticsMessage, diagnosticsChannels, publishDiagnostics } from '../src/index.js';
import { manualClock } from './support/metricsScrape.js';

type Seen = Array<[string, DiagnosticsMessage<Record<string, unknown>>]>;
const NAMES = Object.values(diagnosticsChannels);
const EVENTS = ['acquire', 'reject', 'release', 'limit'] as const;

const subscriptions: Array<[string, (message: unknown, name: string | symbol) => void]> = [];
afterEach(() => {
  for (const [name, fn] of subscriptions.splice(0)) diagnosticsChannel.unsubscribe(name, fn);
});

/** Subscribes to `names` (default: all four); returns what arrives. */
function subscribe(names: readonly string[] = NAMES): Seen {
  const seen: Seen = [];
  for (const name of names) {
    const fn = (message: unknown) => seen.push([name, message as Seen[number][1]]);
    diagnosticsChannel.subscribe(name, fn);
    subscriptions.push([name, fn]);
  }
  return seen;
}

function unsubscribe(name: string): void {
  const i = subscriptions.findIndex(([n]) => n === name);
  const [, fn] = subscriptions.splice(i, 1)[0] as (typeof subscriptions)[number];
  diagnosticsChannel.unsubscribe(name, fn);
}

function listening(limiter: Limiter): number[] {
  return EVENTS.map((e) => limiter.listenerCount(e));
}

/** An algorithm whose limit grows by one with every sample. */
function growing(): LimitAlgorithm {
  return {
    limit: 1,
    update() {
      this.limit += 1;
      return this.limit;
    },
  } as LimitAlgorithm & { limit: number };
}

describe('publishDiagnostics', () => {
  it('attaches no listener to a limiter while nobody subscribes, whatever the limiter does', async () => {
    const limiter = new Limiter({ algorithm: growing(), maxQueued: 0 });
    const handle = publishDiagnostics(limiter);
    expect(listening(limiter)).toEqual([0, 0, 0, 0]);
    const p = limiter.tryAcquire() as Permit;
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'at_limit' });
    p.success();
    handle.sync();
    expect(publishDiagnostics(limiter)).toBe(handle);
    expect(limiter.eventNames()).toEqual([]);
  });

  it('delivers admit, reject, release and limit with the limiter and its event payload', async () => {
    const clock = manualClock();
    const limiter = new Limiter({ algorithm: growing(), maxQueued: 0, clock });
    const seen = subscribe();
    publishDiagnostics(limiter);
    expect(listening(limiter)).toEqual([1, 1, 1, 1]);

    const p = limiter.tryAcquire() as Permit;
    await expect(limiter.acquire()).rejects.toMatchObject({ reason: 'at_limit' });
    clock.advance(30);
    p.success();

    expect(seen.map(([name]) => name)).toEqual([
      'limits:admit',
      'limits:reject',
      'limits:limit',
      'limits:release',
    ]);
    for (const [, message] of seen) {
      expect(message.limiter).toBe(limiter);
      expect(message.partition).toBeUndefined();
    }
    expect(seen.map(([, m]) => m.event)).toEqual([
      { cost: 1, inflight: 1, capacity: 1, waitedMs: 0 },
      { reason: 'at_limit', cost: 1 }, // no retryAfterMs: nothing measured yet
      expect.objectContaining({ limit: 2, previous: 1, capacity: 2 }),
      { outcome: 'success', rtt: 30, cost: 1, inflight: 0, stalled: false },
    ]);
  });

  it('stops publishing a channel whose last subscriber left: its listener leaves at its next event, unpublished', () => {
    const limiter = new Limiter({ limit: 5 });
    const seen = subscribe([diagnosticsChannels.admit, diagnosticsChannels.release]);
    publishDiagnostics(limiter);
    expect(listening(limiter)).toEqual([1, 0, 1, 0]);
    (limiter.tryAcquire() as Permit).success();
    expect(seen).toHaveLength(2);

    unsubscribe(diagnosticsChannels.release);
    const p = limiter.tryAcquire() as Permit;
    expect(listening(limiter)).toEqual([1, 0, 0, 0]); // the admit event was a sync point
    p.success();
    unsubscribe(diagnosticsChannels.admit);
    (limiter.tryAcquire() as Permit).success();
    expect(listening(limiter)).toEqual([0, 0, 0, 0]);
    expect(seen.map(([name]) => name)).toEqual(['limits:admit', 'limits:release', 'limits:admit']);
  });

  it('picks up a late subscriber at the next publishDiagnostics call, which returns the same handle and never adds a second listener', () => {
    const limiter = new Limiter({ limit: 5 });
    const handle = publishDiagnostics(limiter);
    (limiter.tryAcquire() as Permit).success();
    const seen = subscribe([diagnosticsChannels.release]);
    expect(listening(limiter)).toEqual([0, 0, 0, 0]); // no hook tells us: not yet
    expect(publishDiagnostics(limiter)).toBe(handle);
    expect(publishDiagnostics(limiter)).toBe(handle);
    expect(listening(limiter)).toEqual([0, 0, 1, 0]);
    (limiter.tryAcquire() as Permit).dropped();
    expect(seen.map(([, m]) => m.event.outcome)).toEqual(['dropped']);
  });

  it("labels a PartitionedLimiter's messages with the partition and its own limiter", async () => {
    const bulkheads = new PartitionedLimiter({
      limit: 2,
      partitions: { login: { reserved: 1 }, recs: { reserved: 1, maxBorrow: 0 } },
    });
    const seen = subscribe([diagnosticsChannels.admit, diagnosticsChannels.reject]);
    publishDiagnostics(bulkheads);
    const held = bulkheads.partition('recs').tryAcquire() as Permit;
    await expect(bulkheads.run('recs', () => 1)).rejects.toMatchObject({ reason: 'at_limit' });
    await bulkheads.run('login', () => 1);
    held.success();
    expect(seen.map(([name, m]) => [name, m.partition, m.limiter])).toEqual([
      ['limits:admit', 'recs', bulkheads.partition('recs')],
      ['limits:reject', 'recs', bulkheads.partition('recs')],
      ['limits:admit', 'login', bulkheads.partition('login')],
    ]);
  });

  it("publishes a guard's limiter, and a limiter shared by two sources keeps publishing until both handles close", async () => {
    const limiter = new Limiter({ limit: 3 });
    const g = guard(() => 'ok', { limiter, timeoutMs: false });
    const seen = subscribe([diagnosticsChannels.release]);
    const viaGuard = publishDiagnostics(g);
    const direct = publishDiagnostics(limiter);
    expect(viaGuard).not.toBe(direct);
    expect(listening(limiter)).toEqual([0, 0, 1, 0]);
    await g.fire();
    viaGuard.close();
    viaGuard.close(); // idempotent
    await g.fire();
    expect(seen.map(([, m]) => m.limiter)).toEqual([limiter, limiter]);
    direct.close();
    expect(listening(limiter)).toEqual([0, 0, 0, 0]);
    await g.fire();
    expect(seen).toHaveLength(2);
    // Closed: a new call starts afresh.
    const again = publishDiagnostics(limiter);
    expect(again).not.toBe(direct);
    expect(listening(limiter)).toEqual([0, 0, 1, 0]);
    again.close();
    await g.shutdown();
  });

  it('a handle closed by a subscriber while its message is delivered attaches nothing afterwards', () => {
    const limiter = new Limiter({ limit: 5 });
    const handle = publishDiagnostics(limiter);
    const seen: unknown[] = [];
    const fn = (message: unknown) => {
      seen.push(message);
      handle.close();
    };
    diagnosticsChannel.subscribe(diagnosticsChannels.admit, fn);
    subscriptions.push([diagnosticsChannels.admit, fn]);
    subscribe([diagnosticsChannels.release]);
    handle.sync();
    expect(listening(limiter)).toEqual([1, 0, 1, 0]);
    (limiter.tryAcquire() as Permit).success();
    (limiter.tryAcquire() as Permit).success();
    expect(seen).toHaveLength(1);
    expect(listening(limiter)).toEqual([0, 0, 0, 0]);
  });

  it('refuses something that is not a source', () => {
    expect(() => publishDiagnostics({} as never)).toThrow(
      new TypeError(
        'limits: publishDiagnostics needs a Limiter, a PartitionedLimiter, a guard or a loadShed, got an object',
      ),
    );
  });
});
