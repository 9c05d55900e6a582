import type { Random } from '../internal/random.js';

/**
 * The delay before retry number `retry` (1 for the first retry), with full jitter (AWS
 * architecture blog, "Exponential Backoff And Jitter"): uniform in `[0, cap]` where
 * `cap = min(maxDelayMs, baseDelayMs × 2^(retry − 1))`. Spreading retries over the whole interval
 * keeps callers that failed together from retrying together.
 * A `random` outside `[0, 1]` (or NaN) is clamped, so the delay is always within `[0, cap]`.
 * @internal
 */
export function fullJitterDelay(
  retry: number,
  baseDelayMs: number,
  maxDelayMs: number,
  random: Random,
): number {
  const cap = Math.min(maxDelayMs, baseDelayMs * 2 ** (retry - 1));
  const r = random();
  return r > 0 ? Math.min(cap, r * cap) : 0;
}
