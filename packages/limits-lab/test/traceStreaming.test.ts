import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { afterAll, describe, expect, test } from 'vitest';
import { readTrace } from '../src/index.js';
import { readLines } from '../src/trace/lines.js';
import { traceFromChunks } from '../src/trace/readTrace.js';

const LINES = 200_000;

const dir = mkdtempSync(join(tmpdir(), 'limits-trace-big-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A generated input of `LINES` records one ms apart, one line per chunk, that counts the lines it
 * has handed out: a reader that takes it whole before yielding shows as a lag of `LINES`.
 */
function generated(format: 'jsonl' | 'csv') {
  const state = { produced: 0 };
  async function* chunks() {
    if (format === 'csv') yield 'start,duration,status,key\n';
    for (let i = 0; i < LINES; i++) {
      state.produced++;
      yield format === 'csv'
        ? `${i},${i % 97},${i % 50 === 0 ? 503 : 200},"k${i % 7}"\n`
        : `{"start":${i},"duration":${i % 97},"status":${i % 50 === 0 ? 503 : 200},"key":"k${i % 7}"}\n`;
    }
  }
  return { state, chunks };
}

describe('a large trace is read incrementally, in the memory of one reorder window', () => {
  test.each(['jsonl', 'csv'] as const)(
    '%s: 200,000 lines, each record handed on once a record a window later is read',
    async (format) => {
      const { state, chunks } = generated(format);
      const windowMs = 1000;
      let received = 0;
      let maxLag = 0;
      let previous = -1;
      let sorted = true;
      for await (const record of traceFromChunks(chunks(), `gen.${format}`, format, windowMs)) {
        received++;
        // Lines read but not yet handed on: the window's records (one per ms) and the line that
        // closed it; never the whole input.
        maxLag = Math.max(maxLag, state.produced - received);
        sorted &&= record.startMs >= previous;
        previous = record.startMs;
      }
      expect(received).toBe(LINES);
      expect(sorted).toBe(true);
      expect(maxLag).toBeLessThanOrEqual(windowMs + 1);
      expect(maxLag).toBeGreaterThanOrEqual(windowMs); // records are held for the window, no longer
    },
  );

  test('with a window of 0 a sorted input is handed on line by line', async () => {
    const { state, chunks } = generated('jsonl');
    let received = 0;
    let maxLag = 0;
    for await (const _ of traceFromChunks(chunks(), 'gen.jsonl', 'jsonl', 0)) {
      received++;
      maxLag = Math.max(maxLag, state.produced - received);
    }
    expect(received).toBe(LINES);
    expect(maxLag).toBe(0);
  });

  test('stopping early stops reading the input', async () => {
    const { state, chunks } = generated('jsonl');
    let received = 0;
    for await (const _ of traceFromChunks(chunks(), 'gen.jsonl', 'jsonl', 0)) {
      if (++received === 10) break;
    }
    expect(state.produced).toBe(10);
  });

  test('a 200,000-line file is read through readTrace in start order, across chunk boundaries', async () => {
    const path = join(dir, 'big.jsonl');
    const out = createWriteStream(path);
    // Written out of order by up to 40 ms (as a log written at each call's end), keys with
    // multi-byte characters so that chunks split them.
    for (let i = 0; i < LINES; i += 2) {
      out.write(`{"start":${i + 1},"duration":3,"status":200,"key":"é${i % 13}"}\n`);
      out.write(`{"start":${Math.max(0, i - 40)},"duration":3,"status":200,"key":"ü€${i % 11}"}\n`);
    }
    out.end();
    await finished(out);
    let count = 0;
    let previous = -1;
    let keysOk = true;
    for await (const record of readTrace(path, { reorderWindowMs: 50 })) {
      count++;
      if (record.startMs < previous) throw new Error(`record ${count} is out of order`);
      previous = record.startMs;
      keysOk &&= /^(é\d+|ü€\d+)$/.test(record.key ?? '');
    }
    expect(count).toBe(LINES);
    expect(keysOk).toBe(true);
  });
});

test('lines: a multi-byte character split between chunks, CRLF, a BOM and an unterminated last line', async () => {
  const bytes = Buffer.from('\ufeffa€b\r\n\nc', 'utf8');
  async function* oneByteChunks() {
    for (const byte of bytes) yield Uint8Array.of(byte);
  }
  const lines = [];
  for await (const line of readLines(oneByteChunks(), 'x')) lines.push(line);
  expect(lines).toEqual([
    { text: 'a€b', line: 1, terminated: true },
    { text: '', line: 2, terminated: true },
    { text: 'c', line: 3, terminated: false },
  ]);
});
