import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Utf16 } from '../src/internal/sha256.js';

/** node:crypto's SHA-256 of the same input: the string's UTF-16 code units, little-endian. */
const reference = (text: string) => createHash('sha256').update(text, 'utf16le').digest('hex');

describe('sha256Utf16 (the digest of long quota keys, without node:crypto)', () => {
  it('hashes the empty string as SHA-256 of no bytes', () => {
    expect(sha256Utf16('')).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });

  it('agrees with node:crypto at every padding boundary, on any code unit (lone surrogates included)', () => {
    // Around the padding's boundaries: 56 and 64 bytes (28 and 32 units), 120 and 128 (60 and 64).
    const lengths = [1, 2, 3, 27, 28, 29, 31, 32, 33, 59, 60, 63, 64, 65, 100, 257, 1_000, 16_384];
    for (const n of lengths) {
      let text = '';
      for (let i = 0; i < n; i++) text += String.fromCharCode((i * 7_919 + n) % 65_536);
      expect(sha256Utf16(text)).toBe(reference(text));
    }
    expect(sha256Utf16('\uD800')).toBe(reference('\uD800'));
    expect(sha256Utf16('\uD800')).not.toBe(sha256Utf16('\uDC00'));
  });
});
