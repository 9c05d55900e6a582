import { status } from '@grpc/grpc-js';
import { LimitExceededError } from 'limits-core';
import { describe, expect, it } from 'vitest';
import { classifyStatus, RETRY_PUSHBACK_KEY, refusalStatus } from '../src/index.js';

describe('classifyStatus', () => {
  it('counts every status code as the README table says', () => {
    const table: Record<string, string> = {};
    for (const [name, code] of Object.entries(status)) {
      if (typeof code === 'number') table[name] = classifyStatus(code);
    }
    expect(table).toEqual({
      OK: 'success',
      CANCELLED: 'failure',
      UNKNOWN: 'failure',
      INVALID_ARGUMENT: 'success',
      DEADLINE_EXCEEDED: 'dropped',
      NOT_FOUND: 'success',
      ALREADY_EXISTS: 'success',
      PERMISSION_DENIED: 'success',
      RESOURCE_EXHAUSTED: 'dropped',
      FAILED_PRECONDITION: 'success',
      ABORTED: 'success',
      OUT_OF_RANGE: 'success',
      UNIMPLEMENTED: 'failure',
      INTERNAL: 'failure',
      UNAVAILABLE: 'dropped',
      DATA_LOSS: 'failure',
      UNAUTHENTICATED: 'success',
    });
    expect(classifyStatus(99)).toBe('failure');
  });
});

describe('refusalStatus', () => {
  const refusal = (reason: string, retryAfterMs?: number) =>
    new LimitExceededError('refused', { reason: reason as never, retryAfterMs });

  it('answers each refusal reason with its status code and names the reason in details', () => {
    const codes: Record<string, number> = {};
    for (const reason of [
      'at_limit',
      'queue_full',
      'queue_bytes',
      'too_large',
      'shed',
      'closed',
      'deadline',
      'expired',
      'aborted',
    ]) {
      const s = refusalStatus(refusal(reason));
      expect(s.details).toBe(`limits: ${reason}`);
      codes[reason] = s.code;
    }
    expect(codes).toEqual({
      at_limit: status.RESOURCE_EXHAUSTED,
      queue_full: status.RESOURCE_EXHAUSTED,
      queue_bytes: status.RESOURCE_EXHAUSTED,
      too_large: status.RESOURCE_EXHAUSTED,
      shed: status.RESOURCE_EXHAUSTED,
      closed: status.UNAVAILABLE,
      deadline: status.DEADLINE_EXCEEDED,
      expired: status.DEADLINE_EXCEEDED,
      aborted: status.CANCELLED,
    });
    expect(refusalStatus({ code: 'CIRCUIT_OPEN' })).toMatchObject({
      code: status.UNAVAILABLE,
      details: 'limits: circuit_open',
    });
    expect(refusalStatus({ code: 'CALL_TIMEOUT' }).code).toBe(status.DEADLINE_EXCEEDED);
    expect(refusalStatus({ reason: 'Not a reason!' }).details).toBe('limits: unknown');
  });

  it('carries the retry estimate, rounded up to whole ms, only when there is one', () => {
    expect(refusalStatus(refusal('queue_full', 12.2)).metadata.get(RETRY_PUSHBACK_KEY)).toEqual([
      '13',
    ]);
    expect(refusalStatus(refusal('queue_full')).metadata.get(RETRY_PUSHBACK_KEY)).toEqual([]);
  });
});
