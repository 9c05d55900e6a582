/**
 * What a guarded action receives as its first argument. Reading `signal` creates the call's own
 * AbortController on first use: on Node 20 creating an AbortSignal costs several microseconds — more
 * than the rest of the guard — so an action that never looks at it does not pay for it. The object
 * the guard passes is its own record of the call (a subclass, so a call costs one object): `signal`
 * is the API; any other property on it is internal and may change.
 */
export class CallContext {
  #controller: AbortController | undefined = undefined;
  /** The abort reason, or NOT_ABORTED. */
  #reason: unknown = NOT_ABORTED;

  /** This call's signal: aborted when the call times out or the guard shuts down. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#reason !== NOT_ABORTED) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** @internal Aborts this call's signal (now, or as soon as it is created). */
  _abort(reason: unknown): void {
    if (this.#reason !== NOT_ABORTED) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/** What `#reason` holds until the call is aborted (any abort reason, even `undefined`, differs). */
const NOT_ABORTED: unique symbol = Symbol('not aborted');
