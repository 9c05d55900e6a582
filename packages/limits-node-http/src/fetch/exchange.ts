import { OUTCOMES as OUTCOME_NAMES, type Outcome } from 'limits-core';
import type { FetchExchange } from '../shared/httpGuard.js';
import { classifyError, classifyStatus } from '../shared/outcome.js';
import type { LimitFetchConfig, LimitFetchRequest } from './options.js';

/** @internal How `limitFetch` calls the fetch it wraps. */
export type Send = (input: unknown, init?: RequestInit) => Promise<Response>;

const OUTCOMES: ReadonlySet<unknown> = new Set<Outcome>(OUTCOME_NAMES);

/** @internal Each response handed out by `limitFetch`: its outcome (for retries). */
export const outcomes = new WeakMap<object, Outcome>();

/** How one request ended. Never rejects. */
export class Exchange implements FetchExchange {
  constructor(
    readonly outcome: Outcome,
    readonly failed: boolean,
    readonly response: Response | undefined,
    readonly error: unknown,
  ) {}
}

/** Sends the request under `signal` and classifies how it ended. */
export async function exchange(
  c: LimitFetchConfig,
  send: Send,
  input: unknown,
  init: RequestInit | undefined,
  request: LimitFetchRequest,
  signal: AbortSignal | undefined,
  callerSignal: AbortSignal | undefined,
): Promise<Exchange> {
  // Aborted while it waited for its permit: never sent, says nothing about the downstream.
  if (signal?.aborted) return new Exchange('ignore', true, undefined, signal.reason);
  let response: Response;
  try {
    response = await send(input, signal === undefined ? init : { ...init, signal });
  } catch (error) {
    return new Exchange(errorOutcome(c, request, error, callerSignal), true, undefined, error);
  }
  const outcome = responseOutcome(c, request, response);
  if (c.retry !== undefined) outcomes.set(response, outcome);
  return new Exchange(outcome, false, response, undefined);
}

function responseOutcome(
  c: LimitFetchConfig,
  request: LimitFetchRequest,
  response: Response,
): Outcome {
  if (c.classify !== undefined) {
    try {
      const o = c.classify({ method: request.method, url: request.url, response });
      if (OUTCOMES.has(o)) return o as Outcome;
    } catch {
      // A classify that throws gets the default.
    }
  }
  return classifyStatus(response.status);
}

export function errorOutcome(
  c: LimitFetchConfig,
  request: LimitFetchRequest,
  error: unknown,
  callerSignal: AbortSignal | undefined,
): Outcome {
  if (callerSignal?.aborted) return 'ignore';
  if (c.classify !== undefined) {
    try {
      const o = c.classify({ method: request.method, url: request.url, error });
      if (OUTCOMES.has(o)) return o as Outcome;
    } catch {
      // A classify that throws gets the default.
    }
  }
  return classifyError(error);
}
