/** SHA-256's round constants (FIPS 180-4, 4.2.2). */
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-256's initial hash value (FIPS 180-4, 5.3.3). */
const H0 = [
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

const rotr = (x: number, n: number): number => (x >>> n) | (x << (32 - n));

/**
 * @internal SHA-256 (FIPS 180-4) of a string's UTF-16 code units, each as two bytes little-endian
 * (lone surrogates included, so two different strings never hash the same input), as 64 lowercase
 * hex digits: `createHash('sha256').update(text, 'utf16le')` without `node:crypto`, which
 * limits-core does not import. A collision-resistant hash, so no caller can make two keys share a
 * digest; it costs about 0.4 ms for a 16,384-character string on Node 20 (2 shared vCPUs;
 * `node:crypto`: 0.04 ms), paid only by keys longer than `MAX_QUOTA_KEY_LENGTH`.
 */
export function sha256Utf16(text: string): string {
  const n = text.length * 2;
  // The message as big-endian words: its bytes, 0x80, zeros, its length in bits (64-bit).
  const m = new Uint32Array(Math.ceil((n + 9) / 64) * 16);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const pair = ((c & 0xff) << 8) | (c >>> 8);
    m[i >>> 1] = (m[i >>> 1] as number) | (i & 1 ? pair : pair << 16);
  }
  m[n >>> 2] = (m[n >>> 2] as number) | (0x80 << (24 - 8 * (n & 3)));
  m[m.length - 2] = Math.floor(n / 0x20000000); // n × 8 ≥ 2^32 from strings of 2^28 units
  m[m.length - 1] = n * 8;
  const h = new Uint32Array(H0);
  const w = new Uint32Array(64);
  for (let at = 0; at < m.length; at += 16) {
    for (let j = 0; j < 16; j++) w[j] = m[at + j] as number;
    for (let j = 16; j < 64; j++) {
      const a = w[j - 15] as number;
      const b = w[j - 2] as number;
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      w[j] = (w[j - 16] as number) + s0 + (w[j - 7] as number) + s1;
    }
    let a = h[0] as number;
    let b = h[1] as number;
    let c = h[2] as number;
    let d = h[3] as number;
    let e = h[4] as number;
    let f = h[5] as number;
    let g = h[6] as number;
    let k = h[7] as number;
    for (let j = 0; j < 64; j++) {
      const t1 =
        (k +
          (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) +
          ((e & f) ^ (~e & g)) +
          (K[j] as number) +
          (w[j] as number)) |
        0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      k = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0] = (h[0] as number) + a;
    h[1] = (h[1] as number) + b;
    h[2] = (h[2] as number) + c;
    h[3] = (h[3] as number) + d;
    h[4] = (h[4] as number) + e;
    h[5] = (h[5] as number) + f;
    h[6] = (h[6] as number) + g;
    h[7] = (h[7] as number) + k;
  }
  let hex = '';
  for (const word of h) hex += word.toString(16).padStart(8, '0');
  return hex;
}
