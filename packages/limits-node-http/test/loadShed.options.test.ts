import { LimitExceededError, Limiter, PartitionedLimiter } from 'limits-core';
import { describe, expect, it } from 'vitest';
import { parseTimeoutHeader } from '../src/context/inboundHeaders.js';
import { type LoadShedOptions, loadShed, shedResponse } from '../src/index.js';
import { retryAfterSeconds } from '../src/loadShed/shedResponse.js';
import { classifyStatus as statusOutcome } from '../src/shared/outcome.js';

const limiter = new Limiter();
const partitioned = new PartitionedLimiter({
  limit: 4,
  partitions: { login: { reserved: 1 }, other: {} },
});

function refused(retryAfterMs?: number, reason: 'at_limit' | 'queue_full' = 'queue_full') {
  return new LimitExceededError('queue full: 10/10 entries', {
    reason,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

describe('loadShed options', () => {
  it('accepts a Limiter or a PartitionedLimiter and returns a middleware with wrap and a Fastify plugin', () => {
    const shed = loadShed({ limiter });
    expect(typeof shed).toBe('function');
    expect(typeof shed.wrap).toBe('function');
    expect(typeof shed.fastify).toBe('function');
    expect((shed.fastify as unknown as Record<symbol, unknown>)[Symbol.for('skip-override')]).toBe(
      true,
    );
    expect(() => loadShed({ limiter: partitioned, fallbackPartition: 'other' })).not.toThrow();
  });

  it.each([
    [undefined, TypeError, /loadShed options must be an object with "limiter", got undefined/],
    [{}, TypeError, /option "limiter" must be a Limiter or a PartitionedLimiter, got undefined/],
    [{ limiter: {} }, TypeError, /option "limiter" must be a Limiter .*got an object/],
    [
      { limiter, limitr: 1 },
      TypeError,
      /unknown option "limitr" for loadShed; did you mean "limiter"\?/,
    ],
    [
      { limiter, partition: 'path' },
      TypeError,
      /option "partition" must be a function, got "path"/,
    ],
    [{ limiter, partition: () => 'a' }, TypeError, /option "partition" needs a PartitionedLimiter/],
    [
      { limiter, fallbackPartition: 'x' },
      TypeError,
      /"fallbackPartition" needs a PartitionedLimiter/,
    ],
    [
      { limiter: partitioned },
      RangeError,
      /option "fallbackPartition" must name a partition of "limiter" \(login, other\), got "default" \(the default\)/,
    ],
    [{ limiter: partitioned, fallbackPartition: 'nope' }, RangeError, /got "nope"$/],
    [
      { limiter: partitioned, fallbackPartition: 3 },
      TypeError,
      /option "fallbackPartition" must be a string, got 3/,
    ],
    [
      { limiter, timeoutHeader: true },
      TypeError,
      /option "timeoutHeader" must be a header name or false, got true/,
    ],
    [
      { limiter, timeoutHeader: 'X-Timeout' },
      RangeError,
      /lowercase HTTP header name, got "X-Timeout"/,
    ],
    [{ limiter, timeoutHeader: 'a b' }, RangeError, /got "a b"/],
    [
      { limiter, maxTimeoutMs: 0 },
      RangeError,
      /option "maxTimeoutMs" must be an integer in \[1, 86400000\], got 0/,
    ],
    [{ limiter, maxTimeoutMs: '100' }, TypeError, /option "maxTimeoutMs" must be .*got "100"/],
    [
      { limiter, maxRetryAfterMs: 999 },
      RangeError,
      /option "maxRetryAfterMs" must be an integer in \[1000, 86400000\], got 999/,
    ],
    [{ limiter, maxRetryAfterMs: 1e12 }, RangeError, /"maxRetryAfterMs"/],
    [{ limiter, onShed: 'no' }, TypeError, /option "onShed" must be a function/],
    [{ limiter, classify: {} }, TypeError, /option "classify" must be a function, got an object/],
    [
      { limiter, criticalityHeader: 1 },
      TypeError,
      /option "criticalityHeader" must be a header name or false, got 1/,
    ],
    [
      { limiter, attemptHeader: 'X-Attempt' },
      RangeError,
      /option "attemptHeader" must be a lowercase HTTP header name, got "X-Attempt"/,
    ],
    [
      { limiter, doNotRetryHeader: true },
      TypeError,
      /option "doNotRetryHeader" must be a header name or false, got true/,
    ],
    [{ limiter, grpcHeaders: 'yes' }, TypeError, /option "grpcHeaders" must be true or false/],
    [{ limiter, envoyHeaders: 0 }, TypeError, /option "envoyHeaders" must be true or false, got 0/],
    [{ limiter, context: 'on' }, TypeError, /option "context" must be true or false, got "on"/],
    [
      { limiter, criticality: 'sheddable' },
      TypeError,
      /option "criticality" must be a function, got "sheddable"/,
    ],
    [{ limiter, cohort: 'user' }, TypeError, /option "cohort" must be a function, got "user"/],
    [
      { limiter, criticalityHeadr: 'x' },
      TypeError,
      /unknown option "criticalityHeadr" for loadShed; did you mean "criticalityHeader"\?/,
    ],
  ])('refuses %o with a %s naming the option', (options, Kind, message) => {
    const call = () => loadShed(options as unknown as LoadShedOptions);
    expect(call).toThrow(Kind);
    expect(call).toThrow(message);
  });
});

describe('loadShed responses', () => {
  it('rounds retryAfterMs up to whole seconds, at least 1, and caps it at maxRetryAfterMs', () => {
    expect(retryAfterSeconds(refused(), 60_000)).toBe(1);
    expect(retryAfterSeconds(refused(0), 60_000)).toBe(1);
    expect(retryAfterSeconds(refused(1), 60_000)).toBe(1);
    expect(retryAfterSeconds(refused(1001), 60_000)).toBe(2);
    expect(retryAfterSeconds(refused(5_000), 60_000)).toBe(5);
    expect(retryAfterSeconds(refused(1e12), 60_000)).toBe(60);
    expect(retryAfterSeconds(refused(Number.NaN), 60_000)).toBe(1);
    expect(retryAfterSeconds(refused(90_000), 2_500)).toBe(2);
  });

  it('builds a 503 whose body names the reason and nothing of the message or its numbers', () => {
    const shed = shedResponse(refused(3_500), 60_000);
    expect(shed.status).toBe(503);
    expect(shed.body).toBe('{"error":"overloaded","reason":"queue_full"}');
    expect(shed.body).not.toMatch(/10/);
    expect(shed.headers).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(shed.body.length),
      'retry-after': '4',
      'cache-control': 'no-store',
    });
    const odd = new LimitExceededError('x', { reason: 'Not A Reason"' as never });
    expect(shedResponse(odd, 60_000).body).toBe('{"error":"overloaded","reason":"unknown"}');
  });

  it('parses a time limit of ASCII digits only, caps it, and ignores anything else', () => {
    expect(parseTimeoutHeader('250', 60_000)).toBe(250);
    expect(parseTimeoutHeader(' 0\t', 60_000)).toBe(0);
    expect(parseTimeoutHeader('70000', 60_000)).toBe(60_000);
    expect(parseTimeoutHeader('9'.repeat(40), 60_000)).toBe(60_000);
    for (const bad of [
      '',
      ' ',
      '-1',
      '+1',
      '1.0',
      '1e3',
      '12ms',
      'Infinity',
      'NaN',
      '1,2',
      '9'.repeat(65),
    ]) {
      expect(parseTimeoutHeader(bad, 60_000)).toBeUndefined();
    }
    expect(parseTimeoutHeader(['1', '2'], 60_000)).toBeUndefined();
    expect(parseTimeoutHeader(undefined, 60_000)).toBeUndefined();
  });

  it('classifies statuses: 429, 502, 503, 504 dropped, other 5xx failure, the rest success', () => {
    expect([200, 204, 301, 400, 404, 428].map(statusOutcome)).toEqual(Array(6).fill('success'));
    expect([429, 502, 503, 504].map(statusOutcome)).toEqual(Array(4).fill('dropped'));
    expect([500, 501, 505, 599].map(statusOutcome)).toEqual(Array(4).fill('failure'));
    expect(statusOutcome(600)).toBe('success');
  });
});
