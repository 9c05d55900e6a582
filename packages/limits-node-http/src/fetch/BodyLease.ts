import type { ReadableStreamReadResult, UnderlyingSource } from 'node:stream/web';
import type { Clock, Outcome } from 'limits-core';
import { classifyError } from '../shared/outcome.js';

const noop = (): void => {};

/** What a body's hold releases: a limits-core `Permit`, or a guard's `ctx.hold()`. */
export interface Releasable {
  release(outcome: Outcome): void;
}

/**
 * @internal A response body's hold on its permit: released exactly once, when the body is read to
 * its end (the response's outcome), cancelled (that outcome, or `ignore` for a success: the work
 * was cut short), errored (the error's outcome: a network error or our timeout `dropped`, the
 * caller's abort `ignore`), not consumed within `bodyTimeoutMs` (the request aborted; `dropped`
 * while a read waits for the downstream, `ignore` while nobody reads),
 * or garbage-collected unconsumed (`ignore`, the request cancelled).
 *
 * It never references the body stream it feeds (nor the response): the collector can then find
 * the stream unreachable, and {@link registry} reclaims the hold.
 */
export class BodyLease {
  /** The permit (or the guard's hold on it), until it goes back. */
  #permit: Releasable | undefined;
  #timer: unknown = undefined;
  #clock: Clock | undefined = undefined;
  /** A read of the original body is pending (someone reads, the downstream has not sent yet). */
  reading = false;
  /** The error a body timeout ended the body with (a reader gets it instead of a silent end). */
  timedOut: unknown = undefined;
  /** The call's deadline, ended with the body (set when this response is the one handed out). */
  deadline: { end(): void } | undefined = undefined;
  /** The call's signal, watched while the body is unread (see {@link BodyLease.watch}). */
  #signal: AbortSignal | undefined = undefined;
  readonly #onAbort = (): void => this.errored((this.#signal as AbortSignal).reason);
  /** The reader of the original body, set by {@link holdBody}. */
  reader: ReadableStreamDefaultReader<Uint8Array> | undefined = undefined;

  /**
   * @param outcome - the response's outcome (from its status), reported when the body ends well.
   * @param callerSignal - the caller's signal: a body error after it aborted is `ignore`.
   * @param permit - the permit (or the guard's hold on it), released with an outcome.
   */
  constructor(
    readonly outcome: Outcome,
    readonly callerSignal: AbortSignal | undefined,
    permit: Releasable,
  ) {
    this.#permit = permit;
  }

  /** Whether the permit went back. */
  get released(): boolean {
    return this.#permit === undefined;
  }

  /** Releases the permit with `outcome` (the first call wins). */
  finish(outcome: Outcome): void {
    const permit = this.#permit;
    if (permit === undefined) return;
    this.#permit = undefined;
    if (this.#timer !== undefined) (this.#clock as Clock).clearTimeout(this.#timer);
    this.#timer = undefined;
    registry?.unregister(this);
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.deadline?.end();
    permit.release(outcome);
  }

  /**
   * Releases at once when `signal` (the call's: the caller's abort or our timeout) aborts, even
   * with nobody reading the body (which then errors for a later reader).
   */
  watch(signal: AbortSignal | undefined): void {
    if (signal === undefined) return;
    this.#signal = signal;
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** The body failed with `error`. */
  errored(error: unknown): void {
    this.finish(this.timedOut !== undefined ? 'dropped' : classifyError(error, this.callerSignal));
  }

  /** The reader cancelled the body. */
  cancelled(): void {
    this.finish(this.outcome === 'success' ? 'ignore' : this.outcome);
  }

  /**
   * Starts the body timeout: after `ms`, unless released, `abort(error)` aborts the request (the
   * body errors for a reader) and the permit goes back as `dropped` when a read was waiting for the
   * downstream, or `ignore` when nobody was reading (the caller's doing, not the downstream's).
   */
  startTimeout(clock: Clock, ms: number, abort: (reason: unknown) => void): void {
    this.#clock = clock;
    this.#timer = clock.setTimeout(() => {
      this.#timer = undefined;
      const error = new DOMException(
        `limits: response body not consumed within ${ms} ms`,
        'TimeoutError',
      );
      this.timedOut = error;
      this.finish(this.reading ? 'dropped' : 'ignore');
      abort(error);
      this.reader?.cancel(error).catch(noop);
    }, ms);
  }

  /** The body stream was collected unconsumed (from the collector's cleanup task). */
  collected(): void {
    if (this.released) return;
    this.finish('ignore');
    this.reader?.cancel(new Error('limits: response body garbage-collected unread')).catch(noop);
  }
}

/** Reclaims the holds of body streams collected unconsumed (one registry for the process). */
const registry: FinalizationRegistry<BodyLease> | undefined =
  typeof FinalizationRegistry === 'function'
    ? new FinalizationRegistry((lease) => lease.collected())
    : undefined;

/**
 * Pulls the original body one chunk per read of the new one (no read-ahead: highWaterMark 0), and
 * tells the lease how the body ended.
 */
class BodySource implements UnderlyingSource<Uint8Array> {
  readonly #lease: BodyLease;
  constructor(lease: BodyLease) {
    this.#lease = lease;
  }

  async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    const lease = this.#lease;
    let chunk: ReadableStreamReadResult<Uint8Array>;
    lease.reading = true;
    try {
      chunk = await (lease.reader as ReadableStreamDefaultReader<Uint8Array>).read();
    } catch (error) {
      lease.reading = false;
      lease.errored(error);
      throw error;
    }
    lease.reading = false;
    if (!chunk.done) {
      controller.enqueue(chunk.value);
      return;
    }
    // A body cut short by the body timeout must not look complete to its reader.
    if (lease.timedOut !== undefined) throw lease.timedOut;
    lease.finish(lease.outcome);
    controller.close();
  }

  cancel(reason: unknown): Promise<void> {
    const lease = this.#lease;
    lease.cancelled();
    return (lease.reader as ReadableStreamDefaultReader<Uint8Array>).cancel(reason);
  }
}

/** A reason phrase `new Response()` accepts (Fetch's `reason-phrase`: HTAB, SP, VCHAR, obs-text). */
const REASON_PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * A response like `response` whose body releases `lease` when it ends: same status, status text,
 * headers, `url`, `redirected`, `type` and `ok`, made by the response's own class (so an undici
 * `Response` stays one), and clones that keep them. A status or status text that fetch resolves
 * with but `new Response()` refuses (a status outside 200–599, a status text that is not a reason
 * phrase, e.g. a decoded UTF-8 one) is built with `200` or `''` and shown as fetch gave it. The new
 * body is a default (not a byte) stream: BYOB readers are not supported.
 *
 * @throws whatever the response's class throws when it refuses to build one (a look-alike): then
 *   nothing has happened yet, neither to `response`'s body nor to `lease`.
 */
export function holdBody(response: Response, lease: BodyLease): Response {
  const stream = new ReadableStream<Uint8Array>(new BodySource(lease), { highWaterMark: 0 });
  // The response's own class (undici's Response stays one); the global one for a look-alike.
  const own: unknown = response.constructor;
  const Ctor = typeof own === 'function' && own !== Object ? (own as typeof Response) : Response;
  const { status, statusText } = response;
  const statusBuilds = status >= 200 && status <= 599;
  const textBuilds = REASON_PHRASE.test(statusText);
  const held = new Ctor(stream, {
    status: statusBuilds ? status : 200,
    statusText: textBuilds ? statusText : '',
    headers: response.headers,
  });
  lease.reader = (response.body as ReadableStream<Uint8Array>).getReader();
  registry?.register(stream, lease, lease);
  const shown: PropertyDescriptorMap = {
    url: { value: response.url, enumerable: true },
    redirected: { value: response.redirected, enumerable: true },
    type: { value: response.type, enumerable: true },
  };
  if (!statusBuilds || !textBuilds) {
    shown.status = { value: status, enumerable: true };
    shown.statusText = { value: statusText, enumerable: true };
    shown.ok = { value: response.ok, enumerable: true };
  }
  return show(held, shown);
}

/** `response` with the properties `shown` over its own, and so are its clones. */
function show(response: Response, shown: PropertyDescriptorMap): Response {
  const clone = response.clone;
  return Object.defineProperties(response, {
    ...shown,
    clone: { value: () => show(clone.call(response), shown) },
  });
}
