/**
 * The slice of undici's dispatcher contract (`Dispatcher.DispatchHandler`, `DispatchController`,
 * `DispatchOptions`, `Dispatch`) that `limitInterceptor` uses, written out structurally: undici is
 * an optional peer dependency, so the published types must not import it. They are assignable both
 * ways to undici 7's and undici 8's own types (test/interceptor.options.test.ts checks it).
 */

/** Response headers as undici parses them (`Dispatcher.IncomingHttpHeaders`). */
export type InterceptorHeaders = Record<string, string | string[] | undefined>;

/** undici's per-request controller (`Dispatcher.DispatchController`): abort, pause, resume. */
export interface DispatchController {
  readonly aborted: boolean;
  readonly paused: boolean;
  readonly reason: Error | null;
  abort(reason: Error): void;
  pause(): void;
  resume(): void;
}

/** undici's handler API (`Dispatcher.DispatchHandler`, the `onRequestStart` … `onResponseError` form). */
export interface DispatchHandler {
  onRequestStart?(controller: DispatchController, context: unknown): void;
  onRequestUpgrade?(
    controller: DispatchController,
    statusCode: number,
    headers: InterceptorHeaders,
    socket: unknown,
  ): void;
  onResponseStart?(
    controller: DispatchController,
    statusCode: number,
    headers: InterceptorHeaders,
    statusMessage?: string,
  ): void;
  onResponseData?(controller: DispatchController, chunk: Uint8Array): void;
  onResponseEnd?(controller: DispatchController, trailers: InterceptorHeaders): void;
  onResponseError?(controller: DispatchController, error: Error): void;
}

/** The dispatch options `limitInterceptor` reads (`Dispatcher.DispatchOptions`; the rest pass through). */
export interface DispatchOptions {
  origin?: string | URL | undefined;
  path: string;
  method: string;
}

/**
 * A dispatch function (`Dispatcher.Dispatch`): returns `false` when the dispatcher is busy. Declared
 * as a method's type so its parameters compare bivariantly, as undici's own handler methods do: any
 * undici version's `dispatch` fits, and so does the one `limitInterceptor` returns.
 */
export type Dispatch = {
  dispatch(options: DispatchOptions, handler: DispatchHandler): boolean;
}['dispatch'];

/** What `Dispatcher.compose` takes: `(dispatch) => dispatch` (`Dispatcher.DispatcherComposeInterceptor`). */
export type DispatchInterceptor = (dispatch: Dispatch) => Dispatch;
