import { describe, expect, it } from 'vitest';
import { classifyError, classifyStatus, userOutcome } from '../src/shared/outcome.js';

describe('classifyStatus', () => {
  it('reads 429, 502, 503 and 504 as congestion', () => {
    for (const s of [429, 502, 503, 504]) expect(classifyStatus(s), String(s)).toBe('dropped');
  });

  it('reads other 5xx as a failure', () => {
    for (const s of [500, 501, 505, 507, 599]) expect(classifyStatus(s), String(s)).toBe('failure');
  });

  it('reads 1xx to 4xx other than 429 as a success', () => {
    for (const s of [100, 200, 204, 301, 304, 400, 401, 404, 409, 428, 430, 499]) {
      expect(classifyStatus(s), String(s)).toBe('success');
    }
  });
});

describe('classifyError', () => {
  it('reads a timeout or our own abort as congestion', () => {
    expect(classifyError(new DOMException('t', 'TimeoutError'))).toBe('dropped');
    expect(classifyError(new DOMException('a', 'AbortError'))).toBe('dropped');
  });

  it('reads a network error wrapped by fetch as congestion', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(classifyError(new TypeError('fetch failed', { cause: refused }))).toBe('dropped');
    const socket = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    expect(classifyError(socket)).toBe('dropped');
    const headers = Object.assign(new Error('t'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
    expect(classifyError(new TypeError('fetch failed', { cause: headers }))).toBe('dropped');
  });

  it('reads the caller abort as saying nothing, whatever the error', () => {
    const c = new AbortController();
    c.abort(new Error('user left'));
    expect(classifyError(c.signal.reason, c.signal)).toBe('ignore');
    expect(classifyError(new DOMException('a', 'AbortError'), c.signal)).toBe('ignore');
  });

  it('reads an abort as congestion when the caller signal did not abort', () => {
    const c = new AbortController();
    expect(classifyError(new DOMException('t', 'TimeoutError'), c.signal)).toBe('dropped');
  });

  it('reads other errors as a failure', () => {
    expect(classifyError(new TypeError('Failed to parse URL'))).toBe('failure');
    const dns = Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    expect(classifyError(new TypeError('fetch failed', { cause: dns }))).toBe('failure');
    expect(classifyError('a string')).toBe('failure');
    expect(classifyError(undefined)).toBe('failure');
    expect(classifyError(null)).toBe('failure');
  });

  it('stops following a cause chain that loops', () => {
    const a: { cause?: unknown } = {};
    a.cause = a;
    expect(classifyError(a)).toBe('failure');
  });
});

describe("a user's classify", () => {
  it('gives its answer when it is an outcome', () => {
    for (const outcome of ['success', 'dropped', 'failure', 'ignore'] as const) {
      expect(userOutcome(() => outcome, 503)).toBe(outcome);
    }
  });

  it('leaves the default (undefined) without a classify, or when it answers nothing or nonsense, or throws', () => {
    expect(userOutcome(undefined, 503)).toBeUndefined();
    expect(userOutcome(() => undefined, 503)).toBeUndefined();
    expect(userOutcome(() => 'nonsense' as never, 503)).toBeUndefined();
    expect(
      userOutcome(() => {
        throw new Error('classify bug');
      }, 503),
    ).toBeUndefined();
  });

  it('is asked about the subject it is given', () => {
    const seen: unknown[] = [];
    userOutcome(
      (subject: { status: number }) => {
        seen.push(subject);
        return undefined;
      },
      { status: 418 },
    );
    expect(seen).toEqual([{ status: 418 }]);
  });
});
