import type { QueueTicket } from 'limits-core';
import { type Call, CallFlag } from './Call.js';

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

/**
 * @internal The guard's calls waiting in the limiter's queue, oldest first, each filed with its
 * `QueueTicket` (in `permit`: a queued call not started yet has one only while filed here). When the
 * circuit opens, each is taken out of the queue and answered `open`. Filing a call costs a few field
 * writes; calls that get a permit at once are never filed. (An AbortSignal passed with each queued
 * acquire would do it through public API, but it made every queued call carry the limiter's
 * per-waiter extras: 25 % more per call with 10,000 queued, and Node's EventTarget scans its listener
 * list on every add, so one signal shared by the queue was quadratic.)
 */
export class QueuedCalls {
  /** (A list of its own rather than a subclass: the list's methods stay monomorphic.) */
  readonly #list = new CallList();

  /** The limiter queued `call`: filed with its ticket. */
  file(call: Call, ticket: QueueTicket): void {
    call.permit = ticket;
    call.mark(CallFlag.WAITING);
    this.#list.append(call);
  }

  /** `call` left the limiter's queue (granted or refused): unfiled, if it was filed. */
  leave(call: Call): void {
    if (!call.is(CallFlag.WAITING)) return;
    call.mark(CallFlag.WAITING, false);
    call.permit = undefined;
    this.#list.remove(call);
  }

  /**
   * Takes `call` (filed) out of the limiter's queue with `cause`: the limiter answers it
   * synchronously through its `refused` (reason `aborted`, `cause` as the error's cause).
   */
  cancel(call: Call, cause: unknown): void {
    const ticket = call.permit as QueueTicket;
    this.leave(call);
    ticket.cancel(cause);
  }

  /**
   * Takes every filed call out of the limiter's queue, oldest first, marked `shed`: the limiter
   * answers each synchronously through its `refused` (a waiter granted by a refusal meanwhile,
   * through its `granted`).
   */
  shedAll(): void {
    for (let call = this.#list.head; call !== undefined; call = this.#list.head) {
      const ticket = call.permit as QueueTicket;
      this.leave(call);
      call.mark(CallFlag.SHED);
      ticket.cancel();
    }
  }
}
