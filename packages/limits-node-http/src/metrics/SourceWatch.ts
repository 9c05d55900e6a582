import type { Limiter, RejectEvent, ReleaseEvent } from 'limits-core';
import type { QuotaSource, ResolvedSource, RetryPolicySource } from './source.js';

/**
 * Where one limiter's events go (a part of a source: the limiter, or one partition). Times are in
 * seconds; `NaN` when the limiter did not time the call (granted before the watch began).
 */
export interface PartSink {
  admitted(waitedS: number): void;
  refused(reason: string): void;
  released(outcome: string, heldS: number): void;
}

/** Where a source's other events go: its guard's, its quota's, its retry policy's. */
export interface SourceSink {
  readonly parts: readonly PartSink[];
  fallback(reason: string): void;
  breakerCall(outcome: 'success' | 'failure'): void;
  quotaRefused(axis: string): void;
  quotaAlert(axis: string): void;
  quotaFailed(policy: string): void;
  retried(): void;
  retryRefused(): void;
}

type Listener = (event: never) => void;
type Emitter = {
  on(event: string, listener: Listener): unknown;
  off(event: string, listener: Listener): unknown;
};

/**
 * The listeners one metrics registration puts on a source (its limiters' `acquire`, `reject` and
 * `release`; its guard's `fallback` and breaker's `success`/`failure`; its quota's `refuse`,
 * `alert` and `failure`; its retry policy's `retry` and `budget_exhausted`), feeding `sink`; and
 * taking them all away again. Both metrics adapters share it, so they count the same events.
 */
export class SourceWatch {
  readonly #off: Array<() => void> = [];
  #closed = false;

  constructor(
    source: ResolvedSource,
    quota: QuotaSource | undefined,
    retry: RetryPolicySource | undefined,
    sink: SourceSink,
  ) {
    source.parts.forEach((part, i) => {
      this.#limiter(part.limiter, sink.parts[i] as PartSink);
    });
    const guard = source.guard;
    if (guard !== undefined) {
      const fallback = (cause: { readonly reason: string }) => sink.fallback(cause.reason);
      const success = () => sink.breakerCall('success');
      const failure = () => sink.breakerCall('failure');
      guard.on('fallback', fallback);
      guard.breaker.on('success', success);
      guard.breaker.on('failure', failure);
      this.#off.push(() => {
        guard.off('fallback', fallback);
        guard.breaker.removeListener('success', success);
        guard.breaker.removeListener('failure', failure);
      });
    }
    if (quota !== undefined) {
      this.#listen(quota as unknown as Emitter, {
        // A store that failed closed refuses with no axis: counted once, as a failure.
        refuse: (e: { axis: string | null }) => {
          if (e.axis !== null) sink.quotaRefused(e.axis);
        },
        alert: (e: { axis: string }) => sink.quotaAlert(e.axis),
        failure: (e: { policy: string }) => sink.quotaFailed(e.policy),
      });
    }
    if (retry !== undefined) {
      this.#listen(retry as unknown as Emitter, {
        retry: () => sink.retried(),
        budget_exhausted: () => sink.retryRefused(),
      });
    }
  }

  #limiter(limiter: Limiter, sink: PartSink): void {
    const acquire = (e: { waitedMs: number }) => sink.admitted(e.waitedMs / 1000);
    const reject = (e: RejectEvent) => sink.refused(e.reason);
    // NaN rtt: granted before this listener came, so the call was not timed.
    const release = (e: ReleaseEvent) => sink.released(e.outcome, e.rtt / 1000);
    limiter.on('acquire', acquire);
    limiter.on('reject', reject);
    limiter.on('release', release);
    this.#off.push(() => {
      limiter.off('acquire', acquire);
      limiter.off('reject', reject);
      limiter.off('release', release);
    });
  }

  // biome-ignore lint/suspicious/noExplicitAny: each listener takes its own event's payload
  #listen(emitter: Emitter, listeners: Record<string, (event: any) => void>): void {
    for (const [event, listener] of Object.entries(listeners)) emitter.on(event, listener);
    this.#off.push(() => {
      for (const [event, listener] of Object.entries(listeners)) emitter.off(event, listener);
    });
  }

  /** Removes every listener (idempotent). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const off of this.#off) off();
  }
}
