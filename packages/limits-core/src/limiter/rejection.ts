import { LimitExceededError, type RejectReason } from '../errors/LimitExceededError.js';

/** @internal The live numbers a rejection message quotes. */
export interface RejectionNumbers {
  inflight: number;
  capacity: number;
  queued: number;
  maxQueued: number;
  queuedCost: number;
  queuedBytes: number;
  maxQueuedBytes: number;
  maxCost: number;
  /** The service time deadline checks use (quoted by a `deadline` refusal). */
  serviceMs: number;
  /** The service time `retryAfterMs` is based on; `undefined` when no estimate exists. */
  retryServiceMs: number | undefined;
  cost: number;
  bytes: number;
  tenant: string | undefined;
}

function formatBytes(n: number): string {
  if (n === Infinity) return '∞';
  if (n < 10240) return `${n} B`;
  return n < 10485760 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`;
}

/** @internal A rejection message with the live numbers, e.g. "queue full: 100/100 waiters, …". */
function describeRejection(reason: RejectReason, n: RejectionNumbers): string {
  const inflight = `${n.inflight}/${n.capacity} units in flight`;
  switch (reason) {
    case 'at_limit':
      return `limit reached: ${inflight}, ${n.cost} requested, no queue (maxQueued 0)`;
    case 'queue_full':
      return n.tenant !== undefined && n.queued < n.maxQueued
        ? `tenant queue full: tenant "${n.tenant}" has reached maxQueuedPerTenant, ${inflight}`
        : `queue full: ${n.queued}/${n.maxQueued} waiters, ${inflight}`;
    case 'queue_bytes':
      return `queue bytes full: ${formatBytes(n.queuedBytes)} + ${formatBytes(n.bytes)} > ${formatBytes(n.maxQueuedBytes)}`;
    case 'too_large':
      return `cost ${n.cost} exceeds the largest capacity this limiter can have (${n.maxCost})`;
    case 'deadline':
      return `deadline cannot be met: ${n.queued} waiting (${n.queuedCost} units), ${inflight}, service ≈ ${Math.round(n.serviceMs)} ms`;
    case 'expired':
      return 'left the queue: its deadline or the maximum queue wait passed';
    case 'aborted':
      return 'aborted before a permit was granted';
    case 'closed':
      return 'limiter closed';
    case 'shed':
      return `shed under overload: below the admission threshold, or made room for a more important request; ${inflight}, ${n.queued}/${n.maxQueued} waiting`;
  }
}

/**
 * @internal The error for a refused request: the message with the live numbers, and `retryAfterMs`,
 * the time the work ahead needs to leave room for `cost` units at `capacity` units per service time
 * (left out when no service-time estimate exists: nothing measured, no `initialServiceMs` given).
 */
export function rejection(
  reason: RejectReason,
  n: RejectionNumbers,
  cause: unknown,
): LimitExceededError {
  const serviceMs = n.retryServiceMs;
  let retryAfterMs: number | undefined;
  if (serviceMs !== undefined) {
    const units = Math.max(1, n.inflight + n.queuedCost + n.cost - n.capacity);
    retryAfterMs = Math.max(0, Math.ceil((units * serviceMs) / Math.max(1, n.capacity)));
  }
  return new LimitExceededError(`limits: ${describeRejection(reason, n)}`, {
    reason,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(cause === undefined ? {} : { cause }),
  });
}
