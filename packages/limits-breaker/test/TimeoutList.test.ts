import { beforeEach, describe, expect, test, vi } from 'vitest';
import { type Timed, TimeoutList } from '../src/TimeoutList.js';
import { clock, useFakeTimersPerTest } from './support/timers.js';

/** The timeout of every entry below, in ms. */
const TIMEOUT_MS = 100;

/**
 * An entry fired now (on the fake clock), due `TIMEOUT_MS` later, that records when it expired, and
 * may run `onExpire`.
 */
function entry(expired: string[], name: string, onExpire?: () => void): Timed {
  return {
    deadline: Date.now() + TIMEOUT_MS,
    timeoutPrev: undefined,
    timeoutNext: undefined,
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
    const list = new TimeoutList(clock);
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
    const list = new TimeoutList(clock);
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
    const list = new TimeoutList(clock);
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
    const list = new TimeoutList(clock);
    const expired: string[] = [];
    list.add(entry(expired, 'a', () => list.add(entry(expired, 'b'))));
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['a@100']);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(100);
    expect(expired).toEqual(['a@100', 'b@200']);
  });

  test('an expiry that throws leaves the timer armed for the entries after it', () => {
    const list = new TimeoutList(clock);
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
    const list = new TimeoutList(clock);
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
