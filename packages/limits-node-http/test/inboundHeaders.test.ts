// The parsers of the headers a request context is read from, fed hostile values: each is ignored
// (undefined, as if absent), never thrown, never unbounded.
import { describe, expect, it } from 'vitest';
import { InboundHeaders } from '../src/context/inboundHeaders.js';
import {
  MAX_ATTEMPT,
  parseAttemptHeader,
  parseGrpcTimeout,
  parsePreviousAttempts,
  parseTimeoutHeader,
} from '../src/index.js';

/** Values no digit header accepts: garbage, signs, decimals, units, lists, empty, too long, arrays. */
const HOSTILE: unknown[] = [
  '',
  ' ',
  'abc',
  '-5',
  '+5',
  '1.5',
  '1e3',
  '0x10',
  '10ms',
  '5, 7',
  '5,7',
  '5 7',
  '\u00b2',
  '\u0665',
  `${' '.repeat(60)}12345`,
  '1'.repeat(65),
  ['5', '7'],
  ['5'],
  5,
  null,
  undefined,
  {},
];

describe('parseTimeoutHeader', () => {
  it('reads ASCII digits with optional spaces around, capped at maxMs (any over 15 digits too)', () => {
    expect(parseTimeoutHeader('250', 60_000)).toBe(250);
    expect(parseTimeoutHeader(' 0\t', 60_000)).toBe(0);
    expect(parseTimeoutHeader('007', 60_000)).toBe(7);
    expect(parseTimeoutHeader('70000', 60_000)).toBe(60_000);
    expect(parseTimeoutHeader('9'.repeat(16), 60_000)).toBe(60_000);
    expect(parseTimeoutHeader('9'.repeat(64), 60_000)).toBe(60_000);
  });

  it.each(HOSTILE.map((v) => [v]))('ignores %j', (value) => {
    expect(parseTimeoutHeader(value, 60_000)).toBeUndefined();
  });
});

describe('parseGrpcTimeout', () => {
  it('reads 1 to 8 digits and a unit (H M S m u n) as whole ms rounded down, capped', () => {
    expect(parseGrpcTimeout('1H', 86_400_000)).toBe(3_600_000);
    expect(parseGrpcTimeout('2M', 86_400_000)).toBe(120_000);
    expect(parseGrpcTimeout('3S', 60_000)).toBe(3_000);
    expect(parseGrpcTimeout('250m', 60_000)).toBe(250);
    expect(parseGrpcTimeout('1500u', 60_000)).toBe(1);
    expect(parseGrpcTimeout('999999n', 60_000)).toBe(0);
    expect(parseGrpcTimeout(' 10S ', 60_000)).toBe(10_000);
    expect(parseGrpcTimeout('99999999H', 60_000)).toBe(60_000);
  });

  it.each(
    [
      ...HOSTILE,
      '250',
      'S',
      '123456789S',
      '1s',
      '1h',
      '1ms',
      '-1S',
      '1.5S',
      '1S, 2S',
      '1 S',
      ['1S', '2S'],
    ].map((v) => [v]),
  )('ignores %j', (value) => {
    expect(parseGrpcTimeout(value, 60_000)).toBeUndefined();
  });
});

describe('parseAttemptHeader and parsePreviousAttempts', () => {
  it('reads an attempt ≥ 1, capped at MAX_ATTEMPT; gRPC counts the attempts before this one', () => {
    expect(parseAttemptHeader('1')).toBe(1);
    expect(parseAttemptHeader(' 3 ')).toBe(3);
    expect(parseAttemptHeader('1000')).toBe(MAX_ATTEMPT);
    expect(parseAttemptHeader('9'.repeat(40))).toBe(MAX_ATTEMPT);
    expect(parsePreviousAttempts('0')).toBe(1);
    expect(parsePreviousAttempts('2')).toBe(3);
    expect(parsePreviousAttempts('9'.repeat(40))).toBe(MAX_ATTEMPT);
    expect(MAX_ATTEMPT).toBe(100);
  });

  it.each([...HOSTILE, '0', '00'].map((v) => [v]))('parseAttemptHeader ignores %j', (value) => {
    expect(parseAttemptHeader(value)).toBeUndefined();
  });

  it.each(HOSTILE.map((v) => [v]))('parsePreviousAttempts ignores %j', (value) => {
    expect(parsePreviousAttempts(value)).toBeUndefined();
  });
});

describe('InboundHeaders', () => {
  const all = new InboundHeaders(
    {
      timeout: 'x-request-timeout-ms',
      criticality: 'x-request-criticality',
      attempt: 'x-request-attempt',
      grpc: true,
      envoy: true,
    },
    60_000,
  );

  it('takes the smallest valid time limit of ours, gRPC and Envoy, ignoring invalid ones', () => {
    expect(
      all.timeoutMs({
        'x-request-timeout-ms': '900',
        'grpc-timeout': '500m',
        'x-envoy-expected-rq-timeout-ms': '700',
      }),
    ).toBe(500);
    expect(
      all.timeoutMs({
        'x-request-timeout-ms': '5, 7',
        'grpc-timeout': 'soon',
        'x-envoy-expected-rq-timeout-ms': '700',
      }),
    ).toBe(700);
    expect(all.timeoutMs({ 'x-request-timeout-ms': '-1' })).toBeUndefined();
    expect(all.timeoutMs({})).toBeUndefined();
  });

  it('takes the largest valid attempt of ours, gRPC and Envoy', () => {
    expect(all.attempt({ 'x-request-attempt': '2', 'grpc-previous-rpc-attempts': '3' })).toBe(4);
    expect(all.attempt({ 'x-envoy-attempt-count': '3', 'x-request-attempt': 'x' })).toBe(3);
    expect(all.attempt({ 'x-request-attempt': '0' })).toBeUndefined();
  });

  it('reads the criticality with parseCriticality, ignoring anything else', () => {
    expect(all.criticality({ 'x-request-criticality': 'SHEDDABLE' })).toBe('sheddable');
    expect(all.criticality({ 'x-request-criticality': 'critical, sheddable' })).toBeUndefined();
    expect(all.criticality({ 'x-request-criticality': 'urgent' })).toBeUndefined();
  });

  it('reads nothing from headers that are turned off', () => {
    const none = new InboundHeaders(
      { timeout: undefined, criticality: undefined, attempt: undefined, grpc: false, envoy: false },
      60_000,
    );
    const headers = {
      'x-request-timeout-ms': '5',
      'grpc-timeout': '5m',
      'x-envoy-expected-rq-timeout-ms': '5',
      'x-request-criticality': 'sheddable',
      'x-request-attempt': '2',
      'grpc-previous-rpc-attempts': '2',
      'x-envoy-attempt-count': '2',
    };
    expect(none.timeoutMs(headers)).toBeUndefined();
    expect(none.criticality(headers)).toBeUndefined();
    expect(none.attempt(headers)).toBeUndefined();
  });
});
