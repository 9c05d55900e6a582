import type { Call } from './Call.js';

/**
 * @internal An intrusive list of calls, linked through their `cprev`/`cnext` fields: no node and no
 * hashing per call (unlike a Set). A call is in at most one list at a time: the guard's calls waiting
 * in the limiter's queue, or its calls in flight.
 */
export class CallList {
  head: Call | undefined = undefined;
  tail: Call | undefined = undefined;

  /** Adds `call` at the tail. */
  append(call: Call): void {
    const tail = this.tail;
    call.cprev = tail;
    call.cnext = undefined;
    if (tail === undefined) this.head = call;
    else tail.cnext = call;
    this.tail = call;
  }

  /** Takes `call` (which is in this list) out of it. */
  remove(call: Call): void {
    if (call.cprev === undefined) this.head = call.cnext;
    else call.cprev.cnext = call.cnext;
    if (call.cnext === undefined) this.tail = call.cprev;
    else call.cnext.cprev = call.cprev;
    call.cprev = undefined;
    call.cnext = undefined;
  }

  /** Forgets every call (their links are left as they are). */
  clear(): void {
    this.head = undefined;
    this.tail = undefined;
  }
}
