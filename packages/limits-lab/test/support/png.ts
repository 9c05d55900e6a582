import { inflateSync } from 'node:zlib';

/** A decoded image: its size and its pixels, 4 bytes (RGBA) each, row by row. */
export interface DecodedPng {
  width: number;
  height: number;
  rgba: Uint8Array;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * Decodes a PNG of 8-bit RGBA pixels without interlacing (what resvg writes), checking its
 * signature and header: enough for a test to read back what a renderer wrote, with no decoder
 * dependency.
 */
export function decodePng(png: Uint8Array): DecodedPng {
  const bytes = Buffer.from(png);
  if (!bytes.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG: bad signature');
  let width = 0;
  let height = 0;
  const data: Buffer[] = [];
  for (let at = 8; at < bytes.length; ) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.toString('latin1', at + 4, at + 8);
    const body = bytes.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colour, , , interlace] = body.subarray(8, 13);
      if (depth !== 8 || colour !== 6 || interlace !== 0) {
        throw new Error(
          `unsupported PNG: depth ${depth}, colour type ${colour}, interlace ${interlace}`,
        );
      }
    } else if (type === 'IDAT') {
      data.push(body);
    } else if (type === 'IEND') {
      break;
    }
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * 4;
  if (raw.length !== height * (stride + 1)) throw new Error('PNG data does not match its size');
  const rgba = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= 4 ? (rgba[y * stride + i - 4] as number) : 0;
      const b = y > 0 ? (rgba[(y - 1) * stride + i] as number) : 0;
      const c = i >= 4 && y > 0 ? (rgba[(y - 1) * stride + i - 4] as number) : 0;
      const x = line[i] as number;
      let v: number;
      if (filter === 0) v = x;
      else if (filter === 1) v = x + a;
      else if (filter === 2) v = x + b;
      else if (filter === 3) v = x + ((a + b) >> 1);
      else if (filter === 4) v = x + paeth(a, b, c);
      else throw new Error(`bad PNG filter ${filter} on row ${y}`);
      rgba[y * stride + i] = v & 0xff;
    }
  }
  return { width, height, rgba };
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** How many pixels are within `tolerance` of `hex` (`#rrggbb`) on each channel, fully opaque. */
export function countColour(image: DecodedPng, hex: string, tolerance = 6): number {
  const r = Number.parseInt(hex.slice(1, 3), 16);
  const g = Number.parseInt(hex.slice(3, 5), 16);
  const b = Number.parseInt(hex.slice(5, 7), 16);
  const px = image.rgba;
  let count = 0;
  for (let i = 0; i < px.length; i += 4) {
    if (
      Math.abs((px[i] as number) - r) <= tolerance &&
      Math.abs((px[i + 1] as number) - g) <= tolerance &&
      Math.abs((px[i + 2] as number) - b) <= tolerance &&
      px[i + 3] === 255
    ) {
      count++;
    }
  }
  return count;
}
