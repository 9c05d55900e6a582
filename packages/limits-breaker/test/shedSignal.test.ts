import { describe, expect, test } from 'vitest';
import { type AbortListener, ShedSignal } from '../src/ShedSignal.js';

describe('ShedSignal', () => {
  // issue 9, finding 9 (the signal queued calls wait with)
  test('is a genuine AbortSignal that hands its abort listeners over instead of keeping them', () => {
    const handed: AbortListener[] = [];
    const shed = new ShedSignal((l) => handed.push(l));
    expect(shed.signal).toBeInstanceOf(AbortSignal);
    const a = { handleEvent() {} };
    shed.signal.addEventListener('abort', a);
    shed.signal.addEventListener('other' as 'abort', { handleEvent() {} });
    shed.signal.removeEventListener('abort', a);
    expect(handed).toEqual([a]);
    shed.abort('why');
    shed.abort('again');
    expect(shed.signal.aborted).toBe(true);
    expect(shed.signal.reason).toBe('why');
    // An aborted signal takes no listener (the limiter refuses an aborted signal before adding one).
    shed.signal.addEventListener('abort', { handleEvent() {} });
    expect(handed).toHaveLength(1);
    // Other signals keep the native methods.
    expect(new AbortController().signal.addEventListener).toBe(
      EventTarget.prototype.addEventListener,
    );
  });

  // issue 9, finding 9
  test('callListener calls function and object listeners; one that throws is reported on the next tick', async () => {
    const shed = new ShedSignal(() => {});
    const calls: string[] = [];
    const event = new Event('abort');
    shed.callListener(() => calls.push('fn'), event);
    shed.callListener({ handleEvent: (e) => calls.push(e.type) }, event);
    const thrown = new Promise<unknown>((resolve) => {
      const listeners = process.listeners('uncaughtException');
      process.removeAllListeners('uncaughtException');
      process.once('uncaughtException', (e) => {
        for (const l of listeners) process.on('uncaughtException', l);
        resolve(e);
      });
    });
    shed.callListener(() => {
      throw new Error('listener broke');
    }, event);
    calls.push('after');
    expect(calls).toEqual(['fn', 'abort', 'after']);
    expect(((await thrown) as Error).message).toBe('listener broke');
  });
});
