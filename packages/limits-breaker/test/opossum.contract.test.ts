/**
 * The contract of opossum that limits-breaker relies on, checked on every supported version (opossum 9
 * everywhere, 10 on Node ≥ 22). Everything here is what src/OpossumCircuit.ts uses — the
 * one file that knows opossum; several items are internals opossum does not promise (the live
 * bucket behind `status.window[0]`, its counter names, `stats` summing them). When one of these tests
 * fails after an opossum upgrade, the adapter must change with it before the upgrade is allowed.
 */
import { EventEmitter } from 'eventemitter3';
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import type { OpossumBreaker, OpossumConstructor } from '../src/opossum.js';
import { opossumVersions } from './support/opossum.js';

/** The options the adapter builds opossum with (besides the window sizes and thresholds). */
const adapterOptions = {
  timeout: false,
  rollingPercentilesEnabled: false,
  enableSnapshots: false,
} as const;
const passThrough = (outcome: unknown) => outcome;
const noop = () => {};

interface Bucket {
  fires: number;
  successes: number;
}
const currentBucket = (b: OpossumBreaker) => b.status.window[0] as unknown as Bucket;

describe.each(opossumVersions)(
  'the opossum contract the guard relies on, on %s',
  (_name, Opossum) => {
    const breakers: OpossumBreaker[] = [];
    const build = (options: Record<string, unknown> = {}): OpossumBreaker => {
      const b = new (Opossum as OpossumConstructor)(passThrough, { ...adapterOptions, ...options });
      breakers.push(b);
      return b;
    };
    beforeEach(() => {
      vi.useFakeTimers();
    });
    afterEach(() => {
      for (const b of breakers.splice(0)) b.shutdown();
      vi.useRealTimers();
    });

    test('status.window[0] is the live current bucket: fires and successes added to it show in stats', () => {
      const b = build();
      const bucket = currentBucket(b);
      expect(b.status.window).not.toBe(b.status.window); // a copy of the array…
      expect(b.status.window[0]).toBe(bucket); // …of the same bucket objects
      expect(bucket.fires).toBe(0);
      expect(bucket.successes).toBe(0);
      bucket.fires += 3;
      bucket.successes += 2;
      expect(b.stats.fires).toBe(3);
      expect(b.stats.successes).toBe(2);
      expect(b.stats.failures).toBe(0);
    });

    test('with a rotateBucketController, opossum arms no timer of its own and rotates exactly on its rotate events', () => {
      const rotation = new EventEmitter();
      const b = build({
        rollingCountTimeout: 30,
        rollingCountBuckets: 3,
        rotateBucketController: rotation,
      });
      expect(vi.getTimerCount()).toBe(0);
      expect(rotation.listenerCount('rotate')).toBe(1);
      const first = currentBucket(b);
      first.successes += 1;
      vi.advanceTimersByTime(1000);
      expect(currentBucket(b)).toBe(first); // time alone rotates nothing
      rotation.emit('rotate');
      const second = currentBucket(b);
      expect(second).not.toBe(first);
      expect(b.status.window[1]).toBe(first);
      expect(b.status.window).toHaveLength(3);
      expect(b.stats.successes).toBe(1);
      rotation.emit('rotate');
      expect(b.stats.successes).toBe(1); // still in the window (3 buckets)
      rotation.emit('rotate');
      expect(b.stats.successes).toBe(0); // rotated out
      b.shutdown();
      expect(rotation.listenerCount('rotate')).toBe(0);
    });

    test('listenerCount counts opossum’s own fire/success listeners, and newListener/removeListener announce changes by event name', () => {
      const b = build();
      const ownFire = b.listenerCount('fire');
      const ownSuccess = b.listenerCount('success');
      const announced: unknown[] = [];
      b.on('newListener', (event) => announced.push(['new', event]));
      b.on('removeListener', (event) => announced.push(['removed', event]));
      const listener = () => {};
      b.on('success', listener);
      expect(b.listenerCount('success')).toBe(ownSuccess + 1);
      expect(b.listenerCount('fire')).toBe(ownFire);
      b.removeListener('success', listener);
      expect(b.listenerCount('success')).toBe(ownSuccess);
      expect(announced).toEqual([
        ['new', 'removeListener'],
        ['new', 'success'],
        ['removed', 'success'],
      ]);
    });

    test('emitting fire and success counts one fire and one success (the event path for successes)', () => {
      const b = build();
      b.emit('fire', []);
      b.emit('success', undefined, 0);
      expect(b.stats.fires).toBe(1);
      expect(b.stats.successes).toBe(1);
    });

    test('fire(rejected promise) counts a failure, rejects with its error, and opens the circuit at the threshold', async () => {
      const b = build({ errorThresholdPercentage: 50, volumeThreshold: 2 });
      const opened: unknown[] = [];
      b.on('open', () => opened.push('open'));
      const error = new Error('down');
      await expect(b.fire(Promise.reject(error))).rejects.toBe(error);
      expect(b.stats.failures).toBe(1);
      expect(b.stats.fires).toBe(1);
      expect(b.closed).toBe(true); // below the volume threshold
      await b.fire(Promise.reject(error)).catch(noop);
      expect(b.stats.failures).toBe(2);
      expect(b.opened).toBe(true);
      expect(opened).toEqual(['open']);
    });

    test('open(), the reset timeout and close() announce OPEN, HALF_OPEN and CLOSED through open, halfOpen and close', () => {
      const b = build({ resetTimeout: 100 });
      const events: string[] = [];
      for (const event of ['open', 'halfOpen', 'close']) b.on(event, () => events.push(event));
      b.open();
      expect(b.opened).toBe(true);
      vi.advanceTimersByTime(100);
      expect(b.halfOpen).toBe(true);
      b.close();
      expect(b.closed).toBe(true);
      b.open(); // a failed trial re-opens it
      expect(events).toEqual(['open', 'halfOpen', 'close', 'open']);
    });

    test('an emitted fallback event counts in stats.fallbacks', () => {
      const b = build();
      b.emit('fallback', 'cached', new Error('down'));
      expect(b.stats.fallbacks).toBe(1);
    });

    test('shutdown() sets isShutdown and leaves no timer behind', () => {
      const b = build({ resetTimeout: 100 });
      b.open();
      b.shutdown();
      expect(b.isShutdown).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
    });
  },
);
