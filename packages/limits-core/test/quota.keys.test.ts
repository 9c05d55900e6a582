/**
 * MemoryQuotaStore keeps a key longer than MAX_QUOTA_KEY_LENGTH as a fixed-length digest, so a
 * counter's memory is bounded whatever its key (header-sized account ids included).
 */
import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { MAX_QUOTA_KEY_LENGTH, MemoryQuotaStore, Quota } from '../src/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** A quota of 1 per key and window on one store. */
function perKey(store = new MemoryQuotaStore()) {
  return new Quota<string>({
    windowMs: 3_600_000,
    store,
    axes: [{ name: 'account', key: (id) => id, limit: 1 }],
  });
}

describe('MemoryQuotaStore with long keys', () => {
  it('bounds the key length at 256 characters', () => {
    expect(MAX_QUOTA_KEY_LENGTH).toBe(256);
  });

  it('retains far less than the keys themselves for 1,000 counters of 16 KB keys', async () => {
    const store = new MemoryQuotaStore();
    const quota = perKey(store);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 1_000; i++) {
      expect(await quota.consume(`${i}:`.padEnd(16_384, 'x'))).toEqual({ ok: true });
    }
    gc();
    const retained = process.memoryUsage().heapUsed - before;
    expect(store.size).toBe(1_000);
    // The keys alone are 16 MB; a counter with a digest for its key is a few hundred bytes.
    expect(retained).toBeLessThan(2 * 1024 * 1024);
  });

  it('keeps two long keys that differ only in their last character apart', async () => {
    const quota = perKey();
    const a = `${'x'.repeat(256)}a`;
    const b = `${'x'.repeat(256)}b`;
    const c = `${'x'.repeat(16_383)}\uD800`; // a lone surrogate: a different key too
    const d = `${'x'.repeat(16_383)}\uDC00`;
    for (const key of [a, b, c, d]) expect(await quota.consume(key)).toEqual({ ok: true });
    for (const key of [a, b, c, d])
      expect(await quota.consume(key)).toMatchObject({ ok: false, axis: 'account' });
  });

  it('keeps a long key apart from a short key that spells its digest, and from its own 256-character prefix', async () => {
    const quota = perKey();
    const long = 'y'.repeat(257);
    const digest = createHash('sha256').update(long, 'utf16le').digest('hex');
    expect(await quota.consume(long)).toEqual({ ok: true });
    expect(await quota.consume(digest)).toEqual({ ok: true });
    expect(await quota.consume(long.slice(0, 256))).toEqual({ ok: true });
    expect(await quota.consume(long)).toMatchObject({ ok: false });
    expect(await quota.consume(digest)).toMatchObject({ ok: false });
  });
});
