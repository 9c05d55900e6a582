import { DeficitRoundRobin } from '../fairness/DeficitRoundRobin.js';
import type { MonotonicTime } from '../internal/MonotonicTime.js';
import type { WaitQueue } from '../queue/WaitQueue.js';
import type { LimitFeed } from './LimitFeed.js';
import type { LimiterSnapshot } from './options.js';

/** @internal The limiter's own counters, as `Limiter.snapshot()` passes them. */
export interface LimiterCounters {
  readonly capacity: number;
  readonly inflight: number;
  readonly permits: number;
  readonly closed: boolean;
}

/** @internal Assembles `Limiter.snapshot()` from the limiter's counters, its feed and its queue. */
export function snapshot(
  counters: LimiterCounters,
  feed: LimitFeed,
  queue: WaitQueue,
  time: MonotonicTime,
): LimiterSnapshot {
  return {
    limit: feed.limit,
    capacity: counters.capacity,
    inflight: counters.inflight,
    permits: counters.permits,
    queued: queue.size,
    queuedCost: queue.queuedCost,
    queuedBytes: queue.queuedBytes,
    oldestQueuedMs: queue.size === 0 ? 0 : Math.max(0, time.now() - oldestAt(queue)),
    serviceMs: feed.service.estimate(),
    stalledSamples: feed.stalledSamples,
    tenants: queue.selector instanceof DeficitRoundRobin ? queue.selector.tenants : 0,
    closed: counters.closed,
  };
}

/** Arrival (clock ms) of the oldest queued request: the lane's oldest, else the oldest waiter. */
function oldestAt(queue: WaitQueue): number {
  return queue.lane.size > 0 ? queue.lane.oldestAt : (queue.head?.enqueuedAt ?? Number.NaN);
}
