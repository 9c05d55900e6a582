/**
 * @internal Makes promises with one shared executor instead of a closure (and its context) per
 * promise: `promise()` returns a new promise, and `take()` then returns its resolve function (call it
 * at once, before the next `promise()`).
 */
export class PromiseCapture {
  #resolve: ((value: unknown) => void) | undefined = undefined;
  readonly #executor = (resolve: (value: unknown) => void): void => {
    this.#resolve = resolve;
  };

  /** A new pending promise; take its resolve function with {@link take}. */
  promise(): Promise<unknown> {
    return new Promise<unknown>(this.#executor);
  }

  /** The resolve function of the promise just made. */
  take(): (value: unknown) => void {
    const resolve = this.#resolve as (value: unknown) => void;
    this.#resolve = undefined;
    return resolve;
  }
}
