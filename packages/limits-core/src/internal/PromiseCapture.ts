/**
 * @internal Makes promises with one shared executor instead of a closure (and its context) per
 * promise: `promise()` returns a new promise, and `take()` then returns its resolve function
 * (`takeReject()`, called first, its reject function; take them at once, before the next `promise()`).
 */
export class PromiseCapture {
  #resolve: ((value: unknown) => void) | undefined = undefined;
  #reject: ((error: unknown) => void) | undefined = undefined;
  readonly #executor = (
    resolve: (value: unknown) => void,
    reject: (error: unknown) => void,
  ): void => {
    this.#resolve = resolve;
    this.#reject = reject;
  };

  /** A new pending promise; take its resolve function with {@link take}. */
  promise(): Promise<unknown> {
    return new Promise<unknown>(this.#executor);
  }

  /** The resolve function of the promise just made. */
  take(): (value: unknown) => void {
    const resolve = this.#resolve as (value: unknown) => void;
    this.#resolve = undefined;
    this.#reject = undefined;
    return resolve;
  }

  /** The reject function of the promise just made (take it before `take()`, which forgets it). */
  takeReject(): (error: unknown) => void {
    const reject = this.#reject as (error: unknown) => void;
    this.#reject = undefined;
    return reject;
  }
}
