import type { Lease } from './Lease.js';
import type { ResolvedAcquire } from './options.js';

/** @internal One acquire in progress: its first attempt, then its wait for a release. */
export interface Waiter {
  readonly o: ResolvedAcquire;
  /** When the acquire started (pool clock). */
  readonly start: number;
  resolve(lease: Lease): void;
  reject(error: unknown): void;
  /** A Redis attempt is in flight. */
  attempting: boolean;
  /** A release message came while an attempt was in flight: try again at once if it is refused. */
  recheck: boolean;
  /** In the wait list. */
  queued: boolean;
  settled: boolean;
  /** The wait's deadline timer. */
  timer: unknown;
  /** The abort listener on `o.signal`. */
  onAbort: (() => void) | undefined;
  /** Units in use at the last refusal. */
  used: number;
}

/** @internal A new acquire, before its first attempt. */
export function newWaiter(
  o: ResolvedAcquire,
  start: number,
  resolve: (lease: Lease) => void,
  reject: (error: unknown) => void,
): Waiter {
  return {
    o,
    start,
    resolve,
    reject,
    attempting: false,
    recheck: false,
    queued: false,
    settled: false,
    timer: undefined,
    onAbort: undefined,
    used: Number.NaN,
  };
}
