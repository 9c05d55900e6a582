import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { checkKeys, checkNumber, checkOneOf, formatValue } from 'limits-core/internal';
import { csvEntries } from './csv.js';
import { checkHarSize, harEntries } from './har.js';
import { jsonLinesEntries } from './jsonLines.js';
import { readLines } from './lines.js';
import type { RawEntry } from './RawEntry.js';
import { ReorderWindow } from './ReorderWindow.js';
import { readRecordFields } from './recordFields.js';
import type { TraceRecord } from './TraceRecord.js';

/** The formats {@link readTrace} reads. */
export type TraceFormat = 'jsonl' | 'csv' | 'har';

const FORMATS: readonly TraceFormat[] = ['jsonl', 'csv', 'har'];

/** Options of {@link readTrace}. */
export interface ReadTraceOptions {
  /**
   * The file's format. Default: from its extension (`.jsonl` or `.ndjson` → `jsonl`, `.csv` → `csv`,
   * `.har` → `har`).
   */
  format?: TraceFormat;
  /**
   * How far back, in ms, a JSON-lines or CSV record may start before the latest start read (a log
   * written as calls end is sorted by end, not start): records are held that long and handed on in
   * start order; one starting earlier still is refused with its line. The records held are those
   * of one window (arrival rate × window). HAR entries are sorted whole. Default 60,000; range
   * [0, 86,400,000] (0: the file must be sorted by start).
   */
  reorderWindowMs?: number;
}

const OPTION_NAMES = ['format', 'reorderWindowMs'];

/**
 * Reads a recorded trace from a file, streaming: a JSON-lines or CSV file of any size is read line by
 * line in the memory of one reorder window; a HAR file (one JSON document) is read whole, up to
 * 256 MiB. Records come in start order, `startMs` relative to the earliest record.
 *
 * Each record has a start (`start` or `startMs`: ms, epoch ms, or an ISO 8601 date), a `duration`
 * (or `durationMs`, ms ≥ 0), an `outcome` (`success`, `failure`, `overload`, `refused`) or an HTTP
 * `status` (429, 502, 503, 504 and 0 → `overload`; other 5xx → `failure`; 1xx–4xx → `success`), and
 * optionally a `key`, a `cost` and a `criticality`. HAR entries give `startedDateTime`, `time` and
 * `response.status`.
 *
 * The options are checked when it is called; the file is opened when the iteration starts (each
 * iteration reads it again), and closed when it ends, early or not.
 *
 * @param path - the file.
 * @param options - see {@link ReadTraceOptions}.
 * @throws TypeError/RangeError at the call for a bad option, or a path whose format cannot be told.
 * The iteration rejects with a SyntaxError/TypeError/RangeError naming `file:line` (a HAR entry's
 * path) and the field for hostile input: an empty file, invalid JSON, a truncated last line, a
 * missing CSV header, a wrong column count, a missing, non-finite or negative value, an unknown
 * outcome, a record out of order beyond the window; a RangeError for a HAR file over 256 MiB.
 * @example
 * ```ts
 * for await (const record of readTrace('calls.jsonl')) console.log(record.startMs, record.outcome);
 * ```
 */
export function readTrace(path: string, options?: ReadTraceOptions): AsyncIterable<TraceRecord> {
  checkKeys('readTrace', options, OPTION_NAMES);
  if (typeof path !== 'string' || path === '') {
    throw new TypeError(`limits: readTrace's path must be a file name, got ${formatValue(path)}`);
  }
  const format =
    options?.format === undefined
      ? formatOf(path)
      : checkOneOf('format', options.format, 'jsonl', FORMATS);
  const windowMs = checkNumber('reorderWindowMs', options?.reorderWindowMs, 60_000, {
    min: 0,
    max: 86_400_000,
  });
  return {
    [Symbol.asyncIterator]: () =>
      format === 'har'
        ? fromHar(path)
        : traceFromChunks(createReadStream(path), path, format, windowMs),
  };
}

function formatOf(path: string): TraceFormat {
  const ext = extname(path).toLowerCase();
  if (ext === '.jsonl' || ext === '.ndjson') return 'jsonl';
  if (ext === '.csv') return 'csv';
  if (ext === '.har') return 'har';
  throw new TypeError(
    `limits: readTrace cannot tell the format of ${formatValue(path)} from its extension (.jsonl, .ndjson, .csv, .har); give option "format" (${FORMATS.map((f) => `"${f}"`).join(', ')})`,
  );
}

/**
 * The records of a JSON-lines or CSV input given as chunks, in start order (the core of
 * {@link readTrace}, apart from the file: the next chunk is taken only when the records of the last
 * ones are out of the reorder window).
 * @param file - the input's name in error messages.
 */
export async function* traceFromChunks(
  chunks: AsyncIterable<string | Uint8Array>,
  file: string,
  format: 'jsonl' | 'csv',
  windowMs: number,
): AsyncGenerator<TraceRecord> {
  const lines = readLines(chunks, file);
  const entries = format === 'csv' ? csvEntries(lines, file) : jsonLinesEntries(lines, file);
  yield* inStartOrder(entries, file, windowMs);
}

async function* fromHar(path: string): AsyncGenerator<TraceRecord> {
  checkHarSize(path, (await stat(path)).size);
  const entries = harEntries(await readFile(path, 'utf8'), path);
  yield* inStartOrder(entries, path, Number.POSITIVE_INFINITY);
}

async function* inStartOrder(
  entries: AsyncIterable<RawEntry> | Iterable<RawEntry>,
  file: string,
  windowMs: number,
): AsyncGenerator<TraceRecord> {
  const window = new ReorderWindow(windowMs);
  let originMs = Number.NaN;
  const relative = (record: TraceRecord) => {
    if (Number.isNaN(originMs)) originMs = record.startMs;
    record.startMs -= originMs;
    return record;
  };
  for await (const entry of entries) {
    const record = readRecordFields(entry.fields, entry.where, entry.names);
    for (const ready of window.push(record, entry.where)) yield relative(ready);
  }
  const rest = window.drain();
  if (rest.length === 0 && Number.isNaN(originMs)) {
    throw new SyntaxError(`limits: ${file}: an empty trace: no records`);
  }
  for (const ready of rest) yield relative(ready);
}
