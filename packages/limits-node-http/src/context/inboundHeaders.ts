/**
 * The headers a request's context is read from, and their parsers. Every value is untrusted input:
 * anything that is not exactly the expected form (garbage, signs, decimals, empty values, a list of
 * repeated headers, Node's comma-joined duplicates `"5, 7"`, over 64 characters) is ignored, as if
 * the header were absent, and every number is bounded. Nothing here throws.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type Criticality, parseCriticality } from 'limits-core';

/** The longest header value looked at: anything longer is ignored before any work. */
const MAX_LENGTH = 64;
const DIGITS = /^[ \t]*(\d+)[ \t]*$/;
/** gRPC's `TimeoutValue TimeoutUnit`: 1 to 8 ASCII digits, then one unit letter. */
const GRPC_TIMEOUT = /^[ \t]*(\d{1,8})([HMSmun])[ \t]*$/;
/** Digit strings longer than this are not converted (a number past 2^53 loses precision). */
const MAX_DIGITS = 15;

/** The highest attempt number read from a header: more is capped to it. */
export const MAX_ATTEMPT = 100;

/** The digits of `value`, or `undefined` when it is not ASCII digits with optional spaces around. */
function digitsOf(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > MAX_LENGTH) return undefined;
  return DIGITS.exec(value)?.[1];
}

/** The number of a digit string, capped at `max` (a string over 15 digits is over any cap). */
function capped(digits: string, max: number): number {
  return digits.length > MAX_DIGITS ? max : Math.min(Number(digits), max);
}

/**
 * A relative time limit in ms as `x-request-timeout-ms` (and Envoy's `x-envoy-expected-rq-timeout-ms`)
 * carry it: ASCII digits, optionally surrounded by spaces, capped at `maxMs`; anything else
 * (signs, decimals, units, lists, empty, over 64 characters, an array) is `undefined`.
 * @param value - the header value as Node gives it.
 * @param maxMs - the cap, in ms.
 * @example `parseTimeoutHeader(' 250 ', 60_000) // 250`; `parseTimeoutHeader('5, 7', 60_000) // undefined`
 */
export function parseTimeoutHeader(value: unknown, maxMs: number): number | undefined {
  const digits = digitsOf(value);
  return digits === undefined ? undefined : capped(digits, maxMs);
}

/** Ms per gRPC timeout unit. */
const GRPC_UNIT_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
};

/**
 * gRPC's `grpc-timeout` (`TimeoutValue TimeoutUnit`: 1 to 8 ASCII digits, then `H` hours, `M`
 * minutes, `S` seconds, `m` ms, `u` µs or `n` ns), in whole ms rounded down, capped at `maxMs`;
 * anything else is `undefined`.
 * @example `parseGrpcTimeout('2S', 60_000) // 2000`; `parseGrpcTimeout('1.5S', 60_000) // undefined`
 */
export function parseGrpcTimeout(value: unknown, maxMs: number): number | undefined {
  if (typeof value !== 'string' || value.length > MAX_LENGTH) return undefined;
  const m = GRPC_TIMEOUT.exec(value);
  if (m === null) return undefined;
  const ms = Math.floor(Number(m[1]) * (GRPC_UNIT_MS[m[2] as string] as number));
  return Math.min(ms, maxMs);
}

/**
 * An attempt number as `x-request-attempt` (and Envoy's `x-envoy-attempt-count`) carry it: ASCII
 * digits with optional spaces around, an integer ≥ 1, capped at {@link MAX_ATTEMPT}; anything else
 * (`0` included) is `undefined`.
 * @example `parseAttemptHeader('2') // 2`; `parseAttemptHeader('-1') // undefined`
 */
export function parseAttemptHeader(value: unknown): number | undefined {
  const digits = digitsOf(value);
  if (digits === undefined) return undefined;
  const attempt = capped(digits, MAX_ATTEMPT);
  return attempt >= 1 ? attempt : undefined;
}

/**
 * gRPC's `grpc-previous-rpc-attempts` (how many attempts came before this one) as this attempt's
 * number: `n` → `n + 1`, capped at {@link MAX_ATTEMPT}; anything but ASCII digits is `undefined`.
 * @example `parsePreviousAttempts('1') // 2`
 */
export function parsePreviousAttempts(value: unknown): number | undefined {
  const digits = digitsOf(value);
  return digits === undefined ? undefined : Math.min(capped(digits, MAX_ATTEMPT) + 1, MAX_ATTEMPT);
}

/** Which of the context headers `loadShed` reads (the names lowercase; `undefined`: not read). */
export interface InboundHeaderNames {
  readonly timeout: string | undefined;
  readonly criticality: string | undefined;
  readonly attempt: string | undefined;
  /** `grpc-timeout` and `grpc-previous-rpc-attempts`. */
  readonly grpc: boolean;
  /** `x-envoy-expected-rq-timeout-ms` and `x-envoy-attempt-count`. */
  readonly envoy: boolean;
}

/**
 * The context a request's headers carry, as `loadShed` reads them: each reader returns `undefined`
 * when no header it reads holds a valid value.
 */
export class InboundHeaders {
  readonly #names: InboundHeaderNames;
  readonly #maxTimeoutMs: number;

  constructor(names: InboundHeaderNames, maxTimeoutMs: number) {
    this.#names = names;
    this.#maxTimeoutMs = maxTimeoutMs;
  }

  /** The time limit in ms: the smallest of the valid time limit headers. */
  timeoutMs(headers: IncomingHttpHeaders): number | undefined {
    const names = this.#names;
    const max = this.#maxTimeoutMs;
    let ms =
      names.timeout === undefined ? undefined : parseTimeoutHeader(headers[names.timeout], max);
    if (names.grpc) ms = smaller(ms, parseGrpcTimeout(headers['grpc-timeout'], max));
    if (names.envoy) {
      ms = smaller(ms, parseTimeoutHeader(headers['x-envoy-expected-rq-timeout-ms'], max));
    }
    return ms;
  }

  /** The criticality, from the criticality header. */
  criticality(headers: IncomingHttpHeaders): Criticality | undefined {
    const name = this.#names.criticality;
    return name === undefined ? undefined : parseCriticality(headers[name]);
  }

  /** The attempt number: the largest of the valid attempt headers (any of them saying "retry" counts). */
  attempt(headers: IncomingHttpHeaders): number | undefined {
    const names = this.#names;
    let attempt =
      names.attempt === undefined ? undefined : parseAttemptHeader(headers[names.attempt]);
    if (names.grpc) {
      attempt = larger(attempt, parsePreviousAttempts(headers['grpc-previous-rpc-attempts']));
    }
    if (names.envoy)
      attempt = larger(attempt, parseAttemptHeader(headers['x-envoy-attempt-count']));
    return attempt;
  }
}

function smaller(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || (b !== undefined && b < a) ? b : a;
}

function larger(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || (b !== undefined && b > a) ? b : a;
}
