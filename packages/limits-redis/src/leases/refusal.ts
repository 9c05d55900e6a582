import { LimitExceededError, type RejectReason } from 'limits-core';

/** @internal The error of a refused acquire, with the live numbers in its message. */
export function refusal(
  name: string,
  limit: number,
  reason: RejectReason,
  cost: number,
  used: number,
  cause?: unknown,
): LimitExceededError {
  const inUse = Number.isNaN(used) ? '' : `: ${used}/${limit} units in use`;
  let message: string;
  if (reason === 'closed') message = `limits: pool "${name}" is closed`;
  else if (reason === 'too_large')
    message = `limits: cost ${cost} exceeds pool "${name}"'s limit of ${limit}`;
  else if (reason === 'aborted') message = `limits: acquire on pool "${name}" aborted${inUse}`;
  else if (reason === 'expired') message = `limits: pool "${name}" full${inUse} for the whole wait`;
  else message = `limits: pool "${name}" full${inUse}`;
  return new LimitExceededError(message, cause === undefined ? { reason } : { reason, cause });
}
