import { beforeEach, describe, expect, test, vi } from 'vitest';
import { type Timed, TimeoutList } from '../src/TimeoutList.js';
import { clock, useFakeTimersPerTest } from './support/timers.js';

/** An entry fired now (on the fake clock) that records when it expired, and may run `onExpire`. */
function entry(expired: string[], name: string, onExpire?: () => void): Timed {
  return {
    fired: Date.now(),
    prev: undefined,
    next: undefined,
    expire() {
      expired.push(`${name}@${Date.now()}`);
      onExpire?.();
    },
  };
}

describe('TimeoutList', () => {
  useFakeTimersPerTest();
  beforeEach(() => {
    vi.setSystemTime(0); // times below read as ms since the test began
  });

  test('entries expire timeoutMs after they were fired, in order, with one timer at a time', () => {
    const list = new TimeoutList(clock, 100);
    const expired: string[] = [];
    list.add(entry(expired, 'a'));
    vi.advanceTimersByTime(30);
    list.add(entry(expired, 'b'));
    list.add(entry(expired, 'c'));
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(70);
    expect(expired).toEqual(['a@100']);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(30);
    expect(expired).toEqual(['a@100', 'b@130', 'c@130']);
    expect(vi.getTimerCount()).toBe(0);
  });

  test('a removed head keeps the timer, which re-arms for the next entry when it fires', () => {
    const list = new TimeoutList(clock, 100);
    const expired: string[] = [];
    const a = entry(expired, 'a');
    list.add(a);
    vi.advanceTimersByTime(50);
    list.add(entry(expired, 'b'));
    list.remove(a);
    expect(list.has(a)).toBe(false);
    vi.advanceTimersByTime(50); // a's timer fires: nothing due, re-armed for b
    expect(expired).toEqual([]);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(50);
    expect(expired).toEqual(['b@150']);
  });

  test('an entry added to an emptied list, while the old timer is still armed, expires on time', () => {
    const list = new TimeoutList(clock, 100);
    const expired: string[] = [];
    const a = entry(expired, 'a');
    list.add(a);
    list.remove(a); // empty; a's timer stays armed (due at 100)
    vi.advanceTimersByTime(20);
    list.add(entry(expired, 'b')); // no second timer: the armed one re-arms for b
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(80);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(20);
    expect(expired).toEqual(['b@120']);
  });

  test('an entry added by an expiring one does not arm a second timer and expires on time', () => {
    const list = new TimeoutList(clock, 100);
    const expired: string[] = [];
    list.add(entry(expired, 'a', () => list.add(entry(expired, 'b'))));
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['a@100']);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['a@100', 'b@200']);
  });

  test('an expiry that throws leaves the timer armed for the entries after it', () => {
    const list = new TimeoutList(clock, 100);
    const expired: string[] = [];
    list.add(
      entry(expired, 'a', () => {
        throw new Error('boom');
      }),
    );
    vi.advanceTimersByTime(10);
    list.add(entry(expired, 'b'));
    expect(() => vi.advanceTimersByTime(90)).toThrow('boom');
    expect(vi.getTimerCount()).toBe(1);
    // An entry added now, to a list that is not empty, relies on that timer too.
    list.add(entry(expired, 'c'));
    vi.advanceTimersByTime(10);
    expect(expired).toEqual(['a@100', 'b@110']);
    vi.advanceTimersByTime(90);
    expect(expired).toEqual(['a@100', 'b@110', 'c@200']);
    expect(vi.getTimerCount()).toBe(0);
  });

  test('clear() cancels the timer and forgets every entry; clear() from an expiry stops the loop', () => {
    const list = new TimeoutList(clock, 100);
    const expired: string[] = [];
    const a = entry(expired, 'a');
    list.add(a);
    list.add(entry(expired, 'b'));
    list.clear();
    expect(list.has(a)).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(200);
    expect(expired).toEqual([]);
    list.add(entry(expired, 'c', () => list.clear()));
    list.add(entry(expired, 'd'));
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['c@300']);
    expect(vi.getTimerCount()).toBe(0);
  });
});

/**
 * Issue 9's timed burst row (bench/RESULTS.md, "Session 14"): a call queued in `fire()` enters the
 * list with its budget start unknown (`addPending`); every pending entry gets one start at the end of
 * the synchronous run that fired it (`stamp`), or when an entry with a known start is added after
 * them.
 */
describe('TimeoutList: entries waiting for their budget start', () => {
  useFakeTimersPerTest();
  beforeEach(() => {
    vi.setSystemTime(0);
  });

  function pending(expired: string[], name: string): Timed {
    return { ...entry(expired, name), fired: -1_000 }; // (a stale value: never read while pending)
  }

  test('pending entries arm no timer and never expire until stamped; then they expire together', () => {
    const list = new TimeoutList(clock, 100);
    const expired: string[] = [];
    list.addPending(pending(expired, 'a'));
    list.addPending(pending(expired, 'b'));
    expect(list.pending).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(500);
    expect(expired).toEqual([]);
    list.stamp(Date.now()); // 500
    expect(list.pending).toBe(false);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(99);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual(['a@600', 'b@600']);
    expect(vi.getTimerCount()).toBe(0);
  });

  test('an entry added with its start stamps the pending ones before it first (the list stays sorted)', () => {
    const list = new TimeoutList(clock, 100);
    const expired: string[] = [];
    list.add(entry(expired, 'a')); // fired 0
    vi.advanceTimersByTime(20);
    list.addPending(pending(expired, 'b'));
    vi.advanceTimersByTime(20);
    list.add(entry(expired, 'c')); // fired 40: b is stamped 40 too
    expect(list.pending).toBe(false);
    vi.advanceTimersByTime(60);
    expect(expired).toEqual(['a@100']);
    vi.advanceTimersByTime(40);
    expect(expired).toEqual(['a@100', 'b@140', 'c@140']);
  });

  test('removing the first pending entry keeps the others pending; clear() forgets them', () => {
    const list = new TimeoutList(clock, 100);
    const expired: string[] = [];
    const a = pending(expired, 'a');
    list.addPending(a);
    list.addPending(pending(expired, 'b'));
    list.remove(a);
    expect(list.pending).toBe(true);
    list.stamp(10);
    vi.advanceTimersByTime(110);
    expect(expired).toEqual(['b@110']);
    list.addPending(pending(expired, 'c'));
    list.clear();
    expect(list.pending).toBe(false);
    list.stamp(200); // nothing pending: no timer
    expect(vi.getTimerCount()).toBe(0);
  });
});
