import { describe, expect, it } from 'vitest';
import {
  MAX_RETRY_AFTER_MS,
  parseRetryAfter,
  retryAfterVerdict,
} from '../src/shared/retryAfter.js';

const NOW = Date.parse('2015-10-21T07:28:00Z');

describe('parseRetryAfter', () => {
  it('reads delta-seconds as milliseconds', () => {
    expect(parseRetryAfter('0')).toBe(0);
    expect(parseRetryAfter('1')).toBe(1000);
    expect(parseRetryAfter('120')).toBe(120_000);
    expect(parseRetryAfter(' 5 ')).toBe(5000);
  });

  it('reads delta-seconds with leading zeros', () => {
    expect(parseRetryAfter('007')).toBe(7000);
    expect(parseRetryAfter('0000000000120')).toBe(120_000);
    expect(parseRetryAfter('0000000000')).toBe(0);
  });

  it('accepts a wait of exactly one day and refuses anything longer', () => {
    expect(parseRetryAfter('86400')).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('86401')).toBeUndefined();
    expect(parseRetryAfter('999999999')).toBeUndefined();
    expect(parseRetryAfter('99999999999999999999999')).toBeUndefined();
  });

  it('refuses signs, fractions, exponents and units', () => {
    for (const v of ['-1', '+1', '1.5', '0.5', '1e3', '10s', '0x10', '١٢', 'Infinity', 'NaN']) {
      expect(parseRetryAfter(v), v).toBeUndefined();
    }
  });

  it('refuses garbage, empty values, joined duplicates and absurdly long strings', () => {
    for (const v of ['', '   ', 'soon', 'null', '1, 2', '120, 120', `1${' '.repeat(100)}`]) {
      expect(parseRetryAfter(v), JSON.stringify(v)).toBeUndefined();
    }
    expect(parseRetryAfter('9'.repeat(10_000))).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });

  it('reads an IMF-fixdate as the time left until it', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:29:00 GMT', NOW)).toBe(60_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', NOW)).toBe(0);
  });

  it('reads the obsolete RFC 850 and asctime forms', () => {
    expect(parseRetryAfter('Wednesday, 21-Oct-15 07:28:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Wed Oct 21 07:28:10 2015', NOW)).toBe(10_000);
    expect(parseRetryAfter('Thu Oct  1 00:00:00 2015', NOW)).toBe(0);
  });

  it('reads a date in the past as no wait at all', () => {
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(0);
  });

  it('refuses a date more than a day ahead', () => {
    expect(parseRetryAfter('Thu, 22 Oct 2015 07:28:00 GMT', NOW)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Thu, 22 Oct 2015 07:28:01 GMT', NOW)).toBeUndefined();
    expect(parseRetryAfter('Fri, 01 Jan 9999 00:00:00 GMT', NOW)).toBeUndefined();
  });

  it('refuses impossible and malformed dates', () => {
    for (const v of [
      'Wed, 31 Feb 2015 07:28:00 GMT',
      'Wed, 00 Oct 2015 07:28:00 GMT',
      'Wed, 21 Oct 2015 24:00:00 GMT',
      'Wed, 21 Oct 2015 07:60:00 GMT',
      'Wed, 21 Oct 2015 07:28:61 GMT',
      'Wed, 21 Foo 2015 07:28:00 GMT',
      'Wed, 21 Oct 2015 07:28:00 UTC',
      'Wed, 21 Oct 2015 07:28:00',
      '2015-10-21T07:29:00Z',
      'Wed, 21 Oct 15 07:29:00 GMT',
      'wed, 21 oct 2015 07:29:00 gmt',
    ]) {
      expect(parseRetryAfter(v, NOW), v).toBeUndefined();
    }
  });

  it('refuses a date when the current time is not a number', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:29:00 GMT', Number.NaN)).toBeUndefined();
  });
});

describe('retryAfterVerdict', () => {
  it('waits at least a valid Retry-After of up to one day', () => {
    expect(retryAfterVerdict('0')).toBe(0);
    expect(retryAfterVerdict('120')).toBe(120_000);
    expect(retryAfterVerdict('86400')).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterVerdict('Wed, 21 Oct 2015 07:29:00 GMT', NOW)).toBe(60_000);
  });

  it('does not retry a valid Retry-After over one day, delta-seconds or HTTP-date', () => {
    for (const v of ['86401', '172800', '999999999', '99999999999999999999999']) {
      expect(retryAfterVerdict(v), v).toBe(false);
    }
    expect(retryAfterVerdict('Thu, 22 Oct 2015 07:28:01 GMT', NOW)).toBe(false);
    expect(retryAfterVerdict('Fri, 01 Jan 9999 00:00:00 GMT', NOW)).toBe(false);
  });

  it('leaves the wait to the back-off without a valid Retry-After', () => {
    for (const v of [
      null,
      undefined,
      '',
      'soon',
      '-1',
      '1.5',
      '1, 2',
      'Wed, 31 Feb 2015 07:28:00 GMT',
    ]) {
      expect(retryAfterVerdict(v, NOW), String(v)).toBe(true);
    }
  });
});
