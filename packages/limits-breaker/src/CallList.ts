import type { Call } from './Call.js';

/**
 * @internal An intrusive list of calls, linked through their `cprev`/`cnext` fields: no node and no
 * hashing per call (unlike a Set): the guard's calls in flight, newest first. Only a head: each
 * pointer stored into this long-lived object goes through V8's write barrier (a tail was a second
 * such store per call).
 */
export class CallList {
  head: Call | undefined = undefined;

  /** Adds `call` at the head. */
  push(call: Call): void {
    const head = this.head;
    call.cprev = undefined;
    call.cnext = head;
    if (head !== undefined) head.cprev = call;
    this.head = call;
  }

  /** Takes `call` (which is in this list) out of it. */
  remove(call: Call): void {
    if (call.cprev === undefined) this.head = call.cnext;
    else call.cprev.cnext = call.cnext;
    if (call.cnext !== undefined) call.cnext.cprev = call.cprev;
    call.cprev = undefined;
    call.cnext = undefined;
  }

  /** Forgets every call (their links are left as they are). */
  clear(): void {
    this.head = undefined;
  }
}
