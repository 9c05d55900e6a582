import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { MonotonicTime } from '../src/internal/MonotonicTime.js';
import { WaiterExtras } from '../src/queue/Waiter.js';
import { type Grantor, WaitQueue, type WaitQueueOptions } from '../src/queue/WaitQueue.js';
import { FakeClock } from './support/FakeClock.js';
import { testOwner, Waiter } from './support/Waiter.js';

const owner = testOwner;
const FIFO: WaitQueueOptions = {
  maxQueueWaitMs: Infinity,
  order: 'fifo',
  standingMs: 100,
  codelTargetMs: Infinity,
  selector: undefined,
  estimator: undefined,
};
const service = { meanMs: 0, finishMargin: () => 0 };

/** A queue on a fake clock, with a grantor of `capacity` units that logs what the queue asks of it. */
function setup(capacity: number, options: Partial<WaitQueueOptions> = {}) {
  const clock = new FakeClock();
  const log: string[] = [];
  let free = capacity;
  const grantor: Grantor = {
    _fits: (cost: number) => cost <= free,
    _serve: (w: Waiter, _now: number) => {
      free -= w.cost;
      log.push(`serve ${names.get(w)}`);
    },
    _expired: (w: Waiter) => log.push(`expired ${names.get(w)}`),
    _serveLane: (task: unknown) => {
      free -= 1;
      log.push(`serve lane ${task}`);
    },
  };
  const names = new Map<Waiter, string>();
  const time = new MonotonicTime(clock);
  const queue = new WaitQueue({ ...FIFO, ...options }, time, service, grantor);
  const settled: unknown[] = [];
  const add = (name: string, cost = 1, extras?: WaiterExtras) => {
    const w = new Waiter(owner, cost, clock.now(), (v) => settled.push(v), extras);
    names.set(w, name);
    queue.add(w, clock.now(), undefined);
    return w;
  };
  return { clock, queue, log, add, settled, release: (units: number) => (free += units) };
}

describe('WaitQueue (the queue component, below the limiter)', () => {
  test('it serves waiters in arrival order while the grantor says they fit, each handed to the grantor once', () => {
    const { queue, log, add, release } = setup(0);
    add('a');
    add('b', 2);
    add('c');
    expect(queue.size).toBe(3);
    expect(queue.queuedCost).toBe(4);
    release(1);
    queue.dispatch(Number.NaN);
    // Strict head of line: b (cost 2) does not fit, so c waits behind it.
    expect(log).toEqual(['serve a']);
    release(2);
    queue.dispatch(Number.NaN);
    expect(log).toEqual(['serve a', 'serve b']);
    expect(queue.size).toBe(1);
    expect(queue.queuedCost).toBe(1);
  });

  test('lane requests (compact queued runs) are served first, while they fit; the lane opens only on an empty FIFO list', () => {
    const { queue, log, add, release } = setup(0);
    expect(queue.laneOpen).toBe(true);
    queue.lane.push('r1', undefined, 0);
    queue.lane.push('r2', undefined, 0);
    expect(queue.laneOpen).toBe(true);
    add('a');
    expect(queue.laneOpen).toBe(false);
    expect(queue.size).toBe(3);
    expect(queue.queuedCost).toBe(3);
    release(1);
    queue.dispatch(Number.NaN);
    expect(log).toEqual(['serve lane r1']);
    release(2);
    queue.dispatch(Number.NaN);
    expect(log).toEqual(['serve lane r1', 'serve lane r2', 'serve a']);
    expect(queue.size).toBe(0);
    expect(queue.queuedCost).toBe(0);
    expect(setup(0, { order: 'lifo' }).queue.laneOpen).toBe(false);
    expect(setup(0, { maxQueueWaitMs: 100 }).queue.laneOpen).toBe(false);
  });

  test('a waiter past maxQueueWaitMs leaves on the queue timer and goes to the grantor to be refused', async () => {
    const { clock, queue, log, add } = setup(0, { maxQueueWaitMs: 50 });
    add('a');
    await clock.advance(20);
    add('b');
    expect(clock.pending).toBe(1);
    await clock.advance(30);
    expect(log).toEqual(['expired a']);
    await clock.advance(20);
    expect(log).toEqual(['expired a', 'expired b']);
    expect(queue.size).toBe(0);
    expect(clock.pending).toBe(0);
  });

  test('a removed waiter is neither served nor expired, and its cost and bytes leave the counters', async () => {
    const { clock, queue, log, add, release } = setup(0, { maxQueueWaitMs: 50 });
    const extras = new WaiterExtras();
    extras.bytes = 100;
    const a = add('a', 1, extras);
    add('b');
    expect(queue.queuedBytes).toBe(100);
    queue.remove(a);
    expect(queue.has(a)).toBe(false);
    expect(queue.queuedBytes).toBe(0);
    expect(queue.queuedCost).toBe(1);
    release(1);
    queue.dispatch(Number.NaN);
    await clock.advance(100);
    expect(log).toEqual(['serve b']);
  });

  test('no file in queue/ imports from limiter/ (the queue is a layer below the limiter)', () => {
    const dir = fileURLToPath(new URL('../src/queue/', import.meta.url));
    for (const file of readdirSync(dir)) {
      const source = readFileSync(dir + file, 'utf8');
      expect(source, file).not.toMatch(/from '\.\.\/limiter\//);
    }
  });
});
