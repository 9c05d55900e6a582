import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { arrivalsOf, readTrace, type TraceRecord } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'limits-trace-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
/** Writes `text` to a fresh file named `*.ext` and returns its path. */
function file(ext: string, text: string): string {
  const path = join(dir, `t${files++}.${ext}`);
  writeFileSync(path, text);
  return path;
}

async function read(path: string, options?: Parameters<typeof readTrace>[1]) {
  const records: TraceRecord[] = [];
  for await (const r of readTrace(path, options)) records.push(r);
  return records;
}

/** The error reading `path` rejects with (the test fails if it reads through). */
async function failure(path: string, options?: Parameters<typeof readTrace>[1]): Promise<Error> {
  try {
    await read(path, options);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`${path} was read without an error`);
}

describe('JSON lines', () => {
  test('reads start, duration, outcome or status, key, cost and criticality, start relative to the earliest', async () => {
    const path = file(
      'jsonl',
      [
        '{"start": 1000, "duration": 50, "outcome": "success", "key": "a", "cost": 2, "criticality": "SHEDDABLE"}',
        '',
        '{"start": 1010.5, "duration": 0, "status": 503}',
        '{"startMs": 1020, "durationMs": 12.5, "status": 404, "extra": [1, 2]}',
        '{"start": "1030", "duration": "7", "status": 500, "key": 42}',
        '{"Start": 1040, "Duration": 3, "Outcome": "Refused", "status": 200}',
      ].join('\n'),
    );
    expect(await read(path)).toEqual([
      {
        startMs: 0,
        durationMs: 50,
        outcome: 'success',
        key: 'a',
        cost: 2,
        criticality: 'sheddable',
      },
      { startMs: 10.5, durationMs: 0, outcome: 'overload', status: 503 },
      { startMs: 20, durationMs: 12.5, outcome: 'success', status: 404 },
      { startMs: 30, durationMs: 7, outcome: 'failure', status: 500, key: '42' },
      { startMs: 40, durationMs: 3, outcome: 'refused', status: 200 },
    ]);
  });

  test('maps HTTP statuses: 429, 502, 503, 504 and 0 to overload, other 5xx to failure, 1xx to 4xx to success', async () => {
    const statuses = [100, 200, 302, 404, 429, 499, 500, 501, 502, 503, 504, 599, 0];
    const path = file(
      'ndjson',
      statuses.map((status, i) => JSON.stringify({ start: i, duration: 1, status })).join('\n'),
    );
    expect((await read(path)).map((r) => `${r.status} ${r.outcome}`)).toEqual([
      '100 success',
      '200 success',
      '302 success',
      '404 success',
      '429 overload',
      '499 success',
      '500 failure',
      '501 failure',
      '502 overload',
      '503 overload',
      '504 overload',
      '599 failure',
      '0 overload',
    ]);
  });

  test('converts ISO 8601 dates and epoch ms to ms since the earliest record', async () => {
    const iso = file(
      'jsonl',
      [
        '{"start": "2026-03-01T10:00:00.250Z", "duration": 5, "outcome": "success"}',
        '{"start": "2026-03-01T11:00:01+01:00", "duration": 5, "outcome": "success"}',
      ].join('\n'),
    );
    expect((await read(iso)).map((r) => r.startMs)).toEqual([0, 750]);
    const epoch = file(
      'jsonl',
      '{"start": 1767225600000, "duration": 5, "outcome": "success"}\n{"start": 1767225600123.5, "duration": 5, "outcome": "success"}\n',
    );
    expect((await read(epoch)).map((r) => r.startMs)).toEqual([0, 123.5]);
  });

  test('puts records back in start order within the reorder window, the earliest at 0', async () => {
    const path = file(
      'jsonl',
      [500, 100, 300, 200, 900, 600]
        .map((start) => JSON.stringify({ start, duration: 1, outcome: 'success', key: `${start}` }))
        .join('\n'),
    );
    expect((await read(path, { reorderWindowMs: 400 })).map((r) => r.key)).toEqual([
      '100',
      '200',
      '300',
      '500',
      '600',
      '900',
    ]);
    expect((await read(path, { reorderWindowMs: 400 }))[0]?.startMs).toBe(0);
  });

  test('keeps the file order of records with equal starts', async () => {
    const path = file(
      'jsonl',
      ['a', 'b', 'c']
        .map((key) => JSON.stringify({ start: 7, duration: 1, outcome: 'success', key }))
        .join('\n'),
    );
    expect((await read(path)).map((r) => r.key)).toEqual(['a', 'b', 'c']);
  });

  test('refuses a record starting before the reorder window, naming its line and the option', async () => {
    const lines = [1000, 5000, 900]
      .map((start) => JSON.stringify({ start, duration: 1, outcome: 'success' }))
      .join('\n');
    const error = await failure(file('jsonl', lines), { reorderWindowMs: 2000 });
    expect(error).toBeInstanceOf(RangeError);
    expect(error.message).toMatch(
      /t\d+\.jsonl:3: field "start" is 4100 ms before the start of .*t\d+\.jsonl:2, beyond the reorder window of 2000 ms \(option "reorderWindowMs"/,
    );
    // With a window of 0 the file must be sorted.
    const unsorted = file(
      'jsonl',
      '{"start":2,"duration":1,"outcome":"success"}\n{"start":1,"duration":1,"outcome":"success"}\n',
    );
    expect((await failure(unsorted, { reorderWindowMs: 0 })).message).toMatch(
      /:2: field "start" is 1 ms before/,
    );
  });

  test.each([
    [
      'a truncated last line',
      '{"start":0,"duration":5,"outcome":"success"}\n{"start":1,"durat',
      SyntaxError,
      /:2: invalid JSON in the last line, which has no line break at its end \(a truncated file\?\)/,
    ],
    [
      'invalid JSON',
      '{"start":0,"duration":5,"outcome":"success"}\n{start: 1}\n{"start":2,"duration":5,"outcome":"success"}\n',
      SyntaxError,
      /:2: invalid JSON: /,
    ],
    [
      'a record that is not an object',
      '[0, 5, "success"]\n',
      TypeError,
      /:1: a record must be a JSON object, got an array/,
    ],
    [
      'a negative duration',
      '{"start":0,"duration":-5,"outcome":"success"}\n',
      RangeError,
      /:1: field "duration" must be a finite number of ms ≥ 0, got -5/,
    ],
    [
      'a non-finite duration',
      '{"start":0,"duration":1e999,"outcome":"success"}\n',
      RangeError,
      /:1: field "duration" must be a finite number of ms ≥ 0, got Infinity/,
    ],
    [
      'a duration that is not a number',
      '{"start":0,"duration":"soon","outcome":"success"}\n',
      RangeError,
      /:1: field "duration" must be a finite number of ms ≥ 0, got "soon"/,
    ],
    [
      'a missing duration',
      '{"start":0,"outcome":"success"}\n',
      TypeError,
      /:1: field "duration" must be a finite number of ms ≥ 0, got nothing/,
    ],
    [
      'a NaN start',
      '{"start":"NaN","duration":5,"outcome":"success"}\n',
      RangeError,
      /:1: field "start" must be a finite number of ms or an ISO 8601 date, got "NaN"/,
    ],
    [
      'a non-finite start',
      '{"start":"-Infinity","duration":5,"outcome":"success"}\n',
      RangeError,
      /:1: field "start" must be a finite number of ms or an ISO 8601 date, got "-Infinity"/,
    ],
    [
      'an impossible date',
      '{"start":"2026-13-45T00:00:00Z","duration":5,"outcome":"success"}\n',
      RangeError,
      /:1: field "start" must be .*, got "2026-13-45T00:00:00Z"/,
    ],
    [
      'a start of the wrong type',
      '{"start":true,"duration":5,"outcome":"success"}\n',
      TypeError,
      /:1: field "start" must be a finite number of ms or an ISO 8601 date, got true/,
    ],
    [
      'an unknown outcome',
      '{"start":0,"duration":5,"outcome":"timeout"}\n',
      RangeError,
      /:1: field "outcome" must be one of "success", "failure", "overload", "refused", got "timeout"/,
    ],
    [
      'neither outcome nor status',
      '{"start":0,"duration":5}\n',
      TypeError,
      /:1: a record needs field "outcome" or "status", got neither/,
    ],
    [
      'a status out of range',
      '{"start":0,"duration":5,"status":700}\n',
      RangeError,
      /:1: field "status" must be 0 \(no answer\) or an integer in \[100, 599\], got 700/,
    ],
    [
      'an unknown criticality',
      '{"start":0,"duration":5,"status":200,"criticality":"urgent"}\n',
      RangeError,
      /:1: field "criticality" must be one of "critical_plus", "critical", "sheddable_plus", "sheddable", got "urgent"/,
    ],
    [
      'a cost of 0',
      '{"start":0,"duration":5,"status":200,"cost":0}\n',
      RangeError,
      /:1: field "cost" must be a finite number > 0, got 0/,
    ],
    [
      'a key of the wrong type',
      '{"start":0,"duration":5,"status":200,"key":{"id":1}}\n',
      TypeError,
      /:1: field "key" must be a string, got an object/,
    ],
    ['an empty file', '', SyntaxError, /t\d+\.jsonl: an empty trace: no records/],
    ['a file of blank lines', '\n\n  \n', SyntaxError, /an empty trace: no records/],
  ])('refuses %s with file:line and the field', async (_, text, Kind, message) => {
    const error = await failure(file('jsonl', text));
    expect(error).toBeInstanceOf(Kind);
    expect(error.message).toMatch(/^limits: /);
    expect(error.message).toMatch(message);
  });

  test('refuses a line over 1 MiB (a file without line breaks is not read whole)', async () => {
    const error = await failure(file('jsonl', `{"start":0,"key":"${'x'.repeat(1 << 21)}"`));
    expect(error).toBeInstanceOf(SyntaxError);
    expect(error.message).toMatch(/:1: a line longer than 1048576 characters/);
  });
});

describe('CSV', () => {
  test('reads the columns a header names, in any order and case, quoted or not; other columns are ignored', async () => {
    const path = file(
      'csv',
      [
        'Outcome,"key",route,Duration,start,cost,criticality',
        'success,"tenant, inc",/a,50,2026-03-01T10:00:00Z,,',
        'overload,"say ""hi""",/b,5.5,2026-03-01T10:00:00.100Z,3,critical_plus',
        '',
        '"refused","multi',
        'line",/c,"0",2026-03-01T10:00:00.200Z,,',
      ].join('\r\n'),
    );
    expect(await read(path)).toEqual([
      { startMs: 0, durationMs: 50, outcome: 'success', key: 'tenant, inc' },
      {
        startMs: 100,
        durationMs: 5.5,
        outcome: 'overload',
        key: 'say "hi"',
        cost: 3,
        criticality: 'critical_plus',
      },
      { startMs: 200, durationMs: 0, outcome: 'refused', key: 'multi\nline' },
    ]);
  });

  test('reads status instead of outcome, and startMs/durationMs', async () => {
    const path = file('csv', '\ufeffstartMs,durationMs,status\n10,1,200\n20,2,429\n30,3,500\n');
    expect((await read(path)).map((r) => [r.startMs, r.outcome])).toEqual([
      [0, 'success'],
      [10, 'overload'],
      [20, 'failure'],
    ]);
  });

  test.each([
    [
      'a missing header',
      '0,50,success\n10,50,success\n',
      /:1: missing header row: the first row must name the columns start, duration, outcome or status .*, got "0,50,success"/,
    ],
    [
      'a header without duration',
      'start,outcome\n0,success\n',
      /:1: the header has no column duration/,
    ],
    [
      'a header without outcome or status',
      'start,duration,key\n0,1,a\n',
      /:1: the header has no column outcome or status/,
    ],
    [
      'a header naming a column twice',
      'start,duration,status,Status\n',
      /:1: the header names column "status" twice/,
    ],
    [
      'a wrong column count',
      'start,duration,status\n0,5,200\n1,5\n2,5,200\n',
      /:3: 2 field\(s\), the header \(line 1\) has 3$/,
    ],
    [
      'a truncated last line',
      'start,duration,status\n0,5,200\n1,5',
      /:3: 2 field\(s\), the header \(line 1\) has 3; the last line has no line break at its end \(a truncated file\?\)/,
    ],
    [
      'a quoted field left open',
      'start,duration,status,key\n0,5,200,"abc\n1,5,200,def\n',
      /:2: a quoted field is still open at the end of the file/,
    ],
    [
      'text after a closing quote',
      'start,duration,status,key\n0,5,200,"ab"c\n',
      /:2: field 4 has "c" after its closing quote/,
    ],
    ['an empty file', '', /an empty trace: no records/],
    ['a header and no records', 'start,duration,status\n', /an empty trace: no records/],
  ])('refuses %s with a SyntaxError naming file:line', async (_, text, message) => {
    const error = await failure(file('csv', text));
    expect(error).toBeInstanceOf(SyntaxError);
    expect(error.message).toMatch(message);
  });

  test.each([
    [
      'a negative duration',
      '0,-1,success',
      RangeError,
      /:2: field "duration" must be a finite number of ms ≥ 0, got "-1"/,
    ],
    [
      'a NaN start',
      'NaN,1,success',
      RangeError,
      /:2: field "start" must be a finite number of ms or an ISO 8601 date, got "NaN"/,
    ],
    ['an unknown outcome', '0,1,ok', RangeError, /:2: field "outcome" must be one of .*, got "ok"/],
    ['an empty start', ',1,success', TypeError, /:2: field "start" must be .*, got nothing/],
  ])('refuses a row with %s, naming file:line and the field', async (_, row, Kind, message) => {
    const error = await failure(file('csv', `start,duration,outcome\n${row}\n`));
    expect(error).toBeInstanceOf(Kind);
    expect(error.message).toMatch(message);
  });

  test('refuses a quoted field running past 1 MiB (a stray quote)', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => `${i},1,success,${'y'.repeat(60)}`);
    const error = await failure(
      file('csv', `start,duration,outcome,key\n0,1,success,"${rows.join('\n')}`),
    );
    expect(error).toBeInstanceOf(SyntaxError);
    expect(error.message).toMatch(/:2: a row runs past 1048576 characters in a quoted field/);
  });
});

describe('HAR', () => {
  const har = (entries: unknown[]) => JSON.stringify({ log: { version: '1.2', entries } }, null, 2);
  const entry = (startedDateTime: string, time: number, status: number) => ({
    startedDateTime,
    time,
    request: { method: 'GET', url: 'http://127.0.0.1/x' },
    response: { status },
  });

  test('reads log.entries: startedDateTime, time, response.status, sorted by start', async () => {
    const path = file(
      'har',
      har([
        entry('2026-03-01T10:00:01.500Z', 30, 200),
        entry('2026-03-01T10:00:00.000Z', 12.25, 503),
        entry('2026-03-01T10:00:01.000Z', 5, 0),
        entry('2026-03-01T10:00:02.000Z', 8, 500),
      ]),
    );
    expect(await read(path)).toEqual([
      { startMs: 0, durationMs: 12.25, outcome: 'overload', status: 503 },
      { startMs: 1000, durationMs: 5, outcome: 'overload', status: 0 },
      { startMs: 1500, durationMs: 30, outcome: 'success', status: 200 },
      { startMs: 2000, durationMs: 8, outcome: 'failure', status: 500 },
    ]);
  });

  test.each([
    [
      'invalid JSON (a truncated file)',
      '{\n  "log": {\n    "entries": [\n      {"startedDateTime": "2026-03-01T10:00:00Z", "time": 5',
      SyntaxError,
      /t\d+\.har:4: invalid JSON \(a truncated file\?\): /,
    ],
    [
      'a document without log.entries',
      '{"entries": []}',
      TypeError,
      /: field "log.entries" must be an array \(is this a HAR file\?\), got nothing/,
    ],
    ['no entries', har([]), SyntaxError, /: an empty trace: no records/],
    [
      'an entry that is not an object',
      har([7]),
      TypeError,
      /log\.entries\[0\]: an entry must be an object, got 7/,
    ],
    [
      'a negative time',
      har([entry('2026-03-01T10:00:00Z', 5, 200), entry('2026-03-01T10:00:01Z', -1, 200)]),
      RangeError,
      /log\.entries\[1\]: field "time" must be a finite number of ms ≥ 0, got -1/,
    ],
    [
      'a bad startedDateTime',
      har([entry('yesterday', 5, 200)]),
      RangeError,
      /log\.entries\[0\]: field "startedDateTime" must be a finite number of ms or an ISO 8601 date, got "yesterday"/,
    ],
    [
      'an entry without a response',
      har([{ startedDateTime: '2026-03-01T10:00:00Z', time: 5 }]),
      TypeError,
      /log\.entries\[0\]: a record needs field "outcome" or "response.status", got neither/,
    ],
  ])('refuses %s, naming the entry and the field', async (_, text, Kind, message) => {
    const error = await failure(file('har', text));
    expect(error).toBeInstanceOf(Kind);
    expect(error.message).toMatch(message);
  });

  test('names the line of invalid JSON in the middle of a HAR file', async () => {
    const error = await failure(file('har', '{\n  "log": {\n    "entries": [,]\n  }\n}\n'));
    expect(error.message).toMatch(/t\d+\.har:3: invalid JSON: Unexpected token ','/);
    const after = await failure(file('har', `${har([])}\n\n}`));
    expect(after.message).toMatch(/t\d+\.har:8: invalid JSON: Unexpected non-whitespace/);
  });

  test('refuses a HAR file over 256 MiB before reading it, naming the limit', async () => {
    const path = file('har', '');
    truncateSync(path, 300 * 1024 * 1024); // sparse: no 300 MiB written
    const error = await failure(path);
    expect(error).toBeInstanceOf(RangeError);
    expect(error.message).toMatch(
      /t\d+\.har is 300\.0 MiB; a HAR file is read whole and must be at most 256\.0 MiB \(convert it to JSON lines to stream it\)/,
    );
  });
});

describe('readTrace', () => {
  test('takes the format from the extension, or from option "format"', async () => {
    const text = 'start,duration,status\n0,1,200\n';
    await expect(read(file('txt', text), { format: 'csv' })).resolves.toHaveLength(1);
    expect(() => readTrace(join(dir, 'calls.txt'))).toThrow(
      /limits: readTrace cannot tell the format of ".*calls\.txt" from its extension \(\.jsonl, \.ndjson, \.csv, \.har\); give option "format"/,
    );
  });

  test('checks its options when called', () => {
    expect(() => readTrace('a.jsonl', { format: 'xml' as 'csv' })).toThrow(
      /option "format" must be one of "jsonl", "csv", "har", got "xml"/,
    );
    expect(() => readTrace('a.jsonl', { reorderWindowMs: -1 })).toThrow(
      /option "reorderWindowMs" must be a number in \[0, 86400000\], got -1/,
    );
    expect(() => readTrace('a.jsonl', { window: 5 } as object)).toThrow(
      /unknown option "window" for readTrace/,
    );
    expect(() => readTrace('' as string)).toThrow(/readTrace's path must be a file name, got ""/);
    expect(() => readTrace(undefined as unknown as string)).toThrow(TypeError);
  });

  test('a missing file rejects on iteration with the system error', async () => {
    await expect(read(join(dir, 'missing.jsonl'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(read(join(dir, 'missing.har'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test('reads the file again on each iteration', async () => {
    const trace = readTrace(file('jsonl', '{"start":0,"duration":1,"status":200}\n'));
    for (let i = 0; i < 2; i++) {
      const seen: TraceRecord[] = [];
      for await (const r of trace) seen.push(r);
      expect(seen).toHaveLength(1);
    }
  });
});

test('arrivalsOf gives the start, key, cost and criticality a record has', () => {
  expect(arrivalsOf({ startMs: 120, durationMs: 48, outcome: 'success' })).toEqual({ atMs: 120 });
  expect(
    arrivalsOf({
      startMs: 5,
      durationMs: 1,
      outcome: 'refused',
      status: 503,
      key: 'k',
      cost: 2,
      criticality: 'sheddable',
    }),
  ).toEqual({ atMs: 5, key: 'k', cost: 2, criticality: 'sheddable' });
});
