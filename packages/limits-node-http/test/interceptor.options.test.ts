import { Limiter } from 'limits-core';
import type { Dispatcher } from 'undici';
import type { Dispatcher as Dispatcher8 } from 'undici8';
import { describe, expect, test } from 'vitest';
import { type LimitInterceptorOptions, limitInterceptor } from '../src/index.js';
import { OriginLimiters } from '../src/interceptor/limitInterceptor.js';

describe('limitInterceptor options', () => {
  const limiter = new Limiter({ limit: 1 });

  test('its type fits Dispatcher.compose of undici 7 and undici 8', () => {
    const for7: Dispatcher.DispatcherComposeInterceptor = limitInterceptor({ limiter });
    const for8: Dispatcher8.DispatcherComposeInterceptor = limitInterceptor({ limiter });
    expect(typeof for7).toBe('function');
    expect(typeof for8).toBe('function');
  });

  test('the dispatch function it returns takes exactly (opts, handler), as compose checks', () => {
    const dispatch = limitInterceptor({ limiter })(() => true);
    expect(dispatch.length).toBe(2);
    expect(dispatch.name).toBe('limitInterceptor');
  });

  test('a missing or wrong limiter is a TypeError naming the option', () => {
    expect(() => limitInterceptor(undefined as unknown as LimitInterceptorOptions)).toThrow(
      TypeError,
    );
    expect(() => limitInterceptor({} as LimitInterceptorOptions)).toThrow(
      'limits: option "limiter" must be a Limiter or a function (origin) => Limiter | undefined, got undefined',
    );
    expect(() => limitInterceptor({ limiter: {} as Limiter })).toThrow(TypeError);
  });

  test('bad values are refused with the option, the allowed range and the value', () => {
    expect(() => limitInterceptor({ limiter, timeoutMs: 0 })).toThrow(
      'limits: option "timeoutMs" must be a number in (0, Infinity], got 0',
    );
    expect(() => limitInterceptor({ limiter, timeoutMs: '5' as unknown as number })).toThrow(
      TypeError,
    );
    expect(() => limitInterceptor({ limiter, maxOrigins: 1.5 })).toThrow(RangeError);
    expect(() => limitInterceptor({ limiter, release: 'trailers' as unknown as 'body' })).toThrow(
      /option "release" must be one of "body", "headers"/,
    );
    expect(() =>
      limitInterceptor({ limiter, classify: 'x' as unknown as () => undefined }),
    ).toThrow('limits: option "classify" must be a function, got "x"');
    expect(() => limitInterceptor({ limiter, clock: {} as never })).toThrow(
      /option "clock\.now" must be a function, got undefined/,
    );
  });

  test('an unknown option is refused with the nearest valid name', () => {
    expect(() =>
      limitInterceptor({ limiter, timeout: 5 } as unknown as LimitInterceptorOptions),
    ).toThrow(/timeoutMs/);
  });

  test('a limiter function that returns something else than a Limiter is a TypeError naming the origin', () => {
    const table = new OriginLimiters(() => 42 as unknown as Limiter, 10);
    expect(() => table.for('http://a')).toThrow(
      'limits: option "limiter" returned something else than a Limiter or undefined for http://a',
    );
  });

  test('the origin table keeps the most recently used origins and forgets an idle one when full', () => {
    const made: string[] = [];
    const table = new OriginLimiters((origin) => {
      made.push(origin);
      return new Limiter({ limit: 1 });
    }, 2);
    const a = table.for('http://a');
    table.for('http://b');
    expect(table.for('http://a')).toBe(a); // a is now the most recently used
    table.for('http://c'); // evicts b, the least recently used idle one
    expect(table.size).toBe(2);
    expect(table.for('http://a')).toBe(a);
    table.for('http://b');
    expect(made).toEqual(['http://a', 'http://b', 'http://c', 'http://b']);
  });
});
