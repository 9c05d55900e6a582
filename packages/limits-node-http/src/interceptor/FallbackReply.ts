import { formatValue } from 'limits-core/internal';
import type { DispatchController, DispatchHandler, InterceptorHeaders } from './dispatcher.js';

/**
 * What a guard's `fallback` may return for `limitInterceptor`, besides a `Response`: a response
 * written out, as undici's `request()` gives one (`body` a string, bytes, or nothing).
 */
export interface InterceptorFallbackResponse {
  /** The status, an integer in [200, 599]. */
  readonly statusCode: number;
  /** Response headers (names are lower-cased). */
  readonly headers?: Record<string, string | string[] | undefined> | undefined;
  /** The body. @default empty */
  readonly body?: string | Uint8Array | null | undefined;
}

/** What `limitInterceptor` reads of a fallback `Response` (the global one or undici's). */
interface ResponseLike {
  readonly status: number;
  readonly statusText?: string;
  readonly headers: { forEach(fn: (value: string, name: string) => void): void };
  readonly body: ReadableStream<Uint8Array> | null;
}

const encoder = new TextEncoder();

function badFallback(value: unknown): TypeError {
  return new TypeError(
    `limits: a fetchGuard fallback for limitInterceptor must return a Response or { statusCode, headers?, body? } with a status in [200, 599] and a string or bytes body, got ${formatValue(value)}`,
  );
}

/**
 * @internal A guard fallback's answer, played to the caller's handler as a dispatcher would play a
 * response: `onResponseStart`, `onResponseData` for each chunk, `onResponseEnd`. It is the target of
 * the caller's controller: `pause()` stops the chunks until `resume()`, `abort()` ends the answer
 * with `onResponseError` (a `Response` body being read is cancelled).
 */
export class FallbackReply implements DispatchController {
  /** Tells a `LimitController` pointed at this that the answer is a fallback's. */
  readonly fallback = true;
  /** What the handler's callbacks get (the caller's stable controller). */
  #controller: DispatchController = this;
  readonly #statusCode: number;
  readonly #statusMessage: string | undefined;
  readonly #headers: InterceptorHeaders;
  /** The body still to play: bytes, or the reader of a `Response` body. */
  #bytes: Uint8Array | undefined;
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined = undefined;
  readonly #stream: ReadableStream<Uint8Array> | undefined;
  #handler: DispatchHandler | undefined = undefined;
  #paused = false;
  #reading = false;
  #ended = false;
  #reason: Error | null = null;

  /**
   * @param value - what the fallback returned.
   * @throws TypeError when it is neither a `Response` nor `{ statusCode, headers?, body? }`.
   */
  constructor(value: unknown) {
    if (typeof value !== 'object' || value === null) throw badFallback(value);
    const v = value as Partial<ResponseLike> & Partial<InterceptorFallbackResponse>;
    const headers: InterceptorHeaders = {};
    let status: unknown;
    if (typeof v.status === 'number' && typeof v.headers?.forEach === 'function') {
      status = v.status;
      (v as ResponseLike).headers.forEach((item, name) => {
        headers[name] = item;
      });
      this.#statusMessage = typeof v.statusText === 'string' ? v.statusText : undefined;
      const body = (v as ResponseLike).body;
      this.#stream = body === null || body === undefined ? undefined : body;
      this.#bytes = undefined;
    } else {
      status = v.statusCode;
      this.#statusMessage = undefined;
      this.#stream = undefined;
      const given = (v as InterceptorFallbackResponse).headers;
      if (given !== undefined) {
        if (typeof given !== 'object' || given === null) throw badFallback(value);
        for (const [name, item] of Object.entries(given)) headers[name.toLowerCase()] = item;
      }
      const body = v.body;
      if (typeof body === 'string') this.#bytes = encoder.encode(body);
      else if (body instanceof Uint8Array) this.#bytes = body;
      else if (body === undefined || body === null) this.#bytes = undefined;
      else throw badFallback(value);
    }
    if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599)
      throw badFallback(value);
    this.#statusCode = status;
    this.#headers = headers;
  }

  get aborted(): boolean {
    return this.#reason !== null;
  }

  get paused(): boolean {
    return this.#paused;
  }

  get reason(): Error | null {
    return this.#reason;
  }

  /**
   * Plays the answer to `handler` (the first chunks at once, the rest as it is not paused), its
   * callbacks given `controller`; `onRequestStart` first when `start`.
   */
  play(handler: DispatchHandler, controller: DispatchController, start: boolean): void {
    this.#handler = handler;
    this.#controller = controller;
    if (start) handler.onRequestStart?.(controller, null);
    if (this.aborted) return;
    handler.onResponseStart?.(controller, this.#statusCode, this.#headers, this.#statusMessage);
    if (this.#stream !== undefined && !this.aborted) this.#reader = this.#stream.getReader();
    this.#pump();
  }

  abort(reason: Error): void {
    if (this.#reason !== null || this.#ended) return;
    this.#reason = reason;
    this.#bytes = undefined;
    // (A body never played is cancelled too: its source, e.g. a cache stream, is let go.)
    (this.#reader ?? this.#stream)?.cancel(reason).catch(() => {});
    this.#handler?.onResponseError?.(this.#controller, reason);
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#pump();
  }

  #pump(): void {
    const handler = this.#handler as DispatchHandler;
    if (this.#paused || this.aborted || this.#ended || this.#reading) return;
    const bytes = this.#bytes;
    if (bytes !== undefined) {
      this.#bytes = undefined;
      handler.onResponseData?.(this.#controller, bytes);
      if (this.#paused || this.aborted) return;
    }
    const reader = this.#reader;
    if (reader === undefined) {
      this.#end();
      return;
    }
    this.#reading = true;
    reader.read().then(
      ({ done, value }) => {
        this.#reading = false;
        if (this.aborted) return;
        if (done) this.#end();
        else {
          this.#bytes = value;
          this.#pump();
        }
      },
      (error: unknown) => {
        this.#reading = false;
        this.abort(error instanceof Error ? error : new Error(String(error)));
      },
    );
  }

  #end(): void {
    this.#ended = true;
    this.#handler?.onResponseEnd?.(this.#controller, {});
  }
}
