import { describe, expect, it } from 'vitest';
import {
  MemoryQuotaStore,
  Quota,
  type QuotaAlertEvent,
  type QuotaStoreFullError,
} from '../src/index.js';

/** A settable wall clock. */
function clock(start = 0) {
  return {
    t: start,
    now() {
      return this.t;
    },
  };
}

interface Ctx {
  user: string;
}

/** Seed 002 scaled down: account 3 (429) before global 10 (503), hourly windows. */
function seedQuota(c = clock(), extra: { alertAt?: number } = {}) {
  const store = new MemoryQuotaStore({ clock: c });
  const quota = new Quota<Ctx>({
    windowMs: 3_600_000,
    store,
    axes: [
      { name: 'account', key: (x) => x.user, limit: 3, status: 429 },
      { name: 'global', key: () => 'all', limit: 10, status: 503, ...extra },
    ],
  });
  return { quota, store, clock: c };
}

describe('Quota (memory store, injected clock)', () => {
  it('charges every axis when all have room and refuses at the account limit with 429', async () => {
    const { quota } = seedQuota();
    for (let i = 0; i < 3; i++) expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    expect(await quota.consume({ user: 'a' })).toEqual({
      ok: false,
      axis: 'account',
      status: 429,
      retryAfterMs: 3_600_000,
    });
    expect(await quota.consume({ user: 'b' }, 3)).toEqual({ ok: true });
  });

  it('leaves the account counter untouched when the global axis refuses', async () => {
    const { quota, store } = seedQuota();
    for (const user of ['a', 'b', 'c']) await quota.consume({ user }, 3); // global 9/10
    expect(await quota.consume({ user: 'd' }, 2)).toMatchObject({
      ok: false,
      axis: 'global',
      status: 503,
    });
    // d's account was not charged by the refusal: all 3 of its units are still there once the
    // global axis has room (one unit left: a charge of 1 passes, d's account is then 1/3).
    expect(await quota.consume({ user: 'd' }, 1)).toEqual({ ok: true });
    expect(
      store.consumeNow({
        quota: 'quota',
        windowMs: 3_600_000,
        amount: 1,
        axes: [{ name: 'account', key: 'd', limit: 0 }],
      }).counts,
    ).toEqual([1]);
  });

  it('reports 429 before 503 when both the account and the global axis are full', async () => {
    const { quota } = seedQuota();
    for (const user of ['a', 'b', 'c']) await quota.consume({ user }, 3);
    await quota.consume({ user: 'd' }, 1); // global 10/10
    expect(await quota.consume({ user: 'a' })).toMatchObject({
      ok: false,
      axis: 'account',
      status: 429,
    });
    expect(await quota.consume({ user: 'd' })).toMatchObject({
      ok: false,
      axis: 'global',
      status: 503,
    });
  });

  it('fires one alert exactly at the charge that crosses 66 % of the global limit', async () => {
    const { quota } = seedQuota();
    const alerts: QuotaAlertEvent[] = [];
    quota.on('alert', (e) => {
      if (e.axis === 'global') alerts.push(e);
    });
    const users = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k'];
    for (let i = 0; i < 6; i++) await quota.consume({ user: users[i] as string });
    expect(alerts).toEqual([]); // 6/10 < 6.6
    await quota.consume({ user: 'g' }); // 7/10: crosses 6.6
    expect(alerts).toEqual([
      {
        quota: 'quota',
        axis: 'global',
        key: 'all',
        count: 7,
        limit: 10,
        alertAt: 0.66,
        resetInMs: 3_600_000,
      },
    ]);
    for (let i = 7; i < 11; i++) await quota.consume({ user: users[i] as string });
    expect(alerts).toHaveLength(1);
  });

  it('fires the alert at the exact count despite binary rounding (0.7 × 10 = 7, and seed 002: 1,980 of 3,000)', async () => {
    const counts: number[] = [];
    const quota = new Quota<string>({
      windowMs: 3_600_000,
      store: new MemoryQuotaStore({ clock: clock() }),
      axes: [
        { name: 'seventy', key: () => 's', limit: 10, alertAt: 0.7 },
        { name: 'global', key: () => 'all', limit: 3_000 },
      ],
    });
    quota.on('alert', (e) => counts.push(e.count));
    for (let i = 0; i < 10; i++) await quota.consume('x');
    expect(counts).toEqual([7]);
    const global = new Quota<string>({
      windowMs: 3_600_000,
      store: new MemoryQuotaStore({ clock: clock() }),
      axes: [{ name: 'global', key: () => 'all', limit: 3_000 }],
    });
    global.on('alert', (e) => counts.push(e.count));
    for (let i = 0; i < 2_000; i++) await global.consume('x');
    expect(counts).toEqual([7, 1_980]);
  });

  it('fires the alert on a multi-unit charge that jumps over the threshold, once', async () => {
    const { quota } = seedQuota();
    let alerts = 0;
    quota.on('alert', (e) => {
      if (e.axis === 'global') alerts++;
    });
    await quota.consume({ user: 'a' }, 3);
    await quota.consume({ user: 'b' }, 3); // 6
    await quota.consume({ user: 'c' }, 3); // 9: crosses 6.6
    await quota.consume({ user: 'd' }, 1);
    expect(alerts).toBe(1);
  });

  it('fires no alert for a charge the quota refused', async () => {
    const { quota } = seedQuota();
    let alerts = 0;
    quota.on('alert', (e) => {
      if (e.axis === 'global') alerts++;
    });
    for (const user of ['a', 'b']) await quota.consume({ user }, 3); // 6
    expect(await quota.consume({ user: 'c' }, 5)).toMatchObject({ axis: 'account' });
    expect(alerts).toBe(0);
  });

  it('restarts every counter at the next window and alerts again in it', async () => {
    const { quota, clock: c } = seedQuota(clock(1_000));
    let alerts = 0;
    quota.on('alert', (e) => {
      if (e.axis === 'global') alerts++;
    });
    for (const user of ['a', 'b', 'c']) await quota.consume({ user }, 3);
    await quota.consume({ user: 'd' });
    expect(await quota.consume({ user: 'a' })).toMatchObject({
      ok: false,
      retryAfterMs: 3_599_000,
    });
    c.t = 3_599_999;
    expect(await quota.consume({ user: 'a' })).toMatchObject({ ok: false, retryAfterMs: 1 });
    c.t = 3_600_000;
    expect(await quota.consume({ user: 'a' }, 3)).toEqual({ ok: true });
    for (const user of ['b', 'c']) await quota.consume({ user }, 3);
    expect(alerts).toBe(2);
  });

  it('drops the counters of ended windows', async () => {
    const { quota, store, clock: c } = seedQuota();
    for (let i = 0; i < 5; i++) await quota.consume({ user: `u${i}` });
    expect(store.size).toBe(6);
    c.t = 3_600_000;
    await quota.consume({ user: 'x' });
    expect(store.size).toBe(2);
  });

  it('holds at most maxKeys counters and fails closed (503) for a new key, never evicting a live one', async () => {
    const c = clock();
    const store = new MemoryQuotaStore({ clock: c, maxKeys: 3 });
    const quota = new Quota<Ctx>({
      windowMs: 1_000,
      store,
      axes: [
        { name: 'account', key: (x) => x.user, limit: 2 },
        { name: 'global', key: () => 'all', limit: 100, status: 503 },
      ],
    });
    const failures: string[] = [];
    quota.on('failure', (e) =>
      failures.push(`${e.policy}:${(e.error as QuotaStoreFullError).code}`),
    );
    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    expect(await quota.consume({ user: 'b' })).toEqual({ ok: true });
    c.t = 250;
    expect(await quota.consume({ user: 'c' })).toEqual({
      ok: false,
      axis: null,
      status: 503,
      retryAfterMs: 750,
    });
    expect(failures).toEqual(['closed:QUOTA_STORE_FULL']);
    expect(store.size).toBe(3);
    // Existing counters keep counting: a is charged and then refused by its own limit.
    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    expect(await quota.consume({ user: 'a' })).toMatchObject({ ok: false, axis: 'account' });
    c.t = 1_000; // the window ended: its counters are dropped, there is room again
    expect(await quota.consume({ user: 'c' })).toEqual({ ok: true });
    expect(store.size).toBe(2);
  });

  it('fails closed with a finite retry hint when one call needs more counters than maxKeys', async () => {
    const c = clock();
    const store = new MemoryQuotaStore({ clock: c, maxKeys: 1 });
    const quota = new Quota<Ctx>({
      windowMs: 1_000,
      store,
      axes: [
        { name: 'account', key: (x) => x.user, limit: 2 },
        { name: 'global', key: () => 'all', limit: 100 },
      ],
    });
    expect(await quota.consume({ user: 'a' })).toEqual({
      ok: false,
      axis: null,
      status: 503,
      retryAfterMs: 1_000,
    });
  });

  it('keeps counters of two axes, two quotas and tricky keys apart in one store', async () => {
    const c = clock();
    const store = new MemoryQuotaStore({ clock: c });
    const make = (name: string) =>
      new Quota<string>({
        name,
        windowMs: 1_000,
        store,
        axes: [
          { name: 'a', key: (k) => k, limit: 1 },
          { name: 'a1', key: (k) => `:${k}`, limit: 1 },
        ],
      });
    const q1 = make('q');
    const q2 = make('q1');
    // "a" + "1:x" and "a1" + ":x" would collide under naive concatenation.
    expect(await q1.consume('1:x')).toEqual({ ok: true });
    expect(await q1.consume('x')).toEqual({ ok: true });
    expect(await q2.consume('1:x')).toEqual({ ok: true });
    expect(store.size).toBe(6);
  });

  it('emits refuse events with the key, and survives a listener that throws', async () => {
    const { quota } = seedQuota();
    const refusals: unknown[] = [];
    const errors: unknown[] = [];
    quota.on('refuse', (e) => refusals.push(e));
    quota.on('refuse', () => {
      throw new Error('listener bug');
    });
    quota.on('error', (e) => errors.push(e));
    await quota.consume({ user: 'a' }, 3);
    expect(await quota.consume({ user: 'a' })).toMatchObject({ ok: false });
    expect(refusals).toEqual([
      { quota: 'quota', axis: 'account', key: 'a', status: 429, retryAfterMs: 3_600_000 },
    ]);
    expect(errors).toHaveLength(1);
  });

  it('passes a call when the store fails open, and reports the failure', async () => {
    const quota = new Quota<Ctx>({
      windowMs: 1_000,
      axes: [{ name: 'account', key: (x) => x.user, limit: 1 }],
      store: {
        consume: async () => ({
          refused: -1,
          counts: [],
          resetInMs: 1_000,
          failure: { policy: 'open', error: new Error('down') },
        }),
      },
    });
    const seen: string[] = [];
    quota.on('failure', (e) => seen.push(`${e.policy}:${e.error.message}`));
    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    expect(await quota.consume({ user: 'a' })).toEqual({ ok: true });
    expect(seen).toEqual(['open:down', 'open:down']);
  });

  it('uses the default memory store and an axis status of 429 when none is given', async () => {
    const quota = new Quota<Ctx>({
      windowMs: 60_000,
      axes: [{ name: 'account', key: (x) => x.user, limit: 1 }],
    });
    expect(quota.axes).toEqual(['account']);
    expect(quota.name).toBe('quota');
    await quota.consume({ user: 'a' });
    expect(await quota.consume({ user: 'a' })).toMatchObject({ ok: false, status: 429 });
  });
});

describe('Quota options', () => {
  const axis = { name: 'account', key: () => 'k', limit: 1 };
  const bad: [string, unknown, ErrorConstructor, RegExp][] = [
    ['no options', undefined, TypeError, /Quota options must be an object/],
    [
      'an unknown key',
      { windowMs: 1, axes: [axis], windowsMs: 2 },
      TypeError,
      /unknown option "windowsMs"/,
    ],
    ['no windowMs', { axes: [axis] }, TypeError, /"windowMs" must be an integer/],
    [
      'a zero windowMs',
      { windowMs: 0, axes: [axis] },
      RangeError,
      /"windowMs" must be an integer in \[1/,
    ],
    [
      'no axes',
      { windowMs: 1, axes: [] },
      TypeError,
      /"axes" must be a non-empty array, got an array/,
    ],
    [
      'an axis that is not an object',
      { windowMs: 1, axes: [3] },
      TypeError,
      /"axes\[0\]" must be an object/,
    ],
    [
      'an unknown axis key',
      { windowMs: 1, axes: [{ ...axis, alert: 1 }] },
      TypeError,
      /"axes\[0\].alert".*"axes\[0\].alertAt"/,
    ],
    [
      'a duplicate axis name',
      { windowMs: 1, axes: [axis, axis] },
      RangeError,
      /"axes\[1\].name" must be a non-empty string unique/,
    ],
    [
      'an empty axis name',
      { windowMs: 1, axes: [{ ...axis, name: '' }] },
      RangeError,
      /"axes\[0\].name"/,
    ],
    [
      'a missing axis name',
      { windowMs: 1, axes: [{ ...axis, name: undefined }] },
      TypeError,
      /"axes\[0\].name"/,
    ],
    [
      'a key that is not a function',
      { windowMs: 1, axes: [{ ...axis, key: 'k' }] },
      TypeError,
      /"axes\[0\].key" must be a function, got "k"/,
    ],
    [
      'a missing key',
      { windowMs: 1, axes: [{ ...axis, key: undefined }] },
      TypeError,
      /"axes\[0\].key" must be a function/,
    ],
    [
      'a fractional limit',
      { windowMs: 1, axes: [{ ...axis, limit: 1.5 }] },
      RangeError,
      /"axes\[0\].limit"/,
    ],
    [
      'a limit from an unset variable',
      { windowMs: 1, axes: [{ ...axis, limit: Number(undefined) }] },
      TypeError,
      /"axes\[0\].limit" must be an integer in \[0, Infinity\), got NaN/,
    ],
    [
      'a missing limit',
      { windowMs: 1, axes: [{ ...axis, limit: undefined }] },
      TypeError,
      /"axes\[0\].limit"/,
    ],
    [
      'a status out of range',
      { windowMs: 1, axes: [{ ...axis, status: 600 }] },
      RangeError,
      /"axes\[0\].status" must be an integer in \[100, 599\]/,
    ],
    [
      'an alertAt of 0',
      { windowMs: 1, axes: [{ ...axis, alertAt: 0 }] },
      RangeError,
      /"axes\[0\].alertAt" must be a number in \(0, 1\]/,
    ],
    [
      'an alertAt over 1',
      { windowMs: 1, axes: [{ ...axis, alertAt: 66 }] },
      RangeError,
      /"axes\[0\].alertAt"/,
    ],
    [
      'a store without consume',
      { windowMs: 1, axes: [axis], store: {} },
      TypeError,
      /"store" must be a QuotaStore/,
    ],
    [
      'an empty name',
      { windowMs: 1, axes: [axis], name: '' },
      RangeError,
      /"name" must be a non-empty string/,
    ],
    [
      'a bad unavailableStatus',
      { windowMs: 1, axes: [axis], unavailableStatus: 'x' },
      TypeError,
      /"unavailableStatus"/,
    ],
  ];
  for (const [what, options, type, message] of bad)
    it(`refuses ${what}`, () => {
      expect(() => new Quota(options as never)).toThrow(type);
      expect(() => new Quota(options as never)).toThrow(message);
    });

  it('refuses a bad amount and a key function that returns no string, charging nothing', async () => {
    const store = new MemoryQuotaStore();
    const quota = new Quota<string | number>({
      windowMs: 1_000,
      store,
      axes: [{ name: 'a', key: (k) => k as string, limit: 5 }],
    });
    await expect(quota.consume('x', 0)).rejects.toThrow(RangeError);
    await expect(quota.consume('x', 1.5)).rejects.toThrow(
      /option "amount" must be an integer in \[1/,
    );
    await expect(quota.consume('x', '2' as never)).rejects.toThrow(TypeError);
    await expect(quota.consume(7)).rejects.toThrow(
      /key function of axis "a" must return a string, got 7/,
    );
    expect(store.size).toBe(0);
  });

  it('refuses bad MemoryQuotaStore options', () => {
    expect(() => new MemoryQuotaStore({ maxKeys: 0 })).toThrow(
      /option "maxKeys" must be an integer in \[1/,
    );
    expect(() => new MemoryQuotaStore({ maxKey: 1 } as never)).toThrow(/did you mean "maxKeys"/);
    expect(() => new MemoryQuotaStore({ clock: {} as never })).toThrow(
      /option "clock.now" must be a function, got undefined/,
    );
    expect(() => new MemoryQuotaStore({ clock: 5 as never })).toThrow(
      /option "clock" must be an object/,
    );
  });
});
