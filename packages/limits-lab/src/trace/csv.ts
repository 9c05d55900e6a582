/**
 * The CSV format (RFC 4180): a header row naming the columns, in any order and any case; fields
 * separated by commas, optionally in double quotes (a quote inside written twice; a quoted field may
 * hold commas and line breaks); blank lines skipped; columns the trace does not use are ignored.
 */
import type { Line } from './lines.js';
import type { RawEntry } from './RawEntry.js';

/** The columns a trace reads (lower case). */
const COLUMNS = [
  'start',
  'startms',
  'duration',
  'durationms',
  'outcome',
  'status',
  'key',
  'cost',
  'criticality',
];

/** The longest row accepted, line breaks in quoted fields included: a stray quote is refused early. */
const MAX_ROW_CHARS = 1 << 20;

function quotes(text: string): number {
  let n = 0;
  for (let i = text.indexOf('"'); i !== -1; i = text.indexOf('"', i + 1)) n++;
  return n;
}

/** The fields of one row (its lines joined). @throws SyntaxError on a character after a closing quote. */
function splitRow(text: string, where: string): string[] {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    if (text[i] === '"') {
      let value = '';
      let from = i + 1;
      for (;;) {
        const q = text.indexOf('"', from);
        // `quotes` made the count even, so every opening quote has its closing one.
        value += text.slice(from, q);
        if (text[q + 1] === '"') {
          value += '"';
          from = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      fields.push(value);
      if (i < text.length && text[i] !== ',') {
        throw new SyntaxError(
          `limits: ${where}: field ${fields.length} has ${JSON.stringify(text[i])} after its closing quote (a quote inside a quoted field is written "")`,
        );
      }
    } else {
      const comma = text.indexOf(',', i);
      fields.push(text.slice(i, comma === -1 ? text.length : comma));
      i = comma === -1 ? text.length : comma;
    }
    if (i >= text.length) return fields;
    i++; // the comma
  }
}

/**
 * The records of a CSV file, one per row after the header, as they are read.
 * @throws SyntaxError naming `file:line` for a missing or incomplete header, a row whose field count
 * differs from the header's (saying so when it is a last line without a line break: a truncated
 * file), a quoted field left open at the end of the file or running past 1 MiB.
 */
export async function* csvEntries(
  lines: AsyncIterable<Line>,
  file: string,
): AsyncGenerator<RawEntry> {
  const it = lines[Symbol.asyncIterator]();
  let header: string[] | undefined;
  let headerLine = 0;
  for (;;) {
    const next = await it.next();
    if (next.done) return;
    const { line } = next.value;
    let { text, terminated } = next.value;
    if (header !== undefined && text === '') continue;
    // A quoted field with line breaks: take lines until its quotes balance.
    while (quotes(text) % 2 === 1) {
      const more = await it.next();
      if (more.done) {
        throw new SyntaxError(
          `limits: ${file}:${line}: a quoted field is still open at the end of the file (a truncated file, or a stray ")`,
        );
      }
      text += `\n${more.value.text}`;
      terminated = more.value.terminated;
      if (text.length > MAX_ROW_CHARS) {
        throw new SyntaxError(
          `limits: ${file}:${line}: a row runs past ${MAX_ROW_CHARS} characters in a quoted field (a stray "?)`,
        );
      }
    }
    const where = `${file}:${line}`;
    const fields = splitRow(text, where);
    if (header === undefined) {
      if (text.trim() === '') continue;
      header = readHeader(fields, where);
      headerLine = line;
      continue;
    }
    if (fields.length !== header.length) {
      throw new SyntaxError(
        `limits: ${where}: ${fields.length} field(s), the header (line ${headerLine}) has ${header.length}${terminated ? '' : '; the last line has no line break at its end (a truncated file?)'}`,
      );
    }
    const raw: Record<string, unknown> = {};
    for (let c = 0; c < header.length; c++) {
      const name = header[c] as string;
      if (COLUMNS.includes(name)) raw[name] = fields[c];
    }
    yield { fields: raw, where };
  }
}

/** The header's column names, lower case, checked. @throws SyntaxError naming what is missing. */
function readHeader(fields: string[], where: string): string[] {
  const names = fields.map((f) => f.trim().toLowerCase());
  const wanted = 'start, duration, outcome or status (and optionally key, cost, criticality)';
  if (!names.some((n) => COLUMNS.includes(n))) {
    throw new SyntaxError(
      `limits: ${where}: missing header row: the first row must name the columns ${wanted}, got ${JSON.stringify(fields.join(','))}`,
    );
  }
  for (const name of COLUMNS) {
    if (names.indexOf(name) !== names.lastIndexOf(name)) {
      throw new SyntaxError(`limits: ${where}: the header names column "${name}" twice`);
    }
  }
  const has = (...any: string[]) => any.some((n) => names.includes(n));
  const missing = !has('start', 'startms')
    ? 'start'
    : !has('duration', 'durationms')
      ? 'duration'
      : !has('outcome', 'status')
        ? 'outcome or status'
        : undefined;
  if (missing !== undefined) {
    throw new SyntaxError(
      `limits: ${where}: the header has no column ${missing}; it must name the columns ${wanted}`,
    );
  }
  return names;
}
